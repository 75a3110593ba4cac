// weft-recorder-cost: what the flight recorder costs a call, measured in one process, same run.
//
//   weft-recorder-cost [--ranks N] [--rounds R] [--control] [SIZE...]   sizes in bytes (K, M
//                                                             suffixes); default 8 and 64M
//   --control: the "on" communicator is made without the recorder too: what two communicators
//   differ by anyway (their FIFOs' pages, say), the floor under which no cost can be seen.
//   --on-first: the recorded communicator is made first rather than second.
//
// Two communicators over the same N rank threads (weftCommInitAll): one made with
// WEFT_RECORDER_CALLS=0 (off), one with the recorder on (WEFT_RECORDER_CALLS as the environment
// says, 1024 by default). Each round times a block of float-sum all-reduces on each, in
// alternating order, so that both see the same machine at the same moments; the table gives the
// median time per call of each over the rounds, their ratio and difference. Public API only.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "weft/weft.h"

namespace {

struct Options {
  int ranks = 2;
  int rounds = 31;
  bool control = false;  // --control: both communicators without the recorder (the noise floor)
  bool onFirst = false;  // --on-first: make the recorded communicator first
  std::vector<size_t> sizes;
};

bool parseSize(const char* text, size_t* out) {
  char* end = nullptr;
  const unsigned long long v = std::strtoull(text, &end, 10);
  size_t mult = 1;
  if (*end == 'K' || *end == 'k') mult = 1024, ++end;
  else if (*end == 'M' || *end == 'm') mult = 1024 * 1024, ++end;
  if (end == text || *end != '\0' || v == 0) return false;
  *out = static_cast<size_t>(v) * mult;
  return true;
}

bool parse(int argc, char** argv, Options* o) {
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    size_t size = 0;
    if (a == "--control") {
      o->control = true;
    } else if (a == "--on-first") {
      o->onFirst = true;
    } else if ((a == "--ranks" || a == "--rounds") && i + 1 < argc) {
      const int v = std::atoi(argv[++i]);
      if (v < 1 || v > 1000) return false;
      (a == "--ranks" ? o->ranks : o->rounds) = v;
    } else if (parseSize(argv[i], &size) && size % sizeof(float) == 0) {
      o->sizes.push_back(size);
    } else {
      return false;
    }
  }
  if (o->sizes.empty()) o->sizes = {8, 64u << 20};
  return o->ranks >= 2;
}

// The calls per timed block: about 20 ms of work, at least 3.
int callsPerBlock(size_t bytes) { return bytes <= 4096 ? 50000 : std::max<int>(3, static_cast<int>((1u << 30) / bytes / 16)); }

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

bool makeComms(int n, std::vector<weftComm_t>* comms, const char* recorderCalls) {
  if (recorderCalls) setenv("WEFT_RECORDER_CALLS", recorderCalls, 1);
  else unsetenv("WEFT_RECORDER_CALLS");
  comms->assign(static_cast<size_t>(n), nullptr);
  const weftResult_t r = weftCommInitAll(comms->data(), n, nullptr);
  if (r != weftSuccess) std::fprintf(stderr, "weft-recorder-cost: weftCommInitAll: %s\n", weftGetLastError(nullptr));
  return r == weftSuccess;
}

// Times `bytes` all-reduces on both communicators, round after round in alternating order;
// *offUs and *onUs the medians per call. False when a call failed.
bool measure(const Options& o, const std::vector<weftComm_t>& off, const std::vector<weftComm_t>& on, size_t bytes,
             double* offUs, double* onUs) {
  const size_t count = bytes / sizeof(float);
  const int calls = callsPerBlock(bytes);
  std::vector<double> timesOff, timesOn;
  std::vector<std::thread> threads;
  std::vector<int> failed(static_cast<size_t>(o.ranks), 0);
  for (int r = 0; r < o.ranks; ++r) {
    threads.emplace_back([&, r] {
      std::vector<float> in(count, 1.0f), out(count);
      auto block = [&](weftComm_t comm, int n) {
        for (int i = 0; i < n && !failed[static_cast<size_t>(r)]; ++i) {
          failed[static_cast<size_t>(r)] =
              weftAllReduce(in.data(), out.data(), count, weftFloat32, weftSum, comm, nullptr) != weftSuccess;
        }
      };
      block(off[static_cast<size_t>(r)], calls / 10 + 1);  // warm both
      block(on[static_cast<size_t>(r)], calls / 10 + 1);
      for (int round = 0; round < o.rounds; ++round) {
        for (int k = 0; k < 2; ++k) {
          const bool recorded = (round + k) % 2 == 1;
          weftComm_t comm = (recorded ? on : off)[static_cast<size_t>(r)];
          block(comm, 1);  // line the ranks up
          const auto start = std::chrono::steady_clock::now();
          block(comm, calls);
          const double us = std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - start).count();
          if (r == 0) (recorded ? timesOn : timesOff).push_back(us / calls);
        }
      }
    });
  }
  for (auto& t : threads) t.join();
  if (std::count(failed.begin(), failed.end(), 1) > 0) return false;
  *offUs = median(timesOff);
  *onUs = median(timesOn);
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  Options o;
  if (!parse(argc, argv, &o)) {
    std::fprintf(stderr, "usage: weft-recorder-cost [--ranks N>=2] [--rounds R] [--control] [--on-first] [SIZE[K|M]...] (sizes multiples of 4)\n");
    return 2;
  }
  const char* userCalls = std::getenv("WEFT_RECORDER_CALLS");
  const std::string onCalls = userCalls && std::atoi(userCalls) > 0 ? userCalls : "1024";
  std::vector<weftComm_t> off, on;
  // --on-first: the recorded communicator is made first (what the order of creation does).
  const char* onValue = o.control ? "0" : onCalls.c_str();
  const bool made = o.onFirst ? makeComms(o.ranks, &on, onValue) && makeComms(o.ranks, &off, "0")
                              : makeComms(o.ranks, &off, "0") && makeComms(o.ranks, &on, onValue);
  if (!made) return 1;
  std::printf("# weft-recorder-cost: %d rank threads, %d rounds, float sum all-reduce; recorder on = "
              "WEFT_RECORDER_CALLS=%s%s\n",
              o.ranks, o.rounds, o.control ? "0" : onCalls.c_str(), o.control ? " (--control: both off)" : "");
  std::printf("# %12s %8s %14s %14s %8s %12s\n", "bytes", "calls", "off (us/call)", "on (us/call)", "on/off", "on-off (ns)");
  int status = 0;
  for (size_t bytes : o.sizes) {
    double a = 0, b = 0;
    if (!measure(o, off, on, bytes, &a, &b)) {
      std::fprintf(stderr, "weft-recorder-cost: an all-reduce of %zu bytes failed: %s\n", bytes, weftGetLastError(off[0]));
      status = 1;
      break;
    }
    std::printf("  %12zu %8d %14.4f %14.4f %8.3f %12.1f\n", bytes, callsPerBlock(bytes), a, b, b / a, (b - a) * 1000);
  }
  for (weftComm_t c : off) weftCommDestroy(c);
  for (weftComm_t c : on) weftCommDestroy(c);
  return status;
}
