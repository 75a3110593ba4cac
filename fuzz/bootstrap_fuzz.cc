// libFuzzer target for the bootstrap's wire: a root's and a rank's listeners, the root's answer,
// messages between ranks.
// Built and run by scripts/fuzz-wire with clang's -fsanitize=fuzzer,address,undefined; the normal
// build never compiles it. The driver (wire_drivers.h) checks the properties and is what the
// corpus replay in ctest (tests/unit/wire) runs, so a reproducer saved here fails there too.
#include <cstddef>
#include <cstdint>

#include "wire_drivers.h"

extern "C" int LLVMFuzzerInitialize(int* /*argc*/, char*** /*argv*/) {
  weft::fuzz::initWireDrivers();
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  weft::fuzz::bootstrapOneInput(data, size);
  return 0;
}
