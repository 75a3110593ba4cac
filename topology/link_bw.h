// Per-link bandwidth constants, GB/s per direction per link, in one table. Figures from
// ../shared/reference/formats.md section 2 (public NCCL/RCCL sources and vendor data sheets);
// where a range is given there, the value used here and why is stated beside it.
#ifndef WEFT_TOPOLOGY_LINK_BW_H_
#define WEFT_TOPOLOGY_LINK_BW_H_

#include <string>

namespace weft {
namespace topo {
namespace bw {

// NVLink per link, by GPU generation (compute capability x 10).
//  sm 70 (V100, NVLink2): ~22 usable (25 nominal).
//  sm 80 (A100, NVLink3): 20-25 usable; 20 here (NCCL's own SM80 figure).
//  sm 90 (H100/H200, NVLink4): ~20.6 (18 links -> 450 GB/s nominal per direction... usable ~370).
//  sm 100 (B200, NVLink5): ~40 per link (18 links, 900 GB/s per direction nominal); 36 used.
double nvlinkPerLink(int sm);

// xGMI per link, by AMD architecture.
//  gfx90a (MI250X): 36-50 usable; 40 here (between the two figures formats.md gives).
//  gfx940/941/942 (MI300X): 48 usable of 64 nominal.
//  other / unknown: 36 (the conservative end of the MI250X range).
double xgmiPerLink(const std::string& gcnArch);

// PCIe usable per direction for a link of `gts` GT/s per lane and `width` lanes:
//  Gen3 x16 ~12, Gen4 x16 ~24, Gen5 x16 ~48-52 (50 here), scaled linearly by width;
//  unknown speed or width: Gen3 x16 (12), the safe assumption for an unknown slot.
double pcie(double gts, int width);

// Between CPU sockets (UPI/QPI/Infinity Fabric), as NCCL models it: ~10 for Intel (x86
// family 6), ~16 for AMD Zen; unknown: 10.
double smp(const std::string& cpuVendor);

// NVIDIA C2C (Grace Hopper) per link: 45 (NCCL's figure; count from the file's c2c count).
constexpr double kC2cPerLink = 45.0;

// A network port of `mbps` megabits per second, in GB/s: mbps / 8000 (400000 -> 50).
inline double net(double mbps) { return mbps / 8000.0; }

}  // namespace bw
}  // namespace topo
}  // namespace weft

#endif  // WEFT_TOPOLOGY_LINK_BW_H_
