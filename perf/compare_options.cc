// Parsing of the comparison benchmarks' own flags (see compare_options.h).
#include "perf/compare_options.h"

#include <cerrno>
#include <cstdlib>
#include <cstring>

#include "perf/compare_report.h"

namespace weft::perf {
namespace {

enum class Key { kLibs, kBlocks, kInPlace, kIface, kHost, kGlooAllreduce, kGlooStore };

struct Spec {
  Key key;
  const char* name;  // without the dashes
  bool takesValue;
};

const Spec kSpecs[] = {
    {Key::kLibs, "libs", true},
    {Key::kBlocks, "blocks", true},
    {Key::kInPlace, "in-place", false},
    {Key::kIface, "iface", true},
    {Key::kHost, "host", true},
    {Key::kGlooAllreduce, "gloo-allreduce", true},
    {Key::kGlooStore, "gloo-store", true},
};

// Applies one flag; returns an error sentence or "".
std::string apply(Key key, const std::string& value, CompareOptions* o) {
  switch (key) {
    case Key::kLibs: {
      std::string error;
      if (!parseLibList(value, knownCompareLibs(), &o->libs, &error)) return "--libs: " + error;
      return "";
    }
    case Key::kBlocks: {
      errno = 0;
      char* end = nullptr;
      const long v = std::strtol(value.c_str(), &end, 10);
      if (value.empty() || errno != 0 || *end != '\0' || v < 1 || v > 1000)
        return "--blocks wants an integer from 1 to 1000, not '" + value + "'";
      o->blocks = static_cast<int>(v);
      return "";
    }
    case Key::kInPlace:
      o->inPlace = true;
      return "";
    case Key::kIface:
      o->peers.iface = value;
      return "";
    case Key::kHost:
      o->peers.host = value;
      return "";
    case Key::kGlooAllreduce:
      o->peers.glooAllreduce = value;  // peer_gloo.cc checks it: the list of algorithms lives there
      return "";
    case Key::kGlooStore:
      o->peers.storeDir = value;
      return "";
  }
  return "";
}

}  // namespace

const std::vector<std::string>& knownCompareLibs() {
  static const std::vector<std::string> names = {"weft", "gloo", "mpi"};
  return names;
}

CompareParse parseCompareOptions(int argc, const char* const* argv, CompareOptions* opts) {
  CompareParse p;
  for (int i = 0; i < argc; ++i) {
    const std::string arg = argv[i];
    const Spec* spec = nullptr;
    std::string value;
    bool inlineValue = false;
    if (i > 0 && arg.rfind("--", 0) == 0) {
      const size_t eq = arg.find('=');
      const std::string name = arg.substr(2, eq == std::string::npos ? std::string::npos : eq - 2);
      for (const Spec& s : kSpecs)
        if (name == s.name) spec = &s;
      if (spec && eq != std::string::npos) {
        value = arg.substr(eq + 1);
        inlineValue = true;
      }
    }
    if (!spec) {
      p.rest.push_back(arg);
      continue;
    }
    if (!spec->takesValue) {
      if (inlineValue) {
        p.ok = false;
        p.error = std::string("--") + spec->name + " takes no value";
        return p;
      }
    } else if (!inlineValue) {
      if (i + 1 >= argc) {
        p.ok = false;
        p.error = std::string("--") + spec->name + " needs a value";
        return p;
      }
      value = argv[++i];
    }
    const std::string error = apply(spec->key, value, opts);
    if (!error.empty()) {
      p.ok = false;
      p.error = error;
      return p;
    }
  }
  return p;
}

std::string compareUsageText() {
  return "  --libs LIST             libraries to compare, the first against the others (default weft,gloo,mpi)\n"
         "  --blocks N              timed blocks per library and size, library order rotating per block (default 4)\n"
         "  --in-place              one buffer for input and output, laid out as nccl-tests' in-place half\n"
         "  --iface NAME            network interface Gloo's TCP transport binds to (default lo)\n"
         "  --host NAME             or the host name / address it binds to (instead of --iface)\n"
         "  --gloo-allreduce ALGO   Gloo's all-reduce: ring (default; gloo::allreduce as PyTorch calls it), bcube,\n"
         "                          legacy-ring or legacy-ring-chunked (the old AllreduceRing* classes)\n"
         "  --gloo-store DIR        where Gloo's ranks meet (a directory every rank sees; default /tmp)\n";
}

}  // namespace weft::perf
