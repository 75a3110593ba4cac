// The registry of peer libraries (see peer_libs.h): a name -> factory map filled before main
// by the registrars of the implementations linked into the binary.
#include "perf/peer_libs.h"

#include <map>

namespace weft::perf {
namespace {

struct Entry {
  PeerFactory factory;
  PeerMemory memory;
};

std::map<std::string, Entry>& registry() {
  static std::map<std::string, Entry> r;  // built on first use, so registrars may run in any order
  return r;
}

}  // namespace

bool registerPeer(const char* name, PeerFactory factory, PeerMemory memory) {
  registry()[name] = {factory, memory};
  return true;
}

std::vector<std::string> builtPeers() {
  std::vector<std::string> names;
  for (const auto& entry : registry()) names.push_back(entry.first);
  return names;
}

PeerStatus makePeer(const std::string& name, const PeerSettings& settings, PeerBootstrap& boot,
                    std::unique_ptr<PeerLib>* out) {
  const auto it = registry().find(name);
  if (it == registry().end())
    return PeerStatus::failure("not built (its library was not found when this binary was configured)");
  if (settings.device >= 0 && it->second.memory == PeerMemory::kHostOnly)
    return PeerStatus::failure(
        "skipped: it runs on host memory only, and this run's buffers are on the GPU "
        "(--mem host includes it)");
  return it->second.factory(settings, boot, out);
}

}  // namespace weft::perf
