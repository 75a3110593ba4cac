// mergeTopology: what detection found combined with a topology file, the file winning.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>

#include "topo_file_test_util.h"
#include "topology/link_bw.h"
#include "topology/topo_file.h"

namespace weft {
namespace topo {
namespace {

using testing::canonical;
using testing::countLinks;
using testing::countNodes;
using testing::fixtureDir;

int addCpu(System* s, int numa) {
  Node n;
  n.type = NodeType::kCpu;
  n.cpu.numaId = numa;
  n.cpu.vendor = "AuthenticAMD";
  n.cpu.affinity = "ff";
  return s->addNode(n);
}

int addGpu(System* s, const std::string& busId, int dev, int sm, int parent) {
  Node n;
  n.type = NodeType::kGpu;
  n.pci.busId = busId;
  n.pci.pciClass = 0x030200;
  n.pci.vendor = 0x10de;
  n.pci.linkSpeedGTs = 8;
  n.pci.linkWidth = 16;
  n.gpu.vendor = GpuVendor::kNvidia;
  n.gpu.dev = dev;
  n.gpu.sm = sm;
  n.gpu.arch = "sm_" + std::to_string(sm);
  n.gpu.model = "NVIDIA A100-SXM4-80GB";
  n.gpu.gdr = true;
  int i = s->addNode(n);
  if (parent >= 0) s->addLink(i, parent, LinkType::kPcie, 1, bw::pcie(8, 16));
  return i;
}

int addNic(System* s, const std::string& busId, const std::string& name, int parent) {
  Node n;
  n.type = NodeType::kNic;
  n.pci.busId = busId;
  n.pci.pciClass = 0x020700;
  n.nic.name = name;
  n.nic.speedMbps = 200000;
  n.nic.dev = 0;
  int i = s->addNode(n);
  if (parent >= 0) s->addLink(i, parent, LinkType::kPcie, 1, bw::pcie(16, 16));
  return i;
}

// What detection sees in a cloud VM: GPUs and NICs flat under the CPUs, no switches.
System detectedCloudVm() {
  System d;
  d.source = "detected";
  int cpus[4];
  for (int numa = 0; numa < 4; ++numa) cpus[numa] = addCpu(&d, numa);
  Node sw;
  sw.type = NodeType::kNvSwitch;
  sw.pci.busId = "0000:c4:00.0";
  int nvs = d.addNode(sw);
  char bus[32];
  for (int i = 1; i <= 8; ++i) {
    std::snprintf(bus, sizeof(bus), "%04x:00:00.0", i);
    int g = addGpu(&d, bus, i - 1, 80, cpus[(i - 1) / 2]);
    d.addLink(g, nvs, LinkType::kNvLink, 12, 12 * bw::nvlinkPerLink(80));
    std::snprintf(bus, sizeof(bus), "%04x:00:00.0", 0x100 + i);
    addNic(&d, bus, "mlx5_" + std::to_string(i - 1), cpus[(i - 1) / 2]);
  }
  addNic(&d, "0000:00:08.0", "eth0", cpus[0]);  // not in the file
  return d;
}

System fileFromText(const std::string& text) {
  System f;
  Status st = parseTopologyXml(text, "f.xml", &f);
  EXPECT_TRUE(st.isOk()) << st.message();
  return f;
}

TEST(TopoFileMerge, SkeletonPlacesWhatDetectionFound) {
  System file;
  std::string path = fixtureDir("topo/cloud-vm-skeleton.xml");
  ASSERT_TRUE(readTopologyFile(path, &file).isOk());
  System m;
  ASSERT_TRUE(mergeTopology(detectedCloudVm(), file, &m).isOk());
  EXPECT_EQ(m.source, "detected+file:" + path);
  EXPECT_EQ(m.version, 1);
  EXPECT_EQ(countNodes(m, NodeType::kCpu), 4);
  EXPECT_EQ(countNodes(m, NodeType::kPciBridge), 4);
  EXPECT_EQ(countNodes(m, NodeType::kGpu), 8);
  EXPECT_EQ(countNodes(m, NodeType::kNic), 9);
  EXPECT_EQ(countNodes(m, NodeType::kNvSwitch), 1);
  EXPECT_EQ(countLinks(m, LinkType::kPcie), 4 + 8 + 8 + 1);
  EXPECT_EQ(countLinks(m, LinkType::kNvLink), 8);
  EXPECT_EQ(countLinks(m, LinkType::kSmp), 6);
  PciTree tree = pciTree(m);
  for (int g : m.nodesOfType(NodeType::kGpu)) {
    const Node& n = m.nodes[static_cast<size_t>(g)];
    EXPECT_EQ(n.gpu.sm, 80) << "from detection";
    EXPECT_EQ(n.gpu.model, "NVIDIA A100-SXM4-80GB");
    EXPECT_EQ(n.pci.vendor, 0x10deu);
    EXPECT_EQ(n.pci.linkSpeedGTs, 16.0) << "the file's link speed wins";
    // Under the file's bridge of the right NUMA domain, not flat under the CPU.
    int bridge = tree.parent[static_cast<size_t>(g)];
    ASSERT_GE(bridge, 0);
    EXPECT_EQ(m.nodes[static_cast<size_t>(bridge)].type, NodeType::kPciBridge);
    int cpu = tree.parent[static_cast<size_t>(bridge)];
    ASSERT_GE(cpu, 0);
    EXPECT_EQ(m.nodes[static_cast<size_t>(cpu)].cpu.numaId, n.gpu.dev / 2);
    EXPECT_EQ(m.nodes[static_cast<size_t>(cpu)].cpu.affinity, file.nodes[static_cast<size_t>(cpu)].cpu.affinity);
    int pcieLinks = 0;
    for (const Link& l : m.links) pcieLinks += l.type == LinkType::kPcie && (l.from == g || l.to == g);
    EXPECT_EQ(pcieLinks, 1) << "detection's flat link is replaced by the file's";
  }
  int eth0 = -1;
  for (int n : m.nodesOfType(NodeType::kNic)) {
    if (m.nodes[static_cast<size_t>(n)].nic.name == "eth0") eth0 = n;
    EXPECT_FALSE(m.nodes[static_cast<size_t>(n)].nic.name.empty()) << "every placeholder was filled";
  }
  ASSERT_GE(eth0, 0);
  EXPECT_EQ(m.nodes[static_cast<size_t>(tree.parent[static_cast<size_t>(eth0)])].cpu.numaId, 0);
  // The merged system is itself a valid file.
  System back;
  Status st = parseTopologyXml(writeTopologyXml(m, 1), "merged.xml", &back);
  ASSERT_TRUE(st.isOk()) << st.message();
  EXPECT_EQ(countNodes(back, NodeType::kGpu), 8);
  EXPECT_EQ(countLinks(back, LinkType::kNvLink), 8);
}

TEST(TopoFileMerge, FileAttributesAndLinksWin) {
  System d;
  int cpu = addCpu(&d, 0);
  int g0 = addGpu(&d, "0000:18:00.0", 0, 80, cpu);
  int g1 = addGpu(&d, "0000:19:00.0", 1, 80, cpu);
  addGpu(&d, "0000:1a:00.0", 2, 80, cpu);
  d.addLink(g0, g1, LinkType::kNvLink, 2, 2 * bw::nvlinkPerLink(80));
  System f = fileFromText(
      "<system version=\"2\"><cpu numaid=\"0\" vendor=\"GenuineIntel\">"
      "<pci busid=\"0000:18:00.0\" class=\"0x030200\"><gpu dev=\"3\" sm=\"90\" rank=\"5\" gdr=\"0\">"
      "<nvlink target=\"0000:19:00.0\" count=\"4\"/></gpu></pci>"
      "<pci busid=\"0000:19:00.0\" class=\"0x030200\"><gpu/></pci>"
      "<pci busid=\"0000:1a:00.0\"/>"
      "</cpu></system>");
  System m;
  ASSERT_TRUE(mergeTopology(d, f, &m).isOk());
  EXPECT_EQ(m.version, 2);
  ASSERT_EQ(m.nodes.size(), 4u);
  const Node& a = m.nodes[static_cast<size_t>(m.findByBusId("0000:18:00.0"))];
  EXPECT_EQ(a.gpu.sm, 90);
  EXPECT_EQ(a.gpu.dev, 3);
  EXPECT_EQ(a.gpu.rank, 5);
  EXPECT_EQ(a.gpu.arch, "sm_90") << "derived from the file's sm when it was read";
  EXPECT_EQ(a.gpu.model, "NVIDIA A100-SXM4-80GB") << "the file leaves it out";
  EXPECT_TRUE(a.gpu.gdr) << "true on either side";
  EXPECT_EQ(m.nodes[0].cpu.vendor, "GenuineIntel");
  EXPECT_EQ(m.nodes[0].cpu.affinity, "ff");
  // A <pci> of no class is whatever detection says it is.
  const Node& b = m.nodes[static_cast<size_t>(m.findByBusId("0000:1a:00.0"))];
  EXPECT_EQ(b.type, NodeType::kGpu);
  EXPECT_EQ(b.gpu.sm, 80);
  EXPECT_EQ(m.nodes[static_cast<size_t>(m.findByBusId("0000:19:00.0"))].gpu.dev, 1);
  ASSERT_EQ(countLinks(m, LinkType::kNvLink), 1);
  for (const Link& l : m.links) {
    if (l.type == LinkType::kNvLink) {
      EXPECT_EQ(l.count, 4);
    }
  }
  EXPECT_EQ(countLinks(m, LinkType::kPcie), 3);
}

TEST(TopoFileMerge, FileTypeWinsOverDetection) {
  System d;
  int cpu = addCpu(&d, 0);
  Node br;
  br.type = NodeType::kPciBridge;
  br.pci.busId = "0000:30:00.0";
  d.addLink(d.addNode(br), cpu, LinkType::kPcie, 1, 24);
  System f = fileFromText("<system><cpu numaid=\"0\"><pci busid=\"0000:30:00.0\" class=\"0x020000\"/></cpu></system>");
  System m;
  ASSERT_TRUE(mergeTopology(d, f, &m).isOk());
  ASSERT_EQ(m.nodes.size(), 2u);
  EXPECT_EQ(m.nodes[1].type, NodeType::kNic);
}

TEST(TopoFileMerge, NicPortsMatchByNameThenByBusId) {
  System d;
  int cpu = addCpu(&d, 0);
  addNic(&d, "0000:40:00.0", "mlx5_0", cpu);
  addNic(&d, "0000:40:00.0", "mlx5_1", cpu);
  addNic(&d, "0000:41:00.0", "mlx5_2", cpu);
  System f = fileFromText(
      "<system><cpu numaid=\"0\">"
      "<pci busid=\"0000:40:00.0\" class=\"0x020700\"><nic><net name=\"mlx5_1\" port=\"2\"/></nic></pci>"
      "<pci busid=\"0000:41:00.0\" class=\"0x020700\"><nic><net name=\"ib_renamed\"/></nic></pci>"
      "</cpu></system>");
  System m;
  ASSERT_TRUE(mergeTopology(d, f, &m).isOk());
  ASSERT_EQ(countNodes(m, NodeType::kNic), 3);
  std::vector<std::string> names;
  for (int n : m.nodesOfType(NodeType::kNic)) {
    const NicInfo& nic = m.nodes[static_cast<size_t>(n)].nic;
    names.push_back(nic.name);
    if (nic.name == "mlx5_1") {
      EXPECT_EQ(nic.port, 2);
    }
    EXPECT_EQ(nic.speedMbps, 200000);
  }
  std::sort(names.begin(), names.end());
  EXPECT_EQ(names, (std::vector<std::string>{"ib_renamed", "mlx5_0", "mlx5_1"}));
  EXPECT_EQ(countLinks(m, LinkType::kPcie), 3);
}

TEST(TopoFileMerge, OneSideEmptyGivesTheOther) {
  System d = detectedCloudVm();
  System m;
  ASSERT_TRUE(mergeTopology(d, System(), &m).isOk());
  EXPECT_EQ(m.source, "detected+file");
  System dWithSmp = d;
  std::vector<int> cpus = d.nodesOfType(NodeType::kCpu);
  for (size_t i = 0; i < cpus.size(); ++i) {
    for (size_t j = i + 1; j < cpus.size(); ++j)
      dWithSmp.addLink(cpus[i], cpus[j], LinkType::kSmp, 1, bw::smp("AuthenticAMD"));
  }
  EXPECT_EQ(canonical(m), canonical(dWithSmp));
  System f;
  ASSERT_TRUE(readTopologyFile(fixtureDir("topo/dgx-h100.xml"), &f).isOk());
  ASSERT_TRUE(mergeTopology(System(), f, &m).isOk());
  EXPECT_EQ(canonical(m), canonical(f));
}

TEST(TopoFileMerge, SingleCpusMatchWhateverTheirNumaIds) {
  System d;
  addCpu(&d, 0);
  System f = fileFromText("<system><cpu arch=\"arm64\"/></system>");
  System m;
  ASSERT_TRUE(mergeTopology(d, f, &m).isOk());
  ASSERT_EQ(m.nodes.size(), 1u);
  EXPECT_EQ(m.nodes[0].cpu.numaId, 0);
  EXPECT_EQ(m.nodes[0].cpu.arch, "arm64");
}

}  // namespace
}  // namespace topo
}  // namespace weft
