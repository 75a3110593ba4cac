// A weft-perf rank's buffers (see rank_buffers.h).
#include "perf/rank_buffers.h"

#include <cstdint>
#include <cstdlib>

#include "weft/weft.h"

namespace weft::perf {
namespace {

char* alignedHost(size_t bytes) {
  void* p = nullptr;
  if (posix_memalign(&p, 4096, bytes < 64 ? 64 : bytes) != 0) return nullptr;
  return static_cast<char*>(p);
}

char* weftHost(size_t bytes) {
  void* p = nullptr;
  if (weftMemAlloc(&p, bytes < 64 ? 64 : bytes) != weftSuccess) return nullptr;
  return static_cast<char*>(p);
}

}  // namespace

bool RankBuffers::make(size_t bytes, GpuApi* gpu, std::unique_ptr<RankBuffers>* out, std::string* error,
                       bool weftHostMemory) {
  std::unique_ptr<RankBuffers> b(new RankBuffers(gpu));
  b->bytes_ = bytes;
  b->weftHost_ = weftHostMemory && !gpu;
  b->hostSend_ = b->weftHost_ ? weftHost(bytes) : alignedHost(bytes);
  b->hostRecv_ = b->weftHost_ ? weftHost(bytes) : alignedHost(bytes);
  if (!b->hostSend_ || !b->hostRecv_) {
    *error = "cannot allocate 2 x " + std::to_string(bytes) + " bytes of host memory; lower -e/--maxbytes";
    return false;
  }
  if (!gpu) {
    b->send_ = b->hostSend_;
    b->recv_ = b->hostRecv_;
    *out = std::move(b);
    return true;
  }
  // At least one byte each, so that every pointer handed out lies inside an allocation.
  void* s = nullptr;
  void* r = nullptr;
  GpuStatus st = gpu->malloc(&s, bytes ? bytes : 1);
  b->send_ = static_cast<char*>(s);
  if (st.ok()) st = gpu->malloc(&r, bytes ? bytes : 1);
  b->recv_ = static_cast<char*>(r);
  if (st.ok()) st = gpu->streamCreate(&b->stream_, kGpuStreamNonBlocking);
  if (!st.ok()) {
    *error = st.error + (st.error.find("Malloc") != std::string::npos ? "; lower -e/--maxbytes" : "");
    return false;
  }
  *out = std::move(b);
  return true;
}

RankBuffers::~RankBuffers() {
  if (gpu_) {
    if (stream_) (void)gpu_->streamSynchronize(stream_);
    (void)gpu_->free(send_);
    (void)gpu_->free(recv_);
    if (stream_) (void)gpu_->streamDestroy(stream_);
  }
  if (weftHost_) {
    (void)weftMemFree(hostSend_);
    (void)weftMemFree(hostRecv_);
    return;
  }
  std::free(hostSend_);
  std::free(hostRecv_);
}

char* RankBuffers::mirror(const void* p) const {
  const uintptr_t a = reinterpret_cast<uintptr_t>(p), r = reinterpret_cast<uintptr_t>(recv_);
  if (a >= r && a - r <= bytes_) return hostRecv_ + (a - r);
  return hostSend_ + (a - reinterpret_cast<uintptr_t>(send_));
}

GpuStatus RankBuffers::upload(const void* p, size_t bytes) {
  if (!gpu_ || bytes == 0) return {};
  GpuStatus s = gpu_->memcpyAsync(const_cast<void*>(p), mirror(p), bytes, GpuCopy::kHostToDevice, stream_);
  return s.ok() ? gpu_->streamSynchronize(stream_) : s;
}

GpuStatus RankBuffers::download(const void* p, size_t bytes) {
  if (!gpu_ || bytes == 0) return {};
  GpuStatus s = gpu_->memcpyAsync(mirror(p), p, bytes, GpuCopy::kDeviceToHost, stream_);
  return s.ok() ? gpu_->streamSynchronize(stream_) : s;
}

GpuStatus RankBuffers::synchronize() {
  if (!gpu_) return {};
  return gpu_->streamSynchronize(stream_);
}

}  // namespace weft::perf
