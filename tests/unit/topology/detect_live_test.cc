// Detection on the machine the tests run on (a GPU-less VM in CI): what /sys shows must be in
// the model. Nothing here names this machine's bus ids or interfaces.
#include <gtest/gtest.h>
#include <sched.h>

#include <cstdlib>
#include <filesystem>
#include <set>
#include <sstream>

#include "topology/detect.h"
#include "topology/detect_sources.h"

namespace weft {
namespace topo {
namespace {

namespace fs = std::filesystem;

// CPUs named by an NCCL-style affinity ("0000000f,ffffffff"), most significant word first.
std::set<int> cpusOfAffinity(const std::string& text) {
  std::vector<uint32_t> words;
  std::stringstream ss(text);
  std::string w;
  while (std::getline(ss, w, ',')) words.push_back(static_cast<uint32_t>(std::strtoul(w.c_str(), nullptr, 16)));
  std::set<int> cpus;
  for (size_t i = 0; i < words.size(); ++i) {
    uint32_t word = words[words.size() - 1 - i];
    for (int b = 0; b < 32; ++b) {
      if (word & (1u << b)) cpus.insert(static_cast<int>(i * 32 + b));
    }
  }
  return cpus;
}

class DetectLive : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!fs::exists("/sys/devices")) GTEST_SKIP() << "no /sys here";
    ASSERT_TRUE(detectSystem(&system_, &report_).isOk());
  }
  System system_;
  DetectReport report_;
};

TEST_F(DetectLive, CpuNodesCoverThisProcessesCpus) {
  std::vector<int> cpus = system_.nodesOfType(NodeType::kCpu);
  ASSERT_GE(cpus.size(), 1u) << report_.format();
  std::set<int> covered;
  for (int c : cpus) {
    const CpuInfo& info = system_.nodes[c].cpu;
    EXPECT_FALSE(info.affinity.empty()) << system_.describe(c);
    EXPECT_GE(info.numaId, 0);
    EXPECT_FALSE(info.arch.empty());
    std::set<int> mine = cpusOfAffinity(info.affinity);
    covered.insert(mine.begin(), mine.end());
  }
  cpu_set_t set;
  CPU_ZERO(&set);
  ASSERT_EQ(sched_getaffinity(0, sizeof(set), &set), 0);
  for (int c = 0; c < CPU_SETSIZE; ++c) {
    if (CPU_ISSET(c, &set)) {
      EXPECT_TRUE(covered.count(c)) << "CPU " << c << " is in no CPU node's affinity";
    }
  }
  // One CPU node per NUMA node with CPUs, when sysfs lists NUMA nodes.
  std::vector<detect::NumaDomain> numa;
  if (detect::readSysfsNuma("", &numa)) {
    EXPECT_EQ(cpus.size(), numa.size());
  }
}

TEST_F(DetectLive, PciFunctionsAppearWithTheirBusIds) {
  // The functions the primary source keeps: hwloc's when it ran, else sysfs's important ones.
  detect::Inventory inv;
  std::set<std::string> expected;
  const DetectSourceResult* hw = report_.find("hwloc");
  ASSERT_NE(hw, nullptr);
  if (hw->state == SourceState::kUsed) {
    ASSERT_EQ(detect::readHwloc(&inv).state, SourceState::kUsed);
    for (const detect::PciFunction& f : inv.pci) expected.insert(f.busId);
  } else {
    ASSERT_TRUE(detect::readSysfsPci("", &inv.pci));
    for (const detect::PciFunction& f : inv.pci) {
      if (detect::isImportantPciClass(f.pciClass)) expected.insert(f.busId);
    }
  }
  for (const std::string& busId : expected) {
    // Every function a source reports is one the kernel lists.
    EXPECT_TRUE(fs::exists("/sys/bus/pci/devices/" + busId)) << busId;
    int n = system_.findByBusId(busId);
    ASSERT_GE(n, 0) << busId << " missing from the model\n" << report_.format();
    EXPECT_NE(system_.nodes[n].type, NodeType::kCpu);
    // Every function is attached: some link reaches it.
    bool linked = false;
    for (const Link& l : system_.links) linked |= l.from == n || l.to == n;
    EXPECT_TRUE(linked) << busId;
  }
  // And the other way: every PCI node of the model is a real function.
  for (const Node& node : system_.nodes) {
    if (node.type != NodeType::kCpu && !node.pci.busId.empty() && node.type != NodeType::kNvSwitch) {
      EXPECT_TRUE(fs::exists("/sys/bus/pci/devices/" + node.pci.busId)) << node.pci.busId;
    }
  }
}

TEST_F(DetectLive, NetworkInterfacesAppearAsNics) {
  std::error_code ec;
  for (fs::directory_iterator it("/sys/class/net", ec), end; !ec && it != end; it.increment(ec)) {
    std::string name = it->path().filename().string();
    if (name == "lo" || !fs::exists(it->path() / "device")) continue;  // virtual interfaces
    std::string busId = detect::pciFunctionOfSysfsLink((it->path() / "device").string());
    bool found = false;
    for (int n : system_.nodesOfType(NodeType::kNic)) {
      const Node& nic = system_.nodes[n];
      // Its own NIC node, or the RDMA port it belongs to (ib0 of mlx5_0).
      found |= nic.nic.name == name || (!busId.empty() && nic.pci.busId == busId);
    }
    EXPECT_TRUE(found) << name << " (" << busId << ") is not a NIC of the model\n" << report_.format();
  }
  for (int n : system_.nodesOfType(NodeType::kNic)) EXPECT_GT(system_.nodes[n].nic.speedMbps, 0);
}

// Without hwloc (a machine where it fails), sysfs alone finds the same CPUs, GPUs and NICs.
TEST_F(DetectLive, SysfsAloneFindsTheSameDevices) {
  DetectOptions o;
  o.useHwloc = false;
  System s;
  DetectReport rep;
  ASSERT_TRUE(detectSystem(o, &s, &rep).isOk());
  EXPECT_EQ(rep.find("hwloc")->state, SourceState::kSkipped);
  EXPECT_EQ(s.nodesOfType(NodeType::kCpu).size(), system_.nodesOfType(NodeType::kCpu).size());
  for (NodeType t : {NodeType::kGpu, NodeType::kNic}) {
    std::vector<int> a = s.nodesOfType(t), b = system_.nodesOfType(t);
    ASSERT_EQ(a.size(), b.size()) << nodeTypeName(t) << "\n" << rep.format() << report_.format();
    for (size_t i = 0; i < a.size(); ++i) {
      EXPECT_EQ(s.describe(a[i]), system_.describe(b[i]));
      EXPECT_EQ(s.nodes[a[i]].pci.busId, system_.nodes[b[i]].pci.busId);
    }
  }
  EXPECT_EQ(s.nodes.front().cpu.affinity, system_.nodes.front().cpu.affinity);
}

TEST_F(DetectLive, ReportListsEverySource) {
  for (const char* name : {"hwloc", "sysfs", "nvml", "rocm-kfd", "rocm-smi"}) {
    const DetectSourceResult* r = report_.find(name);
    ASSERT_NE(r, nullptr) << name;
    EXPECT_FALSE(r->detail.empty()) << name;
  }
  EXPECT_EQ(report_.find("sysfs")->state, SourceState::kUsed);
}

}  // namespace
}  // namespace topo
}  // namespace weft
