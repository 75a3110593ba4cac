// Paths: how each GPU reaches every other GPU and every NIC of one System, in the classes a
// person reads in `nvidia-smi topo -m` (../shared/reference/formats.md, section 3), with the
// bottleneck bandwidth, the hop count and the physical resources the path occupies. The ring and
// tree search (search.h) and the cost model (cost_model.h) price traffic with these; weft-topo
// prints the matrix.
//
// Classes, best first:
//   LOC   the same device.
//   NV#   NVLink: a direct bundle of # links, or through NVSwitches, where every GPU reaches every
//         other at its full NVLink bandwidth (# is then the GPU's NVLink count, e.g. NV18).
//   XGMI# a direct xGMI bundle of # links.
//   NVB   through one other GPU over NVLink or xGMI (RCCL models xGMI as NVLink and prints the
//         same name). Used when it is at least as fast as the PCIe path.
//   PIX   PCIe through at most one bridge.
//   PXB   PCIe through several bridges, not the host bridge.
//   PHB   PCIe through the host bridge (the CPU), where one end hangs directly on the CPU.
//   NODE  PCIe between two host bridges (two root ports/complexes) of one NUMA node: the path
//         enters the CPU from one root bridge and leaves through another.
//   SYS   PCIe plus the SMP link between sockets / NUMA domains.
//   NET   different nodes (multi-node; never inside one PathMatrix).
//   DIS   no path.
//
// Resources: each Link is two resources (one per direction) with the link's bandwidth; the
// NVSwitch fabric adds per GPU an "into the fabric" and an "out of the fabric" resource (the
// sum of the GPU's NVLinks to switches; the switches themselves are non-blocking); each NIC
// adds a transmit and a receive resource of its port speed.
//
// A Cluster extends this to the ranks of a job spread over nodes: rank r is the r-th GPU in node
// order (GPUs by dev inside a node); traffic between nodes leaves through the NIC nearest the
// sending GPU and enters through the NIC nearest the receiving one, and the network between
// NICs is taken to be non-blocking.
#ifndef WEFT_TOPOLOGY_PATHS_H_
#define WEFT_TOPOLOGY_PATHS_H_

#include <cstdint>
#include <string>
#include <vector>

#include "topology/system.h"

namespace weft {
namespace topo {

enum class PathType : uint8_t { kLoc, kNvl, kXgmi, kNvb, kPix, kPxb, kPhb, kNode, kSys, kNet, kDis };

// NCCL-style names: "LOC", "NVL", "XGMI", "NVB", "PIX", "PXB", "PHB", "NODE", "SYS", "NET", "DIS".
const char* pathTypeName(PathType t);

struct Path {
  PathType type = PathType::kDis;
  int nLinks = 0;              // NVL/XGMI: links in the bundle (through NVSwitches: the GPU's NVLinks)
  double bwGBs = 0;            // bottleneck, GB/s per direction
  int hops = 0;                // links crossed
  std::vector<int> resources;  // directed resources occupied, in order (see PathMatrix::capacity)
};

class PathMatrix {
 public:
  PathMatrix() = default;

  int nNodes() const { return nNodes_; }
  // The path from system node `from` to `to`; computed for GPU and NIC pairs (others: DIS).
  const Path& at(int from, int to) const { return paths_[static_cast<size_t>(from) * nNodes_ + to]; }
  const std::vector<int>& gpus() const { return gpus_; }  // system node indices, by dev
  const std::vector<int>& nics() const { return nics_; }

  int nResources() const { return static_cast<int>(capacity_.size()); }
  double capacity(int resource) const { return capacity_[static_cast<size_t>(resource)]; }
  // "GPU0->NVSwitch fabric", "pcie 12->3", "NIC mlx5_0 tx": for messages and tests.
  const std::string& resourceName(int resource) const { return resourceNames_[static_cast<size_t>(resource)]; }
  // A NIC's port resources (system node index of the NIC); -1 when `nic` is not a NIC.
  int nicTx(int nic) const;
  int nicRx(int nic) const;
  // A NIC's port speed in GB/s (0 when `nic` is not a NIC).
  double nicGBs(int nic) const;

 private:
  friend PathMatrix computePaths(const System& sys);
  int nNodes_ = 0;
  std::vector<Path> paths_;
  std::vector<int> gpus_, nics_;
  std::vector<double> capacity_;
  std::vector<std::string> resourceNames_;
  std::vector<int> nicPort_;  // per system node: first of its tx/rx pair, or -1
};

PathMatrix computePaths(const System& sys);

// The label a topology matrix prints: "X" for the device itself, "NV18", "XGMI1", "NVB", "PIX",
// "PXB", "PHB", "NODE", "SYS", "NET", "DIS".
std::string pathLabel(const Path& p);
std::string pathLabel(const PathMatrix& m, int from, int to);

// The NIC a GPU should use: the best path class, then the widest path; GPUs that tie over the
// same set of NICs are spread over it in dev order (GPU0 and GPU1 under one switch with two
// NICs get one each). -1 when the system has no NIC.
int nearestNic(const System& sys, const PathMatrix& m, int gpuNode);

// The nodes of one job and how their ranks reach each other.
class Cluster {
 public:
  Cluster() = default;
  // nNodes copies of `node` (paths computed once).
  static Cluster uniform(const System& node, int nNodes);
  // Any nodes; identical ones share their paths.
  static Cluster of(const std::vector<System>& nodes);

  int nRanks() const { return static_cast<int>(rankNode_.size()); }
  int nNodes() const { return static_cast<int>(nodeKind_.size()); }
  int nodeOf(int rank) const { return rankNode_[static_cast<size_t>(rank)]; }
  int firstRank(int node) const { return firstRank_[static_cast<size_t>(node)]; }
  int ranksOn(int node) const { return firstRank_[static_cast<size_t>(node) + 1] - firstRank(node); }
  int kindOf(int node) const { return nodeKind_[static_cast<size_t>(node)]; }
  int nKinds() const { return static_cast<int>(kinds_.size()); }
  const System& system(int node) const { return kinds_[static_cast<size_t>(kindOf(node))]; }
  const PathMatrix& paths(int node) const { return paths_[static_cast<size_t>(kindOf(node))]; }
  // The system node index of the rank's GPU, and of the NIC it uses (-1: the node has none).
  int gpuNode(int rank) const;
  int nicNode(int rank) const;

  // The path class between two ranks: NET across nodes.
  PathType typeBetween(int a, int b) const;
  // A NIC's one-way latency (µs) as the model gives it, 0 when unknown.
  double nicLatencyUs(int rank) const;
  // The resources traffic from rank a to rank b occupies, as cluster-wide ids (appended to
  // *out): the intra-node path, or GPU -> NIC path, NIC tx, far NIC rx, NIC -> GPU path.
  void route(int a, int b, std::vector<int>* out) const;
  // The halves of an inter-node route: the rank's GPU -> NIC path and NIC tx; NIC rx and the
  // NIC -> GPU path. A node without a NIC sends through a 10 Gb/s host port.
  void routeToNetwork(int rank, std::vector<int>* out) const;
  void routeFromNetwork(int rank, std::vector<int>* out) const;
  int nResources() const { return static_cast<int>(capacity_.size()); }
  double capacity(int resource) const { return capacity_[static_cast<size_t>(resource)]; }

 private:
  void finish();
  std::vector<System> kinds_;
  std::vector<PathMatrix> paths_;
  std::vector<std::vector<int>> kindNic_;  // per kind, per local GPU: NIC node or -1
  std::vector<int> nodeKind_, firstRank_, resBase_, rankNode_;
  std::vector<double> capacity_;
};

}  // namespace topo
}  // namespace weft

#endif  // WEFT_TOPOLOGY_PATHS_H_
