// weftCommInitFromEnv: a launcher (no MPI) gives each process its rank, the size, the root's
// address and a shared secret in the environment; the processes form a communicator.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <string>
#include <vector>

#include "fixtures/port_holder.h"
#include "weft/weft.h"

namespace {

TEST(InitFromEnv, ProcessesFormACommunicatorAndAllReduce) {
  const int n = 3;
  weft_test::PortHolder port;
  std::string addr = "127.0.0.1:" + std::to_string(port.port());
  port.release();  // rank 0 listens there
  std::vector<pid_t> pids;
  for (int r = 0; r < n; ++r) {
    pid_t pid = fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
      setenv("WEFT_RANK", std::to_string(r).c_str(), 1);
      setenv("WEFT_NRANKS", std::to_string(n).c_str(), 1);
      setenv("WEFT_ROOT_ADDR", addr.c_str(), 1);
      setenv("WEFT_ROOT_SECRET", "00112233445566778899aabbccddeeff", 1);
      weftComm_t comm = nullptr;
      if (weftCommInitFromEnv(&comm, nullptr) != weftSuccess) {
        std::fprintf(stderr, "rank %d: %s\n", r, weftGetLastError(nullptr));
        _exit(2);
      }
      int rank = -1, count = -1;
      weftCommUserRank(comm, &rank);
      weftCommCount(comm, &count);
      int64_t mine = r + 1, sum = 0;
      bool ok = rank == r && count == n &&
                weftAllReduce(&mine, &sum, 1, weftInt64, weftSum, comm, nullptr) == weftSuccess && sum == 6;
      weftCommDestroy(comm);
      _exit(ok ? 0 : 1);
    }
    pids.push_back(pid);
  }
  for (int r = 0; r < n; ++r) {
    int status = 0;
    ASSERT_EQ(waitpid(pids[r], &status, 0), pids[r]);
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "rank " << r << " status " << status;
  }
}

TEST(InitFromEnv, MissingOrBadVariablesAreNamed) {
  unsetenv("WEFT_RANK");
  unsetenv("WEFT_NRANKS");
  unsetenv("OMPI_COMM_WORLD_RANK");
  unsetenv("PMI_RANK");
  setenv("WEFT_ROOT_ADDR", "127.0.0.1:1", 1);
  setenv("WEFT_ROOT_SECRET", "00112233445566778899aabbccddeeff", 1);
  weftComm_t comm = nullptr;
  EXPECT_EQ(weftCommInitFromEnv(&comm, nullptr), weftInvalidArgument);
  EXPECT_NE(std::string(weftGetLastError(nullptr)).find("WEFT_RANK"), std::string::npos) << weftGetLastError(nullptr);
  setenv("WEFT_RANK", "0", 1);
  setenv("WEFT_NRANKS", "1", 1);
  setenv("WEFT_ROOT_SECRET", "not-hex", 1);
  EXPECT_EQ(weftCommInitFromEnv(&comm, nullptr), weftInvalidArgument);
  EXPECT_NE(std::string(weftGetLastError(nullptr)).find("WEFT_ROOT_SECRET"), std::string::npos)
      << weftGetLastError(nullptr);
  for (const char* v : {"WEFT_RANK", "WEFT_NRANKS", "WEFT_ROOT_ADDR", "WEFT_ROOT_SECRET"}) unsetenv(v);
}

}  // namespace
