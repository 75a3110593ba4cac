// Model machines built in C++ as System objects: the machines of
// ../shared/reference/formats.md section 7, with their PCI switches, NICs, NVSwitches and
// link counts. Tests of paths, search and the cost model run on them; weft-topo can show what
// Weft would do on a machine we do not have. The XML fixtures of the same machines
// (tests/fixtures/topo/) describe the same hardware.
//
// Bus ids, device ids and the PCI tree follow the fixtures, so that reading a fixture gives the
// same path matrix as the builder (cloudVm is not the fixture's cloud skeleton: that one is a
// PCI-only file for merging with detection).
//
// Conventions every builder follows, as a topology file would be read (topo_file.h):
//  - one kCpu node per NUMA domain, and a kSmp link between every pair of them;
//  - a PCIe switch is one kPciBridge (its upstream port and downstream ports collapsed, as
//    NCCL's files show it) linked to its CPU; a two-level switch is a bridge under a bridge;
//  - each device's kPcie link to its parent has bw::pcie of the device's own speed and width;
//  - NVLink and xGMI bundles carry count x the per-link figure of link_bw.h;
//  - GPU dev indices follow the vendor runtime's order (PCI bus order).
#ifndef WEFT_TOPOLOGY_MACHINES_H_
#define WEFT_TOPOLOGY_MACHINES_H_

#include "topology/system.h"

namespace weft {
namespace topo {
namespace machines {

// DGX/HGX H100: 8 H100 SXM (sm 90), 18 NVLink4 links each spread 5+4+4+5 over 4 NVSwitches;
// 2 Intel sockets; 4 PCIe Gen5 switches, each with 2 GPUs and 2 ConnectX-7 400 Gb/s NICs
// (mlx5_0..7, NIC i beside GPU i); GPUs 0-3 on socket 0, 4-7 on socket 1.
System dgxH100();

// DGX A100: 8 A100 SXM (sm 80), 12 NVLink3 links each, 2 to each of 6 NVSwitches (their
// management functions behind a bridge of socket 1); 2 AMD Rome sockets; 4 PCIe Gen4 switches,
// each with 2 GPUs and 2 ConnectX-6 200 Gb/s NICs.
System dgxA100();

// 8 x MI300X (gfx942) platform: 7 xGMI links per GPU, one to every other GPU; each GPU behind
// its own PCIe Gen5 switch shared with one 400 Gb/s NIC; 2 AMD Genoa sockets, 4 GPUs each.
System mi300x();

// MI250X node (Frontier-like): 4 packages x 2 GCDs (gfx90a). The GCDs of a package share 4
// xGMI links; between packages (0,6) (1,3) (2,4) (5,7) have 2 links and (0,2) (1,7) (3,5) (4,6)
// one, so every GCD has 7 links and the best ring, 0 1 3 2 4 5 7 6, runs at 2 links. One AMD
// socket in 4 NUMA domains (NPS4), each with one package behind a Gen4 switch with one 200 Gb/s
// Slingshot NIC, as on Frontier: NUMA 0 GCDs 4-5 (cxi0), 1 GCDs 2-3, 2 GCDs 6-7, 3 GCDs 0-1.
System mi250x();

// PCIe-only server: `sockets` Intel sockets, `switchesPerSocket` PCIe Gen4 switches per
// socket, `gpusPerSwitch` GPUs (L40S, no NVLink) under each, one 100 Gb/s NIC on its own root
// port of socket 0. GPUs under one switch are PIX, under two switches of one socket NODE,
// across sockets SYS.
System pcieServer(int sockets, int switchesPerSocket, int gpusPerSwitch);
// The 4-GPU server: 4 A100 PCIe, 2 per Gen4 switch, one switch per Intel socket; a 100 Gb/s NIC
// on socket 0's root complex (PHB from GPUs 0-1) and a 25 Gb/s bond without a PCI function on
// socket 1.
System pcie4Gpu();

// Cloud VM with 8 H100 SXM: flat PCI (GPUs and NICs straight under the root complex, no
// switches), NUMA hidden (one CPU node), the NVSwitches shown as the vendor library reports
// them (one NVSwitch node without a PCI function, 18 links per GPU), 8 x 400 Gb/s NIC VFs.
System cloudVm();

// A node of `nGpus` H100s on an NVSwitch (one switch node, 18 links each), one Intel socket,
// each GPU behind its own Gen5 switch with one 400 Gb/s NIC; for tests that need other GPU
// counts (1..16).
System nvswitchNode(int nGpus);

}  // namespace machines
}  // namespace topo
}  // namespace weft

#endif  // WEFT_TOPOLOGY_MACHINES_H_
