// The system model: what a node contains and how its parts connect. Detection (detect*.cc)
// and topology files (topo_file*.cc) produce it; paths, search and the cost model read it;
// weft-topo prints it. Plain data, no communicator (../shared/DESIGN.md, "topology").
//
// A System is a graph. Nodes are CPUs (one per NUMA domain), PCI bridges/switches, GPUs, NICs
// and NVSwitches; links are typed (NVLink, xGMI, PCIe, C2C, the inter-socket interconnect,
// the network) and carry a bandwidth per direction. The PCI tree is kept as links too: a
// device's PCIe link to its parent bridge, a bridge's link to its parent, a root bridge's
// link to its CPU.
#ifndef WEFT_TOPOLOGY_SYSTEM_H_
#define WEFT_TOPOLOGY_SYSTEM_H_

#include <cstdint>
#include <string>
#include <vector>

namespace weft {
namespace topo {

enum class NodeType : uint8_t { kCpu, kPciBridge, kGpu, kNic, kNvSwitch };
enum class LinkType : uint8_t {
  kNvLink,  // NVIDIA NVLink (to a GPU or an NVSwitch)
  kXgmi,    // AMD xGMI / Infinity Fabric between GPUs
  kPcie,    // a PCIe link (device to bridge, bridge to bridge, root bridge to CPU)
  kC2c,     // NVIDIA chip-to-chip (Grace Hopper)
  kSmp,     // between CPU sockets / NUMA domains (UPI, QPI, Infinity Fabric)
  kNet,     // a NIC's network port (to "the fabric"; bandwidth is the port speed)
};
enum class GpuVendor : uint8_t { kUnknown, kNvidia, kAmd };

const char* nodeTypeName(NodeType t);  // "cpu", "pci", "gpu", "nic", "nvswitch"
const char* linkTypeName(LinkType t);  // "nvlink", "xgmi", "pcie", "c2c", "smp", "net"

struct CpuInfo {
  int numaId = -1;
  std::string affinity;  // hex cpumask as in NCCL files ("ffffffff,ffffffff"); "" unknown
  std::string arch;      // x86_64, arm64, ppc64
  std::string vendor;    // GenuineIntel, AuthenticAMD
  int familyId = -1;
  int modelId = -1;
  uint64_t hostHash = 0;
};

struct PciInfo {
  std::string busId;         // normalised "0000:18:00.0" (lower case, with function)
  uint32_t pciClass = 0;     // 0x030200, 0x060400, ...
  uint32_t vendor = 0;       // 0x10de, 0x1002, 0x15b3, 0x1000
  uint32_t device = 0;
  uint32_t subsystemVendor = 0;
  uint32_t subsystemDevice = 0;
  double linkSpeedGTs = 0;   // 2.5, 5, 8, 16, 32, 64 (0 unknown)
  int linkWidth = 0;         // lanes (0 unknown)
};

struct GpuInfo {
  GpuVendor vendor = GpuVendor::kUnknown;
  int dev = -1;        // device index as the vendor runtime numbers it
  int sm = 0;          // NVIDIA compute capability x 10 (80, 90, 100); RCCL files put a number here too
  std::string arch;    // AMD gfx name ("gfx90a", "gfx942"); NVIDIA "sm_90"
  std::string model;   // "NVIDIA H100 80GB HBM3", "AMD Instinct MI300X"
  int rank = -1;       // communicator rank using it, when known
  bool gdr = false;
};

struct NicInfo {
  std::string name;    // mlx5_0, eth0, cxi0
  int dev = -1;
  int port = 1;
  double speedMbps = 0;  // 400000 = 400 Gb/s
  double latencyUs = 0;
  uint64_t guid = 0;
  int maxConn = 0;
  bool gdr = false;
};

struct Node {
  NodeType type = NodeType::kCpu;
  CpuInfo cpu;  // kCpu
  PciInfo pci;  // kPciBridge, kGpu, kNic (a NIC without a PCI function, e.g. virtual, leaves it empty), kNvSwitch
  GpuInfo gpu;  // kGpu
  NicInfo nic;  // kNic
};

struct Link {
  int from = -1;  // node indices
  int to = -1;
  LinkType type = LinkType::kPcie;
  int count = 1;          // bonded links (NVLink, xGMI)
  double bwGBs = 0;       // total bandwidth of the bundle, GB/s per direction (see link_bw.h)
};

// A node's description for a person: "GPU0 (0000:18:00.0)", "NIC mlx5_0", "CPU1 (NUMA 1)".
struct System {
  std::vector<Node> nodes;
  std::vector<Link> links;  // undirected: one entry per bundle
  std::string source;       // "detected", "file:/path.xml", "detected+file:/path.xml"
  int version = 1;          // 1: NCCL's file format, 2: RCCL's

  int addNode(const Node& n);
  void addLink(int a, int b, LinkType type, int count, double bwGBs);
  // Indices of nodes of one type, in node order (GPUs sorted by dev where known).
  std::vector<int> nodesOfType(NodeType t) const;
  // Node by PCI bus id (normalised), -1 when absent.
  int findByBusId(const std::string& busId) const;
  std::string describe(int node) const;
};

// "0000:18:00.0" from "18:00.0", "0000:18:00", "0000:18:00.0" (any case); "" if unparsable.
std::string normaliseBusId(const std::string& text);

}  // namespace topo
}  // namespace weft

#endif  // WEFT_TOPOLOGY_SYSTEM_H_
