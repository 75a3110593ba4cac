// weft-nettest: one rank of a multi-host test, launched once per rank inside the network
// namespaces that netns.sh makes (or on plain loopback). Talks to Weft through the C API only.
// The modes live in nettest.cc (main, loop, abort), nettest_collectives.cc and
// nettest_stranger.cc; this header is what they share.
#ifndef WEFT_TESTS_NETNS_NETTEST_H_
#define WEFT_TESTS_NETNS_NETTEST_H_

#include <chrono>
#include <cstdint>
#include <cstdio>

#include "weft/weft.h"

namespace nettest {

inline double nowS() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

// A well-mixed 64-bit value for (seed, x): the inputs every rank can recompute for every other.
inline uint64_t mix(uint64_t seed, uint64_t x) {
  uint64_t z = (x + 1) * 0x9E3779B97F4A7C15ull ^ seed;
  z ^= z >> 31;
  z *= 0xBF58476D1CE4E5B9ull;
  z ^= z >> 29;
  return z;
}

// Joins the communicator the launcher described (WEFT_RANK, WEFT_NRANKS, WEFT_ROOT_ADDR,
// WEFT_ROOT_SECRET); on failure prints the library's message and returns false.
bool initFromEnv(weftComm_t* comm, int* rank, int* nranks);

// Prints "rank R: what failed (code): library message" to stderr.
void printApiError(int rank, const char* what, weftResult_t result, weftComm_t comm);

// The modes; each returns the process's exit status.
int runCollectives(bool quick);
int runStranger(const char* hostPort, double holdS);

}  // namespace nettest

#endif  // WEFT_TESTS_NETNS_NETTEST_H_
