// The two buffers of one weft-perf rank (send and receive, -e bytes each), in host memory or on
// the rank's GPU (--mem device, as nccl-tests allocates them), each with a host mirror. The
// benchmark computes every pointer it hands a library as an offset into send() or recv(); it
// writes the data patterns into the mirror and uploads them, and downloads a result into the
// mirror before checking it, so the pattern and check code (expected.h) sees host memory only.
// On host memory the mirrors are the buffers and the copies do nothing.
#ifndef WEFT_PERF_RANK_BUFFERS_H_
#define WEFT_PERF_RANK_BUFFERS_H_

#include <cstddef>
#include <memory>
#include <string>

#include "perf/gpu_api.h"

namespace weft::perf {

class RankBuffers {
 public:
  // Host buffers when gpu is null; else device buffers on the calling thread's current GPU, and
  // the rank's stream (non-blocking, as nccl-tests makes it). False with a sentence in *error.
  // weftHost: host buffers come from weftMemAlloc (shared memory that zero-copy collectives use).
  static bool make(size_t bytes, GpuApi* gpu, std::unique_ptr<RankBuffers>* out, std::string* error,
                   bool weftHost = false);
  ~RankBuffers();
  RankBuffers(const RankBuffers&) = delete;
  RankBuffers& operator=(const RankBuffers&) = delete;

  bool onDevice() const { return gpu_ != nullptr; }
  // What the libraries are given.
  char* send() const { return send_; }
  char* recv() const { return recv_; }
  // The rank's stream; null for host memory (Weft's NULL stream means host buffers).
  GpuStream stream() const { return stream_; }
  // The host mirror of p, a pointer into send() or recv().
  char* mirror(const void* p) const;
  // Copies [p, p + bytes) from the mirror to the GPU, or back; both wait for the copy.
  GpuStatus upload(const void* p, size_t bytes);
  GpuStatus download(const void* p, size_t bytes);
  // Waits for everything queued on the stream.
  GpuStatus synchronize();

 private:
  explicit RankBuffers(GpuApi* gpu) : gpu_(gpu) {}

  GpuApi* gpu_;
  size_t bytes_ = 0;
  char* send_ = nullptr;
  char* recv_ = nullptr;
  char* hostSend_ = nullptr;  // page-aligned mirrors (the buffers themselves on host memory)
  char* hostRecv_ = nullptr;
  bool weftHost_ = false;  // the mirrors came from weftMemAlloc
  GpuStream stream_ = nullptr;
};

}  // namespace weft::perf

#endif  // WEFT_PERF_RANK_BUFFERS_H_
