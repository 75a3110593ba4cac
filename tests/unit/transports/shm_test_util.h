// Helpers shared by the shared-memory transport tests: unique communicator tags (tests run in
// parallel processes), PeerInfo / ConnectRequest builders, and a look into /dev/shm.
#ifndef WEFT_TESTS_UNIT_TRANSPORTS_SHM_TEST_UTIL_H_
#define WEFT_TESTS_UNIT_TRANSPORTS_SHM_TEST_UTIL_H_

#include <dirent.h>
#include <unistd.h>

#include <atomic>
#include <cstring>
#include <string>
#include <vector>

#include "base/os.h"
#include "transports/transport.h"

namespace weft {
namespace shmtest {

inline std::string uniqueTag() {
  static std::atomic<int> counter{0};
  return "test" + std::to_string(getpid()) + "n" + std::to_string(counter++);
}

inline PeerInfo peerInfo(int rank, int pid) {
  PeerInfo p;
  p.rank = rank;
  p.pid = pid;
  p.hostHash = hostHash();
  p.processHash = pid == getpid() ? processHash() : processHash() + 1;
  std::strncpy(p.hostName, hostName().c_str(), sizeof(p.hostName) - 1);
  return p;
}

// The request rank `self` makes to connect with rank `peer` (whose process is `peerPid`).
inline ConnectRequest request(const std::string& tag, int self, int peer, int peerPid, size_t nSlots, size_t slotBytes,
                              double deadlineS = 10.0, int lane = 0) {
  ConnectRequest r;
  r.commTag = tag;
  r.self = peerInfo(self, getpid());
  r.peer = peerInfo(peer, peerPid);
  r.lane = lane;
  r.nSlots = nSlots;
  r.slotBytes = slotBytes;
  r.deadline = Deadline::afterSeconds(deadlineS);
  return r;
}

// Names in /dev/shm that belong to communicator `tag`.
inline std::vector<std::string> shmEntries(const std::string& tag) {
  std::vector<std::string> out;
  std::string prefix = "weft-" + tag + "-";
  if (DIR* d = opendir("/dev/shm")) {
    while (dirent* e = readdir(d)) {
      if (std::strncmp(e->d_name, prefix.c_str(), prefix.size()) == 0) out.push_back(e->d_name);
    }
    closedir(d);
  }
  return out;
}

// A byte of message `msg` at offset `i`, so that the receiver knows every byte it should see.
inline unsigned char patternByte(uint64_t msg, size_t i) {
  return static_cast<unsigned char>((msg * 131 + i * 7 + (i >> 8)) & 0xff);
}

// Bytes in message `msg` of a stream over slots of `slotBytes` (0 and full slots included).
inline size_t messageBytes(uint64_t msg, size_t slotBytes) { return (msg * 7919) % (slotBytes + 1); }

}  // namespace shmtest
}  // namespace weft

#endif  // WEFT_TESTS_UNIT_TRANSPORTS_SHM_TEST_UTIL_H_
