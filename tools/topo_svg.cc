// weft-topo --svg; see topo_svg.h. Layout: the PCI tree is drawn as a tidy tree, one slot per
// GPU/NIC leaf, CPUs as bands spanning their subtree, bridges centred over their children, every
// GPU and NIC on one row. Links that are not PCI tree edges (NVLink, xGMI, SMP, C2C) are drawn
// over that frame; the rings get a panel of their own with the GPUs on a circle, where a ring is
// a polygon (on a row of boxes, a ring in PCI order would be a line drawn over itself).
#include "topo_svg.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <map>

#include "topology/paths.h"
#include "topology/topo_file.h"

namespace weft {
namespace tools {

namespace {

using topo::LinkType;
using topo::NodeType;
using topo::System;

constexpr double kSlot = 132;   // horizontal room per leaf
constexpr double kLevel = 110;  // vertical distance between tree levels
constexpr double kTop = 96;     // centre of the CPU row
constexpr double kMargin = 30;
constexpr double kBoxW = 116;
constexpr double kDevH = 54;  // GPU / NIC box height
constexpr double kBridgeH = 36;
constexpr double kCpuH = 46;
constexpr double kRootGap = 70;  // between CPU bands
constexpr double kPi = 3.14159265358979323846;

const char* const kRingColours[] = {"#1f77b4", "#ff7f0e", "#9467bd", "#17becf", "#8c564b", "#e377c2"};
const char kNvColour[] = "#2ca02c";
const char kXgmiColour[] = "#d62728";
const char kPcieColour[] = "#7f7f7f";
const char kSmpColour[] = "#444444";
const char kC2cColour[] = "#9467bd";

std::string fmt(const char* format, double a) {
  char text[64];
  std::snprintf(text, sizeof(text), format, a);
  return text;
}

std::string num(double v) { return fmt("%.1f", v); }

std::string bwText(double gbs) { return gbs >= 10 ? fmt("%.0f GB/s", gbs) : fmt("%.1f GB/s", gbs); }

class Svg {
 public:
  void rect(double x, double y, double w, double h, const std::string& fill, const std::string& stroke, double rx = 6,
            const std::string& extra = "") {
    out_ += "<rect x=\"" + num(x) + "\" y=\"" + num(y) + "\" width=\"" + num(w) + "\" height=\"" + num(h) + "\" rx=\"" +
            num(rx) + "\" fill=\"" + fill + "\" stroke=\"" + stroke + "\"" + extra + "/>\n";
  }
  void text(double x, double y, const std::string& s, int size, const std::string& anchor = "middle",
            const std::string& extra = "") {
    out_ += "<text x=\"" + num(x) + "\" y=\"" + num(y) + "\" font-size=\"" + std::to_string(size) +
            "\" text-anchor=\"" + anchor + "\"" + extra + ">" + xmlEscape(s) + "</text>\n";
  }
  void path(const std::string& d, const std::string& stroke, double width, const std::string& extra = "") {
    out_ += "<path d=\"" + d + "\" fill=\"none\" stroke=\"" + stroke + "\" stroke-width=\"" + num(width) + "\"" +
            extra + "/>\n";
  }
  void raw(const std::string& s) { out_ += s; }
  const std::string& str() const { return out_; }

 private:
  std::string out_;
};

struct Pos {
  double x = 0, y = 0;  // centre
  double w = 0, h = 0;
  bool placed = false;
};

class Layout {
 public:
  explicit Layout(const System& sys) : sys_(sys), tree_(topo::pciTree(sys)) {
    size_t n = sys.nodes.size();
    kids_.resize(n);
    pos_.resize(n);
    for (size_t i = 0; i < n; ++i) {
      int p = tree_.parent[i];
      if (p >= 0 && drawn(static_cast<int>(i))) kids_[static_cast<size_t>(p)].push_back(static_cast<int>(i));
    }
    for (auto& k : kids_) std::sort(k.begin(), k.end(), [&](int a, int b) { return childKey(a) < childKey(b); });
    std::vector<int> roots;
    for (size_t i = 0; i < n; ++i)
      if (tree_.parent[i] < 0 && drawn(static_cast<int>(i))) roots.push_back(static_cast<int>(i));
    // CPUs first, by NUMA id; then parts that hang under no CPU.
    std::stable_sort(roots.begin(), roots.end(), [&](int a, int b) {
      bool ca = type(a) == NodeType::kCpu, cb = type(b) == NodeType::kCpu;
      if (ca != cb) return ca;
      return ca && sys.nodes[static_cast<size_t>(a)].cpu.numaId < sys.nodes[static_cast<size_t>(b)].cpu.numaId;
    });
    for (int r : roots) maxDepth(r, type(r) == NodeType::kCpu ? 0 : 1);
    leafLevel_ = std::max(leafLevel_, 1);
    double x = kMargin;
    for (int r : roots) {
      x = place(r, x, type(r) == NodeType::kCpu ? 0 : 1) + kRootGap;  // room for the SMP link
    }
    width_ = std::max(x - kRootGap + kMargin, 2 * kMargin + kSlot);
    roots_ = roots;
  }

  const Pos& at(int node) const { return pos_[static_cast<size_t>(node)]; }
  const std::vector<int>& roots() const { return roots_; }
  const topo::PciTree& tree() const { return tree_; }
  double width() const { return width_; }
  double leafY() const { return kTop + leafLevel_ * kLevel; }

 private:
  NodeType type(int n) const { return sys_.nodes[static_cast<size_t>(n)].type; }
  bool drawn(int n) const { return type(n) != NodeType::kNvSwitch; }
  // Bridges first (they hold the rest), then GPUs by dev, then NICs, each by bus id.
  std::string childKey(int n) const {
    const topo::Node& node = sys_.nodes[static_cast<size_t>(n)];
    char key[64];
    int group = node.type == NodeType::kPciBridge ? 0 : node.type == NodeType::kGpu ? 1 : 2;
    std::snprintf(key, sizeof(key), "%d %06d %s", group, node.type == NodeType::kGpu ? node.gpu.dev + 1 : 0,
                  node.pci.busId.c_str());
    return key;
  }
  bool isLeafDevice(int n) const { return type(n) == NodeType::kGpu || type(n) == NodeType::kNic; }
  void maxDepth(int n, int level) {
    if (isLeafDevice(n)) leafLevel_ = std::max(leafLevel_, level);
    for (int k : kids_[static_cast<size_t>(n)]) maxDepth(k, level + 1);
    if (!isLeafDevice(n)) leafLevel_ = std::max(leafLevel_, level + 1);
  }
  // Places the subtree of n from x; returns the right edge.
  double place(int n, double x, int level) {
    Pos& p = pos_[static_cast<size_t>(n)];
    const std::vector<int>& kids = kids_[static_cast<size_t>(n)];
    double right = x;
    if (kids.empty()) {
      right = x + kSlot;
    } else {
      for (int k : kids) right = place(k, right, level + 1);
    }
    p.x = (x + right) / 2;
    p.y = isLeafDevice(n) ? kTop + leafLevel_ * kLevel : kTop + level * kLevel;
    p.w = type(n) == NodeType::kCpu ? right - x - 8 : kBoxW;
    p.h = type(n) == NodeType::kCpu ? kCpuH : isLeafDevice(n) ? kDevH : kBridgeH;
    p.placed = true;
    return right;
  }

  const System& sys_;
  topo::PciTree tree_;
  std::vector<std::vector<int>> kids_;
  std::vector<Pos> pos_;
  std::vector<int> roots_;
  int leafLevel_ = 0;
  double width_ = 0;
};

std::string cpuTitle(const System& sys, int n) {
  const topo::CpuInfo& c = sys.nodes[static_cast<size_t>(n)].cpu;
  return "CPU " + (c.numaId < 0 ? std::string("?") : std::to_string(c.numaId)) + " (NUMA " +
         (c.numaId < 0 ? std::string("unknown") : std::to_string(c.numaId)) + ")";
}

void drawNode(Svg& svg, const System& sys, const Layout& lay, const topo::PathMatrix& paths, int n) {
  const Pos& p = lay.at(n);
  const topo::Node& node = sys.nodes[static_cast<size_t>(n)];
  double x = p.x - p.w / 2, y = p.y - p.h / 2;
  switch (node.type) {
    case NodeType::kCpu: {
      svg.rect(x, y, p.w, p.h, "#dbe7f5", "#2b5b8a", 8);
      svg.text(p.x, y + 20, cpuTitle(sys, n), 14, "middle", " font-weight=\"bold\"");
      std::string info =
          node.cpu.vendor + (node.cpu.vendor.empty() || node.cpu.arch.empty() ? "" : " ") + node.cpu.arch;
      if (!info.empty()) svg.text(p.x, y + 37, info, 11);
      break;
    }
    case NodeType::kPciBridge:
      svg.rect(x, y, p.w, p.h, "#eeeeee", "#666666", 4);
      svg.text(p.x, y + 15, "PCIe switch", 11, "middle", " font-weight=\"bold\"");
      svg.text(p.x, y + 29, node.pci.busId.empty() ? "bus id unknown" : node.pci.busId, 10);
      break;
    case NodeType::kGpu: {
      auto it = std::find(paths.gpus().begin(), paths.gpus().end(), n);
      int index = static_cast<int>(it - paths.gpus().begin());
      svg.rect(x, y, p.w, p.h, "#e3f3df", "#2c7a2c", 6, " stroke-width=\"1.5\"");
      svg.text(p.x, y + 18, "GPU" + std::to_string(index), 14, "middle", " font-weight=\"bold\"");
      std::string arch = node.gpu.arch.empty() ? (node.gpu.dev < 0 ? "placeholder" : "") : node.gpu.arch;
      if (!arch.empty()) svg.text(p.x, y + 33, arch, 11);
      svg.text(p.x, y + 47, node.pci.busId, 10, "middle", " fill=\"#555555\"");
      break;
    }
    case NodeType::kNic: {
      auto it = std::find(paths.nics().begin(), paths.nics().end(), n);
      int index = static_cast<int>(it - paths.nics().begin());
      svg.rect(x, y, p.w, p.h, "#fdf1dc", "#b06f00", 6, " stroke-width=\"1.5\"");
      svg.text(p.x, y + 18, "NIC" + std::to_string(index) + (node.nic.name.empty() ? "" : " " + node.nic.name), 13,
               "middle", " font-weight=\"bold\"");
      svg.text(p.x, y + 33, node.nic.speedMbps > 0 ? fmt("%g Gb/s", node.nic.speedMbps / 1000) : "speed unknown", 11);
      svg.text(p.x, y + 47, node.pci.busId, 10, "middle", " fill=\"#555555\"");
      break;
    }
    case NodeType::kNvSwitch:
      break;
  }
}

// The PCI tree's edges, drawn as a bus under each parent.
void drawTreeEdges(Svg& svg, const System& sys, const Layout& lay) {
  const topo::PciTree& t = lay.tree();
  for (size_t i = 0; i < sys.nodes.size(); ++i) {
    int parent = t.parent[i];
    if (parent < 0 || !lay.at(static_cast<int>(i)).placed || !lay.at(parent).placed) continue;
    const Pos& c = lay.at(static_cast<int>(i));
    const Pos& p = lay.at(parent);
    double busY = p.y + p.h / 2 + 18;
    double top = c.y - c.h / 2;
    std::string d =
        "M" +
        num(c.x > p.x - p.w / 2 && c.x < p.x + p.w / 2 && sys.nodes[static_cast<size_t>(parent)].type == NodeType::kCpu
                ? c.x
                : p.x) +
        "," + num(p.y + p.h / 2) + " V" + num(busY) + " H" + num(c.x) + " V" + num(top);
    const topo::Link& l = sys.links[static_cast<size_t>(t.parentLink[i])];
    svg.path(d, kPcieColour, 2, " class=\"link-pcie\"");
    if (l.bwGBs > 0) svg.text(c.x + 4, top - 6, bwText(l.bwGBs), 10, "start", " fill=\"#555555\"");
  }
}

double drawNvSwitchBar(Svg& svg, const System& sys, const Layout& lay, const topo::PathMatrix& paths, double y) {
  std::vector<int> switches = sys.nodesOfType(NodeType::kNvSwitch);
  if (switches.empty() || paths.gpus().empty()) return y;
  double x0 = 1e18, x1 = -1e18;
  for (int g : paths.gpus()) {
    x0 = std::min(x0, lay.at(g).x - kBoxW / 2);
    x1 = std::max(x1, lay.at(g).x + kBoxW / 2);
  }
  double barY = y + 70;
  // Each GPU's NVLinks into the fabric, summed over the switches.
  for (int g : paths.gpus()) {
    int count = 0;
    double bw = 0;
    for (const topo::Link& l : sys.links) {
      if (l.type != LinkType::kNvLink) continue;
      int other = l.from == g ? l.to : l.to == g ? l.from : -1;
      if (other < 0 || sys.nodes[static_cast<size_t>(other)].type != NodeType::kNvSwitch) continue;
      count += l.count;
      bw += l.bwGBs;
    }
    if (count == 0) continue;
    const Pos& p = lay.at(g);
    svg.path("M" + num(p.x) + "," + num(p.y + p.h / 2) + " V" + num(barY), kNvColour, 4, " class=\"link-nvlink\"");
    svg.text(p.x + 5, y + 24, "NV" + std::to_string(count), 11, "start", " fill=\"#1d6b1d\" font-weight=\"bold\"");
    svg.text(p.x + 5, y + 38, bwText(bw), 10, "start", " fill=\"#1d6b1d\"");
  }
  svg.rect(x0, barY, x1 - x0, 34, "#c8e6c0", "#2c7a2c", 6, " stroke-width=\"1.5\"");
  std::string label =
      "NVSwitch fabric: " + std::to_string(switches.size()) + " switch" + (switches.size() == 1 ? "" : "es") + " (";
  for (size_t i = 0; i < switches.size() && i < 4; ++i) {
    label += (i ? ", " : "") + sys.nodes[static_cast<size_t>(switches[i])].pci.busId;
  }
  label += switches.size() > 4 ? ", ...)" : ")";
  svg.text((x0 + x1) / 2, barY + 22, label, 13, "middle", " font-weight=\"bold\" fill=\"#1d4d1d\"");
  return barY + 34;
}

// Direct GPU-GPU links (NVLink bridges, xGMI) as arcs under the GPU row; returns the lowest y.
double drawGpuArcs(Svg& svg, const System& sys, const Layout& lay, const topo::PathMatrix& paths, double y) {
  std::vector<const topo::Link*> arcs;
  for (const topo::Link& l : sys.links) {
    if (l.type != LinkType::kNvLink && l.type != LinkType::kXgmi) continue;
    if (sys.nodes[static_cast<size_t>(l.from)].type != NodeType::kGpu ||
        sys.nodes[static_cast<size_t>(l.to)].type != NodeType::kGpu)
      continue;
    arcs.push_back(&l);
  }
  if (arcs.empty()) return y;
  bool uniform = true;
  for (const topo::Link* l : arcs)
    uniform = uniform && l->type == arcs[0]->type && l->count == arcs[0]->count && l->bwGBs == arcs[0]->bwGBs;
  auto gpuIndex = [&](int node) {
    return static_cast<int>(std::find(paths.gpus().begin(), paths.gpus().end(), node) - paths.gpus().begin());
  };
  double lowest = y;
  for (const topo::Link* l : arcs) {
    const Pos& a = lay.at(l->from);
    const Pos& b = lay.at(l->to);
    int ia = gpuIndex(l->from), ib = gpuIndex(l->to);
    // Spread the ends of a GPU's arcs over its box bottom so they do not start at one point.
    double ax = a.x + (ib - ia) * 5.0, bx = b.x + (ia - ib) * 5.0;
    double span = std::fabs(bx - ax);
    double depth = 24 + span * 0.14;
    double cy = y + depth * 2;  // control point: the curve reaches y + depth
    const char* colour = l->type == LinkType::kXgmi ? kXgmiColour : kNvColour;
    double width = std::min(5.0, 1.2 + l->count * 0.6);
    svg.path("M" + num(ax) + "," + num(y) + " Q" + num((ax + bx) / 2) + "," + num(cy) + " " + num(bx) + "," + num(y),
             colour, width,
             std::string(" stroke-opacity=\"0.75\" class=\"link-") + (l->type == LinkType::kXgmi ? "xgmi" : "nvlink") +
                 "\"");
    lowest = std::max(lowest, y + depth);
    if (!uniform) {
      std::string label =
          (l->type == LinkType::kXgmi ? "XGMI" : "NV") + std::to_string(l->count) + " " + bwText(l->bwGBs);
      svg.text((ax + bx) / 2, y + depth + 12, label, 10, "middle",
               std::string(" fill=\"") + colour + "\" stroke=\"#ffffff\" stroke-width=\"3\" paint-order=\"stroke\"");
    }
  }
  lowest += 20;
  if (uniform) {
    const topo::Link* l = arcs[0];
    std::string label = std::to_string(arcs.size()) + " direct " + (l->type == LinkType::kXgmi ? "xGMI" : "NVLink") +
                        " links, each " + (l->type == LinkType::kXgmi ? "XGMI" : "NV") + std::to_string(l->count) +
                        " = " + bwText(l->bwGBs) + " per direction";
    double x0 = lay.at(paths.gpus().front()).x, x1 = lay.at(paths.gpus().back()).x;
    svg.text(
        (x0 + x1) / 2, lowest + 4, label, 13, "middle",
        std::string(" font-weight=\"bold\" fill=\"") + (l->type == LinkType::kXgmi ? kXgmiColour : kNvColour) + "\"");
    lowest += 14;
  }
  return lowest;
}

// SMP links between CPU bands, and C2C links from GPUs to their CPU.
void drawHostLinks(Svg& svg, const System& sys, const Layout& lay) {
  int hiddenSmp = 0;
  for (const topo::Link& l : sys.links) {
    const Pos& a = lay.at(l.from);
    const Pos& b = lay.at(l.to);
    if (!a.placed || !b.placed) continue;
    if (l.type == LinkType::kSmp) {
      // Only between neighbouring bands: the rest would be drawn over them (a note says so).
      const std::vector<int>& roots = lay.roots();
      long ia = std::find(roots.begin(), roots.end(), l.from) - roots.begin();
      long ib = std::find(roots.begin(), roots.end(), l.to) - roots.begin();
      if (std::labs(ia - ib) != 1) {
        ++hiddenSmp;
        continue;
      }
      const Pos& left = a.x < b.x ? a : b;
      const Pos& right = a.x < b.x ? b : a;
      double x0 = left.x + left.w / 2, x1 = right.x - right.w / 2;
      svg.path("M" + num(x0) + "," + num(left.y) + " H" + num(x1), kSmpColour, 3,
               " stroke-dasharray=\"6,4\" class=\"link-smp\"");
      svg.text((x0 + x1) / 2, left.y - 6, "SMP", 10, "middle");
      svg.text((x0 + x1) / 2, left.y + 14, bwText(l.bwGBs), 10, "middle");
    } else if (l.type == LinkType::kC2c) {
      svg.path("M" + num(a.x - 20) + "," + num(a.y) + " L" + num(b.x - 20) + "," + num(b.y), kC2cColour, 4,
               " class=\"link-c2c\"");
      svg.text((a.x + b.x) / 2 - 24, (a.y + b.y) / 2, "C2C " + bwText(l.bwGBs), 10, "end",
               std::string(" fill=\"") + kC2cColour + "\"");
    }
  }
  if (hiddenSmp > 0) {
    svg.text(kMargin, kTop + kCpuH / 2 + 14,
             "(+" + std::to_string(hiddenSmp) + " SMP links between CPUs that are not neighbours here)", 10, "start",
             " fill=\"#555555\"");
  }
}

// The rings: GPUs on a circle, each ring a closed polygon with arrows. Returns the panel height.
double drawRings(Svg& svg, const topo::SearchResult& rings, int nGpus, double x, double y) {
  int drawn = std::min(kMaxRingsDrawn, static_cast<int>(rings.rings.size()));
  if (nGpus < 2 || drawn == 0) return 0;
  const double radius = 150;
  double cx = x + radius + 50, cy = y + 40 + radius + 20;
  svg.text(x, y + 18,
           "Rings (" + std::to_string(drawn) + " of " + std::to_string(rings.rings.size()) +
               " drawn; arrows: the direction data moves)",
           15, "start", " font-weight=\"bold\"");
  auto point = [&](int rank, double r, double* px, double* py) {
    double angle = -kPi / 2 + 2 * kPi * rank / nGpus;
    *px = cx + r * std::cos(angle);
    *py = cy + r * std::sin(angle);
  };
  for (int k = 0; k < drawn; ++k) {
    const topo::Ring& ring = rings.rings[static_cast<size_t>(k)];
    double r = radius - 12 * k;
    std::string d;
    for (size_t i = 0; i < ring.ranks.size(); ++i) {
      double px, py;
      point(ring.ranks[i], r, &px, &py);
      d += (i == 0 ? "M" : " L") + num(px) + "," + num(py);
    }
    d += " Z";
    const char* colour = kRingColours[k % 6];
    svg.path(d, colour, 2.5,
             " stroke-opacity=\"0.85\" stroke-linejoin=\"round\" marker-mid=\"url(#arrow" + std::to_string(k % 6) +
                 ")\" marker-start=\"url(#arrow" + std::to_string(k % 6) + ")\" class=\"ring\"");
  }
  for (int g = 0; g < nGpus; ++g) {
    double px, py;
    point(g, radius + 24, &px, &py);
    svg.raw("<circle cx=\"" + num(px) + "\" cy=\"" + num(py) + "\" r=\"17\" fill=\"#e3f3df\" stroke=\"#2c7a2c\"/>\n");
    svg.text(px, py + 4, std::to_string(g), 12, "middle", " font-weight=\"bold\"");
  }
  // Each ring's order and rate beside the circle.
  double tx = cx + radius + 70, ty = y + 60;
  svg.text(tx, ty - 6, "GPU order (rank = GPU index), rate per direction:", 12, "start");
  for (int k = 0; k < drawn; ++k) {
    const topo::Ring& ring = rings.rings[static_cast<size_t>(k)];
    std::string order;
    for (size_t i = 0; i < ring.ranks.size() && i < 16; ++i) order += (i ? " " : "") + std::to_string(ring.ranks[i]);
    if (ring.ranks.size() > 16) order += " ...";
    double ly = ty + 16 + 22 * k;
    svg.path("M" + num(tx) + "," + num(ly - 4) + " H" + num(tx + 26), kRingColours[k % 6], 3);
    svg.text(tx + 32, ly, "ring " + std::to_string(k) + ": " + order + "  (" + bwText(ring.bwGBs) + ")", 12, "start");
  }
  return 40 + 2 * radius + 60;
}

void drawLegend(Svg& svg, double x, double y) {
  svg.text(x, y + 18, "Legend", 15, "start", " font-weight=\"bold\"");
  struct Item {
    const char* label;
    const char* colour;
    double width;
    const char* dash;
  };
  const Item items[] = {{"NVLink (count, GB/s per direction)", kNvColour, 4, ""},
                        {"xGMI / Infinity Fabric", kXgmiColour, 3, ""},
                        {"PCIe (GB/s per direction)", kPcieColour, 2, ""},
                        {"SMP link between sockets / NUMA", kSmpColour, 3, " stroke-dasharray=\"6,4\""},
                        {"C2C (chip to chip)", kC2cColour, 4, ""}};
  double ly = y + 44;
  for (const Item& it : items) {
    svg.path("M" + num(x) + "," + num(ly - 4) + " H" + num(x + 40), it.colour, it.width, it.dash);
    svg.text(x + 50, ly, it.label, 12, "start");
    ly += 22;
  }
  struct Box {
    const char* label;
    const char* fill;
    const char* stroke;
  };
  const Box boxes[] = {{"CPU / NUMA domain", "#dbe7f5", "#2b5b8a"},
                       {"PCIe switch / bridge", "#eeeeee", "#666666"},
                       {"GPU", "#e3f3df", "#2c7a2c"},
                       {"NIC", "#fdf1dc", "#b06f00"},
                       {"NVSwitch", "#c8e6c0", "#2c7a2c"}};
  for (const Box& b : boxes) {
    svg.rect(x, ly - 13, 40, 16, b.fill, b.stroke, 3);
    svg.text(x + 50, ly, b.label, 12, "start");
    ly += 22;
  }
}

}  // namespace

std::string xmlEscape(const std::string& text) {
  std::string out;
  for (char c : text) {
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&quot;";
        break;
      case '\'':
        out += "&apos;";
        break;
      default:
        // Control characters are not allowed in XML 1.0; drop them.
        if (static_cast<unsigned char>(c) >= 0x20 || c == '\t' || c == '\n') out += c;
    }
  }
  return out;
}

std::string renderTopologySvg(const System& sys, const topo::SearchResult& rings) {
  Layout lay(sys);
  topo::PathMatrix paths = topo::computePaths(sys);
  Svg body;
  drawTreeEdges(body, sys, lay);
  drawHostLinks(body, sys, lay);
  for (size_t i = 0; i < sys.nodes.size(); ++i)
    if (lay.at(static_cast<int>(i)).placed) drawNode(body, sys, lay, paths, static_cast<int>(i));
  double bottom = lay.leafY() + kDevH / 2;
  bottom = drawNvSwitchBar(body, sys, lay, paths, bottom);
  bottom = drawGpuArcs(body, sys, lay, paths, bottom);
  if (paths.gpus().empty()) {
    body.text(kMargin, bottom + 30, "No GPUs in this topology.", 14, "start", " fill=\"#a00000\"");
    bottom += 30;
  }
  double panelY = bottom + 30;
  double ringsH = drawRings(body, rings, static_cast<int>(paths.gpus().size()), kMargin, panelY);
  double legendX = ringsH > 0 ? kMargin + 880 : kMargin;
  drawLegend(body, legendX, panelY);
  double height = panelY + std::max(ringsH, 270.0) + kMargin;
  double width = std::max(lay.width(), legendX + 320);

  // Title: where the topology came from and what it holds.
  std::string gpuKind;
  for (int g : paths.gpus()) {
    const topo::GpuInfo& info = sys.nodes[static_cast<size_t>(g)].gpu;
    gpuKind = info.model.empty() ? info.arch : info.model;
    if (!gpuKind.empty()) break;
  }
  std::string subtitle = std::to_string(paths.gpus().size()) + " GPU" + (paths.gpus().size() == 1 ? "" : "s") +
                         (gpuKind.empty() ? "" : " (" + gpuKind + ")") + ", " + std::to_string(paths.nics().size()) +
                         " NICs, " + std::to_string(sys.nodesOfType(NodeType::kCpu).size()) + " CPUs, " +
                         std::to_string(sys.nodesOfType(NodeType::kNvSwitch).size()) + " NVSwitches";

  Svg doc;
  doc.raw("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n");
  doc.raw("<svg xmlns=\"http://www.w3.org/2000/svg\" version=\"1.1\" width=\"" + num(width) + "\" height=\"" +
          num(height) + "\" viewBox=\"0 0 " + num(width) + " " + num(height) +
          "\" font-family=\"DejaVu Sans, Helvetica, Arial, sans-serif\">\n");
  doc.raw("<title>" + xmlEscape("Weft topology: " + sys.source) + "</title>\n<defs>\n");
  for (int k = 0; k < 6; ++k) {
    doc.raw("<marker id=\"arrow" + std::to_string(k) +
            "\" viewBox=\"0 0 10 10\" refX=\"5\" refY=\"5\" markerWidth=\"7\" markerHeight=\"7\" orient=\"auto\">"
            "<path d=\"M0,1 L10,5 L0,9 z\" fill=\"" +
            kRingColours[k] + "\"/></marker>\n");
  }
  doc.raw("</defs>\n");
  doc.rect(0, 0, width, height, "#ffffff", "none", 0);
  doc.text(kMargin, 30, "Weft topology: " + (sys.source.empty() ? std::string("(unnamed)") : sys.source), 20, "start",
           " font-weight=\"bold\"");
  doc.text(kMargin, 52, subtitle, 14, "start", " fill=\"#333333\"");
  doc.raw(body.str());
  doc.raw("</svg>\n");
  return doc.str();
}

}  // namespace tools
}  // namespace weft
