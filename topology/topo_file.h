// Topology files: NCCL's <system version="1"> and RCCL's version="2" XML, read into a System,
// written back out (XML or JSON), and merged with what detection found. Callers: src/core
// (WEFT_TOPO_FILE / WEFT_TOPO_DUMP_FILE), weft-topo (--file, --dump), the tests.
//
// What a file becomes (../shared/reference/formats.md, section 2):
//  - <cpu> -> a kCpu node (numaid, affinity, arch, vendor, familyid, modelid, host_hash); every
//    pair of CPUs gets a kSmp link of bw::smp(vendor).
//  - <pci> -> by what it holds, then by its class: with a <gpu> child a kGpu node; class
//    0x0604xx a kPciBridge; with a <nic> child one kNic node per <net> (all sharing the pci
//    element's bus id); class 0x068000 a kNvSwitch; a GPU class (0x03xxxx, 0x12xxxx) without
//    <gpu> a kGpu "placeholder" (gpu.dev -1) and a network class (0x02xxxx) without <nic> a kNic
//    placeholder -- cloud images ship such skeletons and detection fills them in (merge below);
//    any other or missing class a kPciBridge, as NCCL does. Each gets a kPcie link to its parent
//    (the enclosing <pci> node, or the <cpu>) of bw::pcie(link_speed, link_width) of the child.
//  - <nic> directly under <cpu> (a NIC without a PCI function): kNic nodes linked to the CPU
//    with bw::pcie(0, 0). <net> speed goes to NicInfo only: no kNet link is made.
//  - <nvlink target count tclass>: a kNvLink link of count x bw::nvlinkPerLink(sm) to the GPU or
//    NVSwitch with that bus id; a target with tclass 0x068000 that no <pci> element declares
//    becomes a kNvSwitch node (one per distinct bus id). A target that is no bus id with tclass
//    0x068000 is NCCL's placeholder for a switch it cannot name: all such links go to one
//    kNvSwitch node without a PCI function (written back as kNvSwitchPlaceholder). <xgmi>: kXgmi
//    of count x bw::xgmiPerLink(gcn) to the target GPU. Elements of one GPU naming the same far
//    end add up; both ends usually list a GPU-GPU link: one Link is kept per unordered pair and
//    type (the larger count, with a warning, if the ends disagree).
//  - A <pci> switch (bridge or NVSwitch) listed again under the same parent with the same bus id
//    (RCCL writes one per device path through it) is the same node: its children join the
//    first's; attributes the first left out come from the repeat; a value both give differently
//    is an error naming both lines. Any other bus id used twice is an error.
//  - <c2c count bw>: kC2c to the GPU's CPU; bw (MB/s per link, as NCCL writes it) when given,
//    else bw::kC2cPerLink. <pcilink target>: an extra kPcie link between two PCI functions
//    under the same CPU (one joining two CPUs' trees is skipped with a warning).
//  - <gpu> gcn (RCCL) or a non-numeric arch (RCCL's arch is a number, not kept) -> gpu.arch,
//    without HIP's feature suffix ("gfx90a:sramecc+:xnack-" -> "gfx90a");
//    the GPU vendor comes from the PCI vendor id, else a gfx arch (AMD), else NVLink/C2C
//    children or, in a version 1 file, an sm (NVIDIA). NVIDIA GPUs get arch "sm_<sm>".
//  - Extension: <pci> and <nic> directly under <system> are devices attached to no CPU (the
//    writer emits nodes that hang under no CPU this way; NCCL ignores them).
// Missing attributes, and attributes whose value is blank (link_speed=""), take the defaults of
// system.h; unknown elements and attributes are skipped
// (logged at INFO/TRACE). Malformed input -- bad syntax, a value that does not parse, a bus id
// used twice -- is weftInvalidArgument naming the file, the line and what was expected.
#ifndef WEFT_TOPOLOGY_TOPO_FILE_H_
#define WEFT_TOPOLOGY_TOPO_FILE_H_

#include <string>
#include <vector>

#include "base/status.h"
#include "topology/system.h"

namespace weft {
namespace topo {

// Reads and parses the file at `path`; out->source = "file:" + path. `*out` is written only on
// success.
[[nodiscard]] Status readTopologyFile(const std::string& path, System* out);

// Parses file text; messages name `sourceName` ("topo.xml:12: ..."), out->source is
// "file:" + sourceName. `*out` is written only on success.
[[nodiscard]] Status parseTopologyXml(const std::string& text, const std::string& sourceName, System* out);

// The system as a topology file. version 1: NCCL's dialect (no <xgmi>, no gcn: an AMD GPU's
// gfx arch is dropped); version 2: RCCL's (adds both). GPU-GPU links are listed at both ends,
// as NCCL and RCCL write them, sorted by target. A GPU or NIC with nothing to say beyond its
// PCI function is written as a bare <pci> (the skeleton form).
// Kept: the PCI tree (see pciTree), node attributes, NVLink/xGMI/C2C links whose far end has a
// bus id, extra PCIe links between two PCI functions (as <pcilink>). Dropped: kSmp links (the
// reader remakes them), kNet links, other extra PCIe links, bandwidths that differ from what
// the reader derives from the attributes, GpuInfo::model. For a system read from a file,
// parse(write(s)) is s again (the tests check every fixture); for any system read from any
// input, write(parse(write(s))) == write(s) with the same CPUs, GPUs, NICs and NVSwitches (the
// fuzzer, fuzz/topo_file_fuzz.cc, checks that).
std::string writeTopologyXml(const System& system, int version);

// The system as JSON: {"version", "source", "nodes": [{"id", "type", ...attributes}],
// "links": [{"from", "to", "type", "count", "bw"}]}, for weft-topo --json and scripts.
std::string writeTopologyJson(const System& system);

// Detection and a file combined; the file wins.
//  - Nodes match by PCI bus id (NICs by bus id and, when both have one, name; NICs without a
//    bus id by name; an NVSwitch without a bus id, NCCL's placeholder, the other side's one);
//    CPUs by NUMA id (or when each side has exactly one CPU).
//  - A matched node takes the file's type and every attribute the file gives (a value other
//    than system.h's default; gdr is true if either side says so); attributes the file leaves
//    out come from detection. A file node of unknown class (a bridge by default) takes the
//    detected type.
//  - PCI tree (pciTree): a node's parent is the file's where the file gives it one, else
//    detection's (never making a cycle). Other links match by unordered pair and type; the
//    file's count and bandwidth win. Nodes and links found on one side only are kept, except
//    that a GPU's NVLinks to NVSwitches come from the file alone where it lists any (its switch
//    may be NCCL's placeholder where detection names the chips); every pair of CPUs has a kSmp
//    link.
//  - out->version is the file's; out->source is "detected+" + file.source ("detected+file"
//    when the file has none).
[[nodiscard]] Status mergeTopology(const System& detected, const System& file, System* out);

// The PCI tree of a system: a spanning forest of the kPcie links taken in order (a link that
// closes a cycle or would join two CPUs' trees is an extra, a <pcilink>), rooted at the CPUs
// and, for parts no CPU reaches, at their lowest-numbered node. parent[i] is the node above
// node i (-1 at a root), parentLink[i] the index of the link to it. The reader adds tree links
// before <pcilink> extras, so for a System it made, the tree is the file's nesting.
struct PciTree {
  std::vector<int> parent;
  std::vector<int> parentLink;
};
PciTree pciTree(const System& system);

}  // namespace topo
}  // namespace weft

#endif  // WEFT_TOPOLOGY_TOPO_FILE_H_
