// Every input of the wire fuzzers' corpus (tests/fixtures/wire-corpus: the generated seeds of
// fuzz/wire_corpus_gen.cc, and every input scripts/fuzz-wire found that once failed) goes through
// the same driver the fuzzer runs (fuzz/wire_drivers.h): the pure checks, a live root, a live
// joining rank, a live socket listener and a live receiving link. A property that fails aborts
// with the reason; the input being replayed is printed first.
#include <dirent.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <iterator>
#include <set>
#include <string>
#include <vector>

#include "wire_drivers.h"

namespace weft {
namespace fuzz {
namespace {

std::vector<std::string> filesIn(const std::string& dir) {
  std::vector<std::string> out;
  DIR* d = opendir(dir.c_str());
  if (d == nullptr) return out;
  while (dirent* e = readdir(d)) {
    std::string name = e->d_name;
    if (name != "." && name != "..") out.push_back(dir + "/" + name);
  }
  closedir(d);
  std::sort(out.begin(), out.end());
  return out;
}

std::string readBytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

// Replays every file of corpus `sub`; returns the modes (first bytes) the corpus covered.
std::set<int> replay(const std::string& sub, int modes, void (*oneInput)(const uint8_t*, size_t)) {
  initWireDrivers();
  std::vector<std::string> files = filesIn(std::string(WEFT_WIRE_CORPUS_DIR) + "/" + sub);
  EXPECT_GE(files.size(), 30u) << "the corpus is missing: " << WEFT_WIRE_CORPUS_DIR << "/" << sub;
  std::set<int> covered;
  for (const std::string& f : files) {
    std::string bytes = readBytes(f);
    std::fprintf(stderr, "replaying %s (%zu bytes)\n", f.c_str(), bytes.size());
    if (!bytes.empty()) covered.insert(static_cast<uint8_t>(bytes[0]) % modes);
    oneInput(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size());
  }
  return covered;
}

TEST(WireCorpus, BootstrapInputsAreDroppedCleanly) {
  std::set<int> covered = replay("bootstrap", kBootstrapModes, bootstrapOneInput);
  EXPECT_EQ(covered.size(), static_cast<size_t>(kBootstrapModes)) << "a bootstrap mode has no input in the corpus";
}

TEST(WireCorpus, SocketFramesAreDroppedCleanly) {
  std::set<int> covered = replay("socket_frame", kSocketModes, socketFrameOneInput);
  EXPECT_EQ(covered.size(), static_cast<size_t>(kSocketModes)) << "a socket mode has no input in the corpus";
}

}  // namespace
}  // namespace fuzz
}  // namespace weft
