// Which vectorised variant of the reduced-precision host reductions (reduce_lowp.h) this CPU
// runs: detection from the CPU's features, the variants' names, and WEFT_HOST_SIMD.
#include <string>

#include "base/log.h"
#include "base/params.h"
#include "collectives/reduce_lowp.h"

namespace weft {
namespace coll {
namespace {

HostSimd detectHostSimd() {
#if defined(__x86_64__) && defined(__GNUC__)
  __builtin_cpu_init();
  const bool avx512 = __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
                      __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512dq") &&
                      __builtin_cpu_supports("avx2") && __builtin_cpu_supports("f16c");
  const bool bf16 = avx512 && __builtin_cpu_supports("avx512bf16");
  const bool vbmi = bf16 && __builtin_cpu_supports("avx512vbmi") && __builtin_cpu_supports("gfni");
  if (vbmi && __builtin_cpu_supports("avx512fp16")) return HostSimd::kAvx512Fp16;
  if (vbmi) return HostSimd::kAvx512Vbmi;
  if (bf16) return HostSimd::kAvx512Bf16;
  if (avx512) return HostSimd::kAvx512;
  if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("f16c")) return HostSimd::kAvx2;
#endif
  return HostSimd::kPortable;
}

}  // namespace

const char* hostSimdName(HostSimd simd) {
  switch (simd) {
    case HostSimd::kScalar:
      return "scalar";
    case HostSimd::kPortable:
      return "portable";
    case HostSimd::kAvx2:
      return "avx2-f16c";
    case HostSimd::kAvx512:
      return "avx512";
    case HostSimd::kAvx512Bf16:
      return "avx512-bf16";
    case HostSimd::kAvx512Vbmi:
      return "avx512-vbmi";
    case HostSimd::kAvx512Fp16:
      return "avx512-fp16";
    default:
      return "invalid";
  }
}

HostSimd bestHostSimd() {
  static const HostSimd best = detectHostSimd();
  return best;
}

// WEFT_HOST_SIMD, or the best variant when it is unset, unknown or not runnable here.
HostSimd chosenHostSimd() {
  const std::string asked = params::HostSimd();
  if (asked.empty()) return bestHostSimd();
  for (int v = 0; v < static_cast<int>(HostSimd::kCount); ++v) {
    const HostSimd simd = static_cast<HostSimd>(v);
    if (asked != hostSimdName(simd)) continue;
    if (hostSimdSupported(simd)) return simd;
    WEFT_LOG(kWarn, kColl, "WEFT_HOST_SIMD=%s: this CPU cannot run it; using %s", asked.c_str(),
             hostSimdName(bestHostSimd()));
    return bestHostSimd();
  }
  std::string names;
  for (int v = 0; v < static_cast<int>(HostSimd::kCount); ++v) {
    names += std::string(v == 0 ? "" : ", ") + hostSimdName(static_cast<HostSimd>(v));
  }
  WEFT_LOG(kWarn, kColl, "WEFT_HOST_SIMD=%s is not one of %s; using %s", asked.c_str(), names.c_str(),
           hostSimdName(bestHostSimd()));
  return bestHostSimd();
}

HostSimd defaultHostSimd() {
  static const HostSimd chosen = chosenHostSimd();
  return chosen;
}

// The variants form a ladder: each needs the features of the ones below it.
bool hostSimdSupported(HostSimd simd) {
  if (simd == HostSimd::kScalar || simd == HostSimd::kPortable) return true;
  if (static_cast<int>(simd) < 0 || simd >= HostSimd::kCount) return false;
  return static_cast<int>(simd) <= static_cast<int>(bestHostSimd());
}

}  // namespace coll
}  // namespace weft
