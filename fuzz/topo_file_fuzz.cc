// libFuzzer target for the topology-file reader (topology/xml.cc, topology/topo_file*.cc).
// Built and run by scripts/fuzz-topo with clang's -fsanitize=fuzzer,address,undefined; the
// normal build never compiles it. Properties checked beyond "no crash, no sanitizer report":
//  - a refused input is a weftInvalidArgument with a message naming the source;
//  - what parses can be written in both dialects and read back, with the same CPUs, GPUs,
//    NICs and NVSwitches, and writing that again gives the same text;
//  - JSON and a merge of the system with itself work.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "base/log.h"
#include "topology/topo_file.h"

namespace {

using weft::Status;
using weft::topo::NodeType;
using weft::topo::System;

[[noreturn]] void fail(const char* what, const std::string& detail) {
  std::fprintf(stderr, "topo_file_fuzz: %s\n%s\n", what, detail.c_str());
  std::abort();
}

size_t count(const System& s, NodeType t) { return s.nodesOfType(t).size(); }

}  // namespace

extern "C" int LLVMFuzzerInitialize(int* /*argc*/, char*** /*argv*/) {
  // Every log line is formatted (TRACE) but goes nowhere.
  setenv("WEFT_DEBUG", "TRACE", 0);
  setenv("WEFT_DEBUG_FILE", "/dev/null", 0);
  weft::reloadLogSettings();
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string text(reinterpret_cast<const char*>(data), size);
  System s;
  Status st = weft::topo::parseTopologyXml(text, "fuzz.xml", &s);
  if (!st.isOk()) {
    if (st.code() != weftInvalidArgument || st.message().rfind("fuzz.xml", 0) != 0) {
      fail("a refusal that is not a clean invalid-argument error", st.message());
    }
    return 0;
  }
  for (int version = 1; version <= 2; ++version) {
    std::string xml = weft::topo::writeTopologyXml(s, version);
    System back;
    Status again = weft::topo::parseTopologyXml(xml, "rewritten.xml", &back);
    if (!again.isOk()) fail("the writer's output does not parse", again.message() + "\n" + xml);
    for (NodeType t : {NodeType::kCpu, NodeType::kGpu, NodeType::kNic, NodeType::kNvSwitch}) {
      if (count(back, t) != count(s, t)) fail("node count changed in write -> parse", xml);
    }
    std::string xml2 = weft::topo::writeTopologyXml(back, version);
    if (xml2 != xml) fail("writing the re-read system gives different text", xml + "\n----\n" + xml2);
  }
  std::string json = weft::topo::writeTopologyJson(s);
  if (json.empty() || json.front() != '{') fail("JSON output malformed", json);
  System merged;
  if (!weft::topo::mergeTopology(s, s, &merged).isOk()) fail("merge of a system with itself failed", "");
  // Nodes with a bus id match themselves; only those without one can appear twice.
  if (count(merged, NodeType::kGpu) < count(s, NodeType::kGpu) ||
      count(merged, NodeType::kGpu) > 2 * count(s, NodeType::kGpu)) {
    fail("merge with itself lost or invented GPUs", "");
  }
  return 0;
}
