// The initialisers of bindings/nccl/include/nccl.h, for abi_test.cc to compare with NVIDIA's
// (the two headers cannot be included in one translation unit).
#include <nccl.h>

#include <cstring>

extern "C" void weftNcclOurConfigInitializer(void* out, size_t bytes) {
  ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
  std::memcpy(out, &config, bytes < sizeof(config) ? bytes : sizeof(config));
}

extern "C" void weftNcclOurSimInfoInitializer(void* out, size_t bytes) {
  ncclSimInfo_t sim = NCCL_SIM_INFO_INITIALIZER;
  std::memcpy(out, &sim, bytes < sizeof(sim) ? bytes : sizeof(sim));
}

extern "C" void weftNcclOurCollConfigInitializer(void* out, size_t bytes) {
  ncclCollConfig_t config = NCCL_COLLCONFIG_INITIALIZER;
  std::memcpy(out, &config, bytes < sizeof(config) ? bytes : sizeof(config));
}

extern "C" void weftNcclOurEncryptionInitializer(void* out, size_t bytes) {
  ncclEncryptionConfig_t config = NCCL_ENCRYPTION_CONFIG_INITIALIZER;
  std::memcpy(out, &config, bytes < sizeof(config) ? bytes : sizeof(config));
}
