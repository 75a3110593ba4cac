#include "topology/machines.h"

#include <cstdio>
#include <utility>
#include <vector>

#include "topology/link_bw.h"

namespace weft {
namespace topo {
namespace machines {
namespace {

constexpr uint32_t kClassBridge = 0x060400;
constexpr uint32_t kClassNvSwitch = 0x068000;
constexpr uint32_t kClassNvidiaGpu = 0x030200;
constexpr uint32_t kClassAmdInstinct = 0x120000;
constexpr uint32_t kClassAmdDisplay = 0x038000;
constexpr uint32_t kClassInfiniband = 0x020700;
constexpr uint32_t kClassEthernet = 0x020000;
constexpr uint32_t kVendorNvidia = 0x10de;
constexpr uint32_t kVendorAmd = 0x1002;
constexpr uint32_t kVendorMellanox = 0x15b3;
constexpr uint32_t kVendorBroadcom = 0x1000;
constexpr uint32_t kVendorHpe = 0x17db;
constexpr uint32_t kVendorAmdBridge = 0x1002;
constexpr double kGen4 = 16.0;
constexpr double kGen5 = 32.0;

std::string busId(int bus) {
  char text[32];
  std::snprintf(text, sizeof(text), "0000:%02x:00.0", static_cast<unsigned>(bus) & 0xffu);
  return text;
}

// A Linux cpumask ("ffffffff,00000000", most significant word first) of the CPUs in `ranges`.
std::string cpuMask(const std::vector<std::pair<int, int>>& ranges, int totalCpus) {
  std::vector<uint32_t> words(static_cast<size_t>((totalCpus + 31) / 32), 0);
  for (const auto& r : ranges) {
    for (int c = r.first; c <= r.second; ++c) words[static_cast<size_t>(c / 32)] |= 1u << (c % 32);
  }
  std::string out;
  for (size_t i = words.size(); i-- > 0;) {
    char text[16];
    std::snprintf(text, sizeof(text), "%08x", words[i]);
    out += text;
    if (i > 0) out += ",";
  }
  return out;
}

struct CpuModel {
  const char* vendor;
  int family;
  int model;
};
constexpr CpuModel kSapphireRapids{"GenuineIntel", 6, 143};
constexpr CpuModel kIceLake{"GenuineIntel", 6, 106};
constexpr CpuModel kRome{"AuthenticAMD", 23, 49};
constexpr CpuModel kGenoa{"AuthenticAMD", 25, 17};
constexpr CpuModel kTrento{"AuthenticAMD", 25, 48};

struct GpuModel {
  GpuVendor vendor;
  uint32_t pciClass;
  uint32_t device;
  int sm;
  const char* arch;
  const char* name;
  double gts;
};
constexpr GpuModel kH100{GpuVendor::kNvidia, kClassNvidiaGpu, 0x2330, 90, "sm_90", "NVIDIA H100 80GB HBM3", kGen5};
constexpr GpuModel kA100{GpuVendor::kNvidia, kClassNvidiaGpu, 0x20b0, 80, "sm_80", "NVIDIA A100-SXM4-40GB", kGen4};
constexpr GpuModel kA100Pcie{GpuVendor::kNvidia, kClassNvidiaGpu, 0x20b5, 80, "sm_80", "NVIDIA A100 80GB PCIe", kGen4};
constexpr GpuModel kL40s{GpuVendor::kNvidia, kClassNvidiaGpu, 0x26b9, 89, "sm_89", "NVIDIA L40S", kGen4};
constexpr GpuModel kMi300x{GpuVendor::kAmd, kClassAmdInstinct, 0x74a1, 0, "gfx942", "AMD Instinct MI300X", kGen5};
constexpr GpuModel kMi250x{GpuVendor::kAmd, kClassAmdDisplay, 0x7408, 0, "gfx90a", "AMD Instinct MI250X", kGen4};

struct NicModel {
  uint32_t pciClass;
  uint32_t vendor;
  uint32_t device;
  double mbps;
  double gts;
  const char* prefix;
};
constexpr NicModel kConnectX7{kClassInfiniband, kVendorMellanox, 0x1021, 400000, kGen5, "mlx5_"};
constexpr NicModel kConnectX7Eth{kClassEthernet, kVendorMellanox, 0x1021, 400000, kGen5, "mlx5_"};
constexpr NicModel kConnectX7Vf{kClassInfiniband, kVendorMellanox, 0x101e, 400000, kGen5, "mlx5_"};
constexpr NicModel kConnectX6{kClassInfiniband, kVendorMellanox, 0x101b, 200000, kGen4, "mlx5_"};
constexpr NicModel kConnectX6Dx{kClassEthernet, kVendorMellanox, 0x101d, 100000, kGen4, "mlx5_"};
constexpr NicModel kSlingshot{kClassEthernet, kVendorHpe, 0x0501, 200000, kGen4, "cxi"};
constexpr NicModel kBond{kClassEthernet, 0, 0, 25000, 0, "bond"};

// Adds nodes and links the way a topology file would produce them.
class Builder {
 public:
  int cpu(int numa, const CpuModel& model, const std::string& affinity) {
    Node n;
    n.type = NodeType::kCpu;
    n.cpu.numaId = numa;
    n.cpu.affinity = affinity;
    n.cpu.arch = "x86_64";
    n.cpu.vendor = model.vendor;
    n.cpu.familyId = model.family;
    n.cpu.modelId = model.model;
    int node = sys_.addNode(n);
    for (int other : cpus_) sys_.addLink(other, node, LinkType::kSmp, 1, bw::smp(model.vendor));
    cpus_.push_back(node);
    return node;
  }

  int bridge(int parent, int bus, double gts, uint32_t device = 0xc030, uint32_t vendor = kVendorBroadcom) {
    Node n;
    n.type = NodeType::kPciBridge;
    n.pci = pci(bus, kClassBridge, vendor, device, gts);
    return attach(parent, n);
  }

  // dev < 0: the next index.
  int gpu(int parent, int bus, const GpuModel& model, int dev = -1) {
    Node n;
    n.type = NodeType::kGpu;
    n.pci = pci(bus, model.pciClass, model.vendor == GpuVendor::kNvidia ? kVendorNvidia : kVendorAmd, model.device,
                model.gts);
    n.gpu.vendor = model.vendor;
    n.gpu.dev = dev >= 0 ? dev : gpus_;
    ++gpus_;
    n.gpu.sm = model.sm;
    n.gpu.arch = model.arch;
    n.gpu.model = model.name;
    n.gpu.gdr = true;
    return attach(parent, n);
  }

  // bus < 0: a NIC without a PCI function (a bond, a virtual device), linked to its CPU.
  int nic(int parent, int bus, const NicModel& model) {
    Node n;
    n.type = NodeType::kNic;
    if (bus >= 0) n.pci = pci(bus, model.pciClass, model.vendor, model.device, model.gts);
    n.nic.name = model.prefix + std::to_string(nics_);
    n.nic.dev = nics_++;
    n.nic.speedMbps = model.mbps;
    n.nic.gdr = true;
    return attach(parent, n);
  }

  // An NVSwitch as NVIDIA's files show it: a PCI function of class 0x068000 that NVLinks reach.
  // parent >= 0: its management PCIe link (Gen4 x4) to that bridge, which no path relays
  // through; parent < 0: no PCI parent. bus < 0: the switch a VM's vendor library reports
  // without a PCI function.
  int nvSwitch(int bus, uint32_t device, int parent = -1) {
    Node n;
    n.type = NodeType::kNvSwitch;
    if (bus >= 0) n.pci = pci(bus, kClassNvSwitch, kVendorNvidia, device, parent >= 0 ? kGen4 : 0);
    if (parent >= 0) {
      n.pci.linkWidth = 4;
      return attach(parent, n);
    }
    return sys_.addNode(n);
  }

  void nvlink(int gpu, int target, int count) {
    const GpuInfo& g = sys_.nodes[static_cast<size_t>(gpu)].gpu;
    sys_.addLink(gpu, target, LinkType::kNvLink, count, count * bw::nvlinkPerLink(g.sm));
  }

  void xgmi(int a, int b, int count) {
    const GpuInfo& g = sys_.nodes[static_cast<size_t>(a)].gpu;
    sys_.addLink(a, b, LinkType::kXgmi, count, count * bw::xgmiPerLink(g.arch));
  }

  System take(int version) {
    sys_.source = "model";
    sys_.version = version;
    return std::move(sys_);
  }

 private:
  static PciInfo pci(int bus, uint32_t cls, uint32_t vendor, uint32_t device, double gts) {
    PciInfo p;
    p.busId = busId(bus);
    p.pciClass = cls;
    p.vendor = vendor;
    p.device = device;
    p.linkSpeedGTs = gts;
    p.linkWidth = gts > 0 ? 16 : 0;
    return p;
  }

  int attach(int parent, const Node& n) {
    int node = sys_.addNode(n);
    sys_.addLink(node, parent, LinkType::kPcie, 1, bw::pcie(n.pci.linkSpeedGTs, n.pci.linkWidth));
    return node;
  }

  System sys_;
  std::vector<int> cpus_;
  int gpus_ = 0;
  int nics_ = 0;
};

}  // namespace

System dgxH100() {
  Builder b;
  int cpu[2] = {b.cpu(0, kSapphireRapids, cpuMask({{0, 55}, {112, 167}}, 224)),
                b.cpu(1, kSapphireRapids, cpuMask({{56, 111}, {168, 223}}, 224))};
  const int switchBus[4] = {0x16, 0x38, 0x98, 0xb8};
  const int gpuBus[8] = {0x18, 0x2a, 0x3a, 0x5d, 0x9a, 0xab, 0xba, 0xdb};
  const int nicBus[8] = {0x19, 0x29, 0x3b, 0x5c, 0x9b, 0xaa, 0xbb, 0xda};
  std::vector<int> gpus;
  for (int s = 0; s < 4; ++s) {
    int sw = b.bridge(cpu[s / 2], switchBus[s], kGen5);
    for (int k = 0; k < 2; ++k) gpus.push_back(b.gpu(sw, gpuBus[2 * s + k], kH100));
    for (int k = 0; k < 2; ++k) b.nic(sw, nicBus[2 * s + k], kConnectX7);
  }
  // 18 links per GPU: 5, 4, 4 and 5 to the four switches.
  const int linksToSwitch[4] = {5, 4, 4, 5};
  for (int k = 0; k < 4; ++k) {
    int sw = b.nvSwitch(0x05 + k, 0x22a3);
    for (int g : gpus) b.nvlink(g, sw, linksToSwitch[k]);
  }
  return b.take(1);
}

System dgxA100() {
  Builder b;
  int cpu[2] = {b.cpu(0, kRome, cpuMask({{0, 63}, {128, 191}}, 256)),
                b.cpu(1, kRome, cpuMask({{64, 127}, {192, 255}}, 256))};
  const int switchBus[4] = {0x03, 0x43, 0x83, 0xb3};
  const int gpuBus[8] = {0x07, 0x0f, 0x47, 0x4e, 0x87, 0x90, 0xb7, 0xbd};
  const int nicBus[8] = {0x0c, 0x12, 0x4b, 0x54, 0x8d, 0x94, 0xba, 0xcc};
  std::vector<int> gpus;
  for (int s = 0; s < 4; ++s) {
    int sw = b.bridge(cpu[s / 2], switchBus[s], kGen4, 0xc010);
    for (int k = 0; k < 2; ++k) gpus.push_back(b.gpu(sw, gpuBus[2 * s + k], kA100));
    for (int k = 0; k < 2; ++k) b.nic(sw, nicBus[2 * s + k], kConnectX6);
  }
  // The six NVSwitches' management functions sit behind a bridge of socket 1.
  int nvsBridge = b.bridge(cpu[1], 0xc1, kGen4, 0xc010);
  for (int k = 0; k < 6; ++k) {
    int sw = b.nvSwitch(0xc4 + k, 0x1af1, nvsBridge);
    for (int g : gpus) b.nvlink(g, sw, 2);
  }
  return b.take(1);
}

System mi300x() {
  Builder b;
  int cpu[2] = {b.cpu(0, kGenoa, cpuMask({{0, 95}, {192, 287}}, 384)),
                b.cpu(1, kGenoa, cpuMask({{96, 191}, {288, 383}}, 384))};
  const int gpuBus[8] = {0x0c, 0x22, 0x38, 0x5c, 0x9f, 0xaf, 0xbf, 0xdf};
  std::vector<int> gpus;
  for (int i = 0; i < 8; ++i) {
    int sw = b.bridge(cpu[i / 4], gpuBus[i] - 2, kGen5);
    gpus.push_back(b.gpu(sw, gpuBus[i], kMi300x));
    b.nic(sw, gpuBus[i] + 1, kConnectX7Eth);
  }
  for (int i = 0; i < 8; ++i) {
    for (int j = i + 1; j < 8; ++j) b.xgmi(gpus[static_cast<size_t>(i)], gpus[static_cast<size_t>(j)], 1);
  }
  return b.take(2);
}

System mi250x() {
  Builder b;
  // NUMA domain d holds one package: GCDs (dev) and its NIC, bus ids as on Frontier.
  struct Domain {
    int bridgeBus, gcdBus[2], gcdDev[2], nicBus;
  };
  const Domain domains[4] = {{0xd0, {0xd1, 0xd6}, {4, 5}, 0xd5},
                             {0xc8, {0xc9, 0xce}, {2, 3}, 0xcd},
                             {0xd8, {0xd9, 0xde}, {6, 7}, 0xdd},
                             {0xc0, {0xc1, 0xc6}, {0, 1}, 0xc5}};
  std::vector<int> gcd(8, -1);  // by dev
  for (int d = 0; d < 4; ++d) {
    const Domain& dom = domains[d];
    int cpu = b.cpu(d, kTrento, cpuMask({{16 * d, 16 * d + 15}, {64 + 16 * d, 79 + 16 * d}}, 128));
    int sw = b.bridge(cpu, dom.bridgeBus, kGen4, 0x14a0, kVendorAmdBridge);
    for (int k = 0; k < 2; ++k)
      gcd[static_cast<size_t>(dom.gcdDev[k])] = b.gpu(sw, dom.gcdBus[k], kMi250x, dom.gcdDev[k]);
    b.nic(sw, dom.nicBus, kSlingshot);
  }
  struct Pair {
    int a, b, links;
  };
  const Pair pairs[] = {{0, 1, 4}, {2, 3, 4}, {4, 5, 4}, {6, 7, 4}, {0, 6, 2}, {1, 3, 2},
                        {2, 4, 2}, {5, 7, 2}, {0, 2, 1}, {1, 7, 1}, {3, 5, 1}, {4, 6, 1}};
  for (const Pair& p : pairs) b.xgmi(gcd[static_cast<size_t>(p.a)], gcd[static_cast<size_t>(p.b)], p.links);
  return b.take(2);
}

System pcieServer(int sockets, int switchesPerSocket, int gpusPerSwitch) {
  Builder b;
  const int threads = 64 * sockets;
  std::vector<int> cpus;
  for (int s = 0; s < sockets; ++s)
    cpus.push_back(b.cpu(
        s, kIceLake, cpuMask({{32 * s, 32 * s + 31}, {32 * sockets + 32 * s, 32 * sockets + 32 * s + 31}}, threads)));
  int bus = 0x10;
  for (int s = 0; s < sockets; ++s) {
    for (int w = 0; w < switchesPerSocket; ++w) {
      int sw = b.bridge(cpus[static_cast<size_t>(s)], bus++, kGen4, 0xc010);
      for (int g = 0; g < gpusPerSwitch; ++g) b.gpu(sw, bus++, kL40s);
      bus = (bus + 0x0f) & ~0x0f;
    }
  }
  // The NIC has a root port of its own on socket 0.
  int port = b.bridge(cpus[0], bus++, kGen4, 0x347a);
  b.nic(port, bus, kConnectX6Dx);
  return b.take(1);
}

System pcie4Gpu() {
  Builder b;
  int cpu[2] = {b.cpu(0, kIceLake, cpuMask({{0, 31}, {64, 95}}, 128)),
                b.cpu(1, kIceLake, cpuMask({{32, 63}, {96, 127}}, 128))};
  const int switchBus[2] = {0x17, 0x98};
  const int gpuBus[4] = {0x18, 0x1b, 0x99, 0x9c};
  for (int s = 0; s < 2; ++s) {
    int sw = b.bridge(cpu[s], switchBus[s], kGen4, 0xc010);
    for (int k = 0; k < 2; ++k) b.gpu(sw, gpuBus[2 * s + k], kA100Pcie);
  }
  b.nic(cpu[0], 0x31, kConnectX6Dx);
  b.nic(cpu[1], -1, kBond);
  return b.take(1);
}

System cloudVm() {
  Builder b;
  int cpu = b.cpu(0, kSapphireRapids, cpuMask({{0, 207}}, 208));
  std::vector<int> gpus;
  for (int i = 0; i < 8; ++i) gpus.push_back(b.gpu(cpu, 0x04 + i, kH100));
  for (int i = 0; i < 8; ++i) b.nic(cpu, 0x0c + i, kConnectX7Vf);
  int sw = b.nvSwitch(-1, 0);
  for (int g : gpus) b.nvlink(g, sw, 18);
  return b.take(1);
}

System nvswitchNode(int nGpus) {
  Builder b;
  int cpu = b.cpu(0, kSapphireRapids, cpuMask({{0, 111}}, 112));
  std::vector<int> gpus;
  for (int i = 0; i < nGpus; ++i) {
    int sw = b.bridge(cpu, 0x08 * (i + 1), kGen5);
    gpus.push_back(b.gpu(sw, 0x08 * (i + 1) + 2, kH100));
    b.nic(sw, 0x08 * (i + 1) + 3, kConnectX7);
  }
  if (nGpus > 1) {
    int nvs = b.nvSwitch(0x05, 0x22a3);
    for (int g : gpus) b.nvlink(g, nvs, 18);
  }
  return b.take(1);
}

}  // namespace machines
}  // namespace topo
}  // namespace weft
