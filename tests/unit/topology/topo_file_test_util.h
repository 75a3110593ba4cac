// Helpers shared by the topology-file tests: where the fixtures are, and a System in a canonical
// form (independent of node order) so that two Systems can be compared for equivalence.
#ifndef WEFT_TESTS_UNIT_TOPOLOGY_TOPO_FILE_TEST_UTIL_H_
#define WEFT_TESTS_UNIT_TOPOLOGY_TOPO_FILE_TEST_UTIL_H_

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "topology/system.h"

namespace weft {
namespace topo {
namespace testing {

// tests/fixtures/<sub>, an absolute path (WEFT_TESTS_DIR: tests/CMakeLists.txt).
inline std::string fixtureDir(const std::string& sub) { return std::string(WEFT_TESTS_DIR) + "/fixtures/" + sub; }

inline std::string readText(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

inline std::string nodeKey(const System& s, int i) {
  const Node& n = s.nodes[static_cast<size_t>(i)];
  if (n.type == NodeType::kCpu) return "cpu" + std::to_string(n.cpu.numaId);
  if (n.type == NodeType::kNic) return "nic:" + n.pci.busId + "/" + n.nic.name;
  return std::string(nodeTypeName(n.type)) + ":" + n.pci.busId;
}

// Every node with every attribute, every link by its ends' keys; sorted.
inline std::vector<std::string> canonical(const System& s) {
  std::vector<std::string> out;
  char buf[1024];
  for (size_t i = 0; i < s.nodes.size(); ++i) {
    const Node& n = s.nodes[i];
    const CpuInfo& c = n.cpu;
    const PciInfo& p = n.pci;
    const GpuInfo& g = n.gpu;
    const NicInfo& k = n.nic;
    std::snprintf(buf, sizeof(buf),
                  "node %s | cpu %d %s %s %s %d %d %llx | pci %s %x %x %x %x %x %g %d | gpu %d %d %d %s %s %d %d | "
                  "nic %s %d %d %g %g %llx %d %d",
                  nodeKey(s, static_cast<int>(i)).c_str(), c.numaId, c.affinity.c_str(), c.arch.c_str(),
                  c.vendor.c_str(), c.familyId, c.modelId, static_cast<unsigned long long>(c.hostHash), p.busId.c_str(),
                  p.pciClass, p.vendor, p.device, p.subsystemVendor, p.subsystemDevice, p.linkSpeedGTs, p.linkWidth,
                  static_cast<int>(g.vendor), g.dev, g.sm, g.arch.c_str(), g.model.c_str(), g.rank, g.gdr ? 1 : 0,
                  k.name.c_str(), k.dev, k.port, k.speedMbps, k.latencyUs, static_cast<unsigned long long>(k.guid),
                  k.maxConn, k.gdr ? 1 : 0);
    out.push_back(buf);
  }
  for (const Link& l : s.links) {
    std::string a = nodeKey(s, l.from), b = nodeKey(s, l.to);
    if (b < a) std::swap(a, b);
    std::snprintf(buf, sizeof(buf), "link %s %s %s x%d %.4f", a.c_str(), b.c_str(), linkTypeName(l.type), l.count,
                  l.bwGBs);
    out.push_back(buf);
  }
  std::sort(out.begin(), out.end());
  return out;
}

inline int countNodes(const System& s, NodeType t) { return static_cast<int>(s.nodesOfType(t).size()); }

inline int countLinks(const System& s, LinkType t) {
  return static_cast<int>(std::count_if(s.links.begin(), s.links.end(), [&](const Link& l) { return l.type == t; }));
}

}  // namespace testing
}  // namespace topo
}  // namespace weft

#endif  // WEFT_TESTS_UNIT_TOPOLOGY_TOPO_FILE_TEST_UTIL_H_
