// Helpers for the detection tests: fake sysfs trees under tests/fixtures/sysfs/, found from
// this file's path, and small look-ups in a System.
#ifndef WEFT_TESTS_UNIT_TOPOLOGY_DETECT_TEST_UTIL_H_
#define WEFT_TESTS_UNIT_TOPOLOGY_DETECT_TEST_UTIL_H_

#include <string>

#include "topology/system.h"

namespace weft {
namespace topo {
namespace testing {

// tests/fixtures/sysfs/<name>, an absolute path.
inline std::string sysfsFixture(const std::string& name) {
  return std::string(WEFT_TESTS_DIR) + "/fixtures/sysfs/" + name;
}

// Index of the link joining a and b (either direction), -1 when none.
inline int linkBetween(const System& s, int a, int b) {
  for (size_t i = 0; i < s.links.size(); ++i) {
    const Link& l = s.links[i];
    if ((l.from == a && l.to == b) || (l.from == b && l.to == a)) return static_cast<int>(i);
  }
  return -1;
}

inline int nicNamed(const System& s, const std::string& name) {
  for (int i : s.nodesOfType(NodeType::kNic)) {
    if (s.nodes[static_cast<size_t>(i)].nic.name == name) return i;
  }
  return -1;
}

inline int cpuWithNuma(const System& s, int numa) {
  for (int i : s.nodesOfType(NodeType::kCpu)) {
    if (s.nodes[static_cast<size_t>(i)].cpu.numaId == numa) return i;
  }
  return -1;
}

}  // namespace testing
}  // namespace topo
}  // namespace weft

#endif  // WEFT_TESTS_UNIT_TOPOLOGY_DETECT_TEST_UTIL_H_
