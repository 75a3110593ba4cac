#include "topology/link_bw.h"

namespace weft {
namespace topo {
namespace bw {

double nvlinkPerLink(int sm) {
  if (sm >= 100) return 36.0;
  if (sm >= 90) return 20.6;
  if (sm >= 80) return 20.0;
  if (sm >= 70) return 22.0;
  return 18.0;  // sm 60 (P100, NVLink1)
}

double xgmiPerLink(const std::string& gcnArch) {
  if (gcnArch.rfind("gfx94", 0) == 0) return 48.0;
  if (gcnArch == "gfx90a") return 40.0;
  return 36.0;
}

double pcie(double gts, int width) {
  if (gts <= 0 || width <= 0) return 12.0;
  double x16;
  if (gts >= 64) x16 = 100.0;       // Gen6
  else if (gts >= 32) x16 = 50.0;   // Gen5
  else if (gts >= 16) x16 = 24.0;   // Gen4
  else if (gts >= 8) x16 = 12.0;    // Gen3
  else if (gts >= 5) x16 = 6.0;     // Gen2
  else x16 = 3.0;                   // Gen1
  return x16 * width / 16.0;
}

double smp(const std::string& cpuVendor) {
  if (cpuVendor == "AuthenticAMD") return 16.0;
  return 10.0;
}

}  // namespace bw
}  // namespace topo
}  // namespace weft
