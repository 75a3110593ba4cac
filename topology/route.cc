// Routes between two ranks (route.h).
#include "topology/route.h"

#include <algorithm>
#include <cctype>

namespace weft {
namespace topo {
namespace {

constexpr const char* kLevelNames[] = {"LOC", "NVL", "PIX", "PXB", "PHB", "SYS"};

// The least P2P level that lets a path of type `t` use peer access; false for NET / DIS.
bool levelOfPath(PathType t, P2pLevel* out) {
  switch (t) {
    case PathType::kLoc:
      *out = P2pLevel::kLoc;
      return true;
    case PathType::kNvl:
    case PathType::kXgmi:
    case PathType::kNvb:
      *out = P2pLevel::kNvl;
      return true;
    case PathType::kPix:
      *out = P2pLevel::kPix;
      return true;
    case PathType::kPxb:
      *out = P2pLevel::kPxb;
      return true;
    case PathType::kPhb:
    case PathType::kNode:  // NCCL has no NODE: its PHB covers paths between host bridges of one CPU
      *out = P2pLevel::kPhb;
      return true;
    case PathType::kSys:
      *out = P2pLevel::kSys;
      return true;
    default:
      return false;
  }
}

std::string describePath(const Path& p) {
  switch (p.type) {
    case PathType::kNvl:
      return "NVLink (" + pathLabel(p) + ")";
    case PathType::kXgmi:
      return "xGMI (" + pathLabel(p) + ")";
    case PathType::kNvb:
      return "NVLink/xGMI through another GPU (NVB)";
    case PathType::kSys:
      return "PCIe across CPU sockets (SYS)";
    default:
      return std::string("PCIe (") + pathTypeName(p.type) + ")";
  }
}

}  // namespace

const char* routeKindName(RouteKind k) {
  switch (k) {
    case RouteKind::kP2p:
      return "p2p";
    case RouteKind::kShm:
      return "shm";
    case RouteKind::kStaged:
      return "staged";
    case RouteKind::kNet:
      return "net";
  }
  return "?";
}

const char* p2pLevelName(P2pLevel l) { return kLevelNames[static_cast<int>(l)]; }

bool parseP2pLevel(const std::string& text, P2pLevel* out) {
  std::string t = text;
  std::transform(t.begin(), t.end(), t.begin(), [](unsigned char c) { return std::toupper(c); });
  for (int i = 0; i < 6; ++i) {
    if (t == kLevelNames[i] || t == std::to_string(i)) {
      *out = static_cast<P2pLevel>(i);
      return true;
    }
  }
  return false;
}

P2pLevel defaultP2pLevel(const System& host) {
  for (int cpu : host.nodesOfType(NodeType::kCpu)) {
    const CpuInfo& c = host.nodes[static_cast<size_t>(cpu)].cpu;
    const bool arm = c.arch == "arm64" || c.arch == "aarch64";
    if (arm || c.vendor == "GenuineIntel") return P2pLevel::kPxb;
  }
  return P2pLevel::kSys;
}

P2pLevel chooseP2pLevel(const std::string& setting, const System& host, std::string* warning) {
  warning->clear();
  P2pLevel level = defaultP2pLevel(host);
  if (setting.empty() || parseP2pLevel(setting, &level)) return level;
  *warning = "WEFT_P2P_LEVEL=" + setting + " is not one of LOC, NVL, PIX, PXB, PHB, SYS (or 0..5); using " +
             p2pLevelName(level) + ", the default for this machine's CPUs";
  return level;
}

namespace {

// "; GPU-direct allowed (...)" or "; GPU-direct not allowed: ..." for a net route between GPUs.
std::string gpuDirectVerdict(const RouteEnd& a, const RouteEnd& b, P2pLevel gdrLevel, bool* allowed) {
  *allowed = false;
  for (const RouteEnd* e : {&a, &b}) {
    P2pLevel needed = P2pLevel::kSys;
    if (e->nic.empty() || !levelOfPath(e->nicPath, &needed)) {
      return "; GPU-direct not allowed: rank " + std::to_string(e->rank) + "'s GPU-to-NIC path is unknown";
    }
    if (static_cast<int>(needed) > static_cast<int>(gdrLevel)) {
      return "; GPU-direct not allowed: rank " + std::to_string(e->rank) + "'s GPU reaches NIC " + e->nic +
             " through " + pathTypeName(e->nicPath) + ", beyond GDR level " + p2pLevelName(gdrLevel);
    }
  }
  *allowed = true;
  return std::string("; GPU-direct allowed (GPU-to-NIC ") + pathTypeName(a.nicPath) + " and " +
         pathTypeName(b.nicPath) + " within GDR level " + p2pLevelName(gdrLevel) +
         "), though the network transports stage device data through host memory";
}

}  // namespace

Route route(const RouteEnd& a, const RouteEnd& b, const Path* path, P2pLevel level, P2pLevel gdrLevel) {
  Route r;
  if (a.host != b.host) {
    r.kind = RouteKind::kNet;
    r.reason = "different hosts";
    if (!a.nic.empty() || !b.nic.empty()) {
      r.reason += "; out through NIC " + (a.nic.empty() ? std::string("(none)") : a.nic) + ", in through NIC " +
                  (b.nic.empty() ? std::string("(none)") : b.nic);
    }
    if (a.gpu >= 0 && b.gpu >= 0) r.reason += gpuDirectVerdict(a, b, gdrLevel, &r.gpuDirect);
    return r;
  }
  if (a.gpu < 0 || b.gpu < 0) {
    r.kind = RouteKind::kShm;
    r.reason = a.gpu < 0 && b.gpu < 0 ? "host memory ranks on one host" : "a host memory rank and a GPU rank on one host";
    return r;
  }
  if (a.gpu == b.gpu) {
    r.kind = RouteKind::kP2p;
    r.reason = "the same GPU";
    return r;
  }
  if (!a.seesOther || !b.seesOther) {
    r.kind = RouteKind::kStaged;
    r.reason = "rank " + std::to_string(a.seesOther ? b.rank : a.rank) +
               "'s process does not see the peer's GPU (another CUDA_VISIBLE_DEVICES?): no peer access";
    return r;
  }
  if (path == nullptr) {
    // GPUs the model does not place (an emulated device, a runtime that saw more than detection):
    // the runtime's answer to "can these peers access each other" is all there is.
    r.kind = RouteKind::kP2p;
    r.reason = "the topology does not place these GPUs: peer access where the runtime allows it";
    return r;
  }
  P2pLevel needed = P2pLevel::kSys;
  if (!levelOfPath(path->type, &needed)) {
    r.kind = RouteKind::kStaged;
    r.reason = std::string("no path between the GPUs in the topology (") + pathTypeName(path->type) + ")";
    return r;
  }
  const bool within = static_cast<int>(needed) <= static_cast<int>(level);
  r.kind = within ? RouteKind::kP2p : RouteKind::kStaged;
  r.reason = describePath(*path) + (within ? " within" : " beyond") + " P2P level " + p2pLevelName(level);
  return r;
}

}  // namespace topo
}  // namespace weft
