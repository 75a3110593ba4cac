#include "topology/system.h"

#include <algorithm>
#include <cctype>
#include <cstdio>

namespace weft {
namespace topo {

const char* nodeTypeName(NodeType t) {
  switch (t) {
    case NodeType::kCpu: return "cpu";
    case NodeType::kPciBridge: return "pci";
    case NodeType::kGpu: return "gpu";
    case NodeType::kNic: return "nic";
    case NodeType::kNvSwitch: return "nvswitch";
  }
  return "unknown";
}

const char* linkTypeName(LinkType t) {
  switch (t) {
    case LinkType::kNvLink: return "nvlink";
    case LinkType::kXgmi: return "xgmi";
    case LinkType::kPcie: return "pcie";
    case LinkType::kC2c: return "c2c";
    case LinkType::kSmp: return "smp";
    case LinkType::kNet: return "net";
  }
  return "unknown";
}

int System::addNode(const Node& n) {
  nodes.push_back(n);
  return static_cast<int>(nodes.size()) - 1;
}

void System::addLink(int a, int b, LinkType type, int count, double bwGBs) {
  Link l;
  l.from = a;
  l.to = b;
  l.type = type;
  l.count = count;
  l.bwGBs = bwGBs;
  links.push_back(l);
}

std::vector<int> System::nodesOfType(NodeType t) const {
  std::vector<int> out;
  for (int i = 0; i < static_cast<int>(nodes.size()); ++i) {
    if (nodes[i].type == t) out.push_back(i);
  }
  if (t == NodeType::kGpu) {
    std::stable_sort(out.begin(), out.end(), [&](int a, int b) {
      int da = nodes[a].gpu.dev < 0 ? 1 << 30 : nodes[a].gpu.dev;
      int db = nodes[b].gpu.dev < 0 ? 1 << 30 : nodes[b].gpu.dev;
      return da < db;
    });
  }
  return out;
}

int System::findByBusId(const std::string& busId) const {
  std::string want = normaliseBusId(busId);
  if (want.empty()) return -1;
  for (int i = 0; i < static_cast<int>(nodes.size()); ++i) {
    if (nodes[i].type != NodeType::kCpu && nodes[i].pci.busId == want) return i;
  }
  return -1;
}

std::string System::describe(int node) const {
  const Node& n = nodes[static_cast<size_t>(node)];
  char text[160];
  switch (n.type) {
    case NodeType::kCpu:
      std::snprintf(text, sizeof(text), "CPU%d (NUMA %d)", n.cpu.numaId < 0 ? node : n.cpu.numaId, n.cpu.numaId);
      break;
    case NodeType::kGpu:
      std::snprintf(text, sizeof(text), "GPU%d (%s)", n.gpu.dev, n.pci.busId.c_str());
      break;
    case NodeType::kNic:
      std::snprintf(text, sizeof(text), "NIC %s", n.nic.name.empty() ? n.pci.busId.c_str() : n.nic.name.c_str());
      break;
    case NodeType::kNvSwitch:
      std::snprintf(text, sizeof(text), "NVSwitch (%s)", n.pci.busId.c_str());
      break;
    case NodeType::kPciBridge:
      std::snprintf(text, sizeof(text), "PCI bridge %s", n.pci.busId.c_str());
      break;
  }
  return text;
}

std::string normaliseBusId(const std::string& text) {
  // Accept [domain:]bus:device[.function] in hex.
  unsigned domain = 0, bus = 0, dev = 0, fn = 0;
  std::string t = text;
  std::transform(t.begin(), t.end(), t.begin(), ::tolower);
  char tail = 0;
  if (std::sscanf(t.c_str(), "%x:%x:%x.%x%c", &domain, &bus, &dev, &fn, &tail) == 4) {
  } else if (std::sscanf(t.c_str(), "%x:%x:%x%c", &domain, &bus, &dev, &tail) == 3) {
    fn = 0;
  } else if (std::sscanf(t.c_str(), "%x:%x.%x%c", &bus, &dev, &fn, &tail) == 3) {
    domain = 0;
  } else {
    return "";
  }
  if (domain > 0xffff || bus > 0xff || dev > 0x1f || fn > 7) return "";
  char out[32];
  std::snprintf(out, sizeof(out), "%04x:%02x:%02x.%x", domain, bus, dev, fn);
  return out;
}

}  // namespace topo
}  // namespace weft
