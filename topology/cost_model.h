// The cost model: how long a collective takes on a searched topology, per algorithm, protocol
// and channel count, and the choice that minimises it (the tuner's answer). The same model fed
// a topology file predicts a machine we do not have; weft-topo prints those predictions.
//
// Time = host launch (unless the call is captured in a graph) + kernel base latency
//        + steps x alpha (per-step latency of the links crossed, per protocol)
//        + bytes moved per rank / effective bandwidth.
// The effective bandwidth comes from the search's ring and tree rates (link bandwidths from
// link_bw.h through paths.h and search.h), capped per channel, times the protocol's efficiency:
//   LL      a flag in every 8-byte line: half of each line is payload, so 50% of the link; one
//           store per line and no fence, so a small alpha.
//   Simple  a flag per slot: the whole slot is payload, but each slot costs a memory fence and a
//           flag the receiver must see (fenceUs) before the next slot can reuse the buffer,
//           so a larger alpha and an efficiency of slot time / (slot time + fence) at the
//           channel's rate: 512 KiB slots at 11.6 GB/s per channel (370.8 GB/s over 32
//           channels) take 45 us each, so 1 us of fence leaves 97.8%; at 24 GB/s, 95.6%. This
//           one factor, the same for every vendor, is the only efficiency applied to the
//           links' usable bandwidths of link_bw.h.
// Every constant is in CostParams with its source; nothing names a machine or a vendor.
//
// Calibration check (tests/unit/topology/cost_model_test.cc, ring all-reduce busbw, Simple, 32
// channels, on the machines of machines.h): 8xH100 1 GiB 360.5 GB/s vs published 365-370
// (-1.9%); 8xA100 1 GiB 235.6 vs ~230 (+2.4%); 8xMI300X 1 GiB 327.4 vs 315-320 (+3.1%), 128 MiB
// 314.7 vs 295 (+6.7%), 8 MiB 188.7 vs 175 (+7.9%); 2 x 8xH100 with 8x400G NICs 1 GiB 384.8
// vs 370-385 (+1.9%). Small all-reduce on 8xH100 (ring LL, 8 bytes): 15.0 us, 7.0 captured --
// equal to the published midpoints by construction, since alpha is derived from them.
//
// Reduction arithmetic is not added: a GPU's HBM (2-5 TB/s) reads two inputs and writes one
// far faster than any link delivers them, and the kernels overlap it with the transfers.
#ifndef WEFT_TOPOLOGY_COST_MODEL_H_
#define WEFT_TOPOLOGY_COST_MODEL_H_

#include <cstdint>
#include <string>

#include "base/coll_traits.h"
#include "topology/paths.h"
#include "topology/search.h"

namespace weft {
namespace topo {

// The collectives and algorithms priced are those of base/coll_traits.h (coll::CollKind,
// coll::Algo, with their names and which algorithm runs which collective); the model prices
// ring, tree and pairwise (not yet recursive doubling: +infinity). Bus bandwidth uses
// coll::collBusBwFactor.
enum class Protocol { kLL, kSimple };

const char* algoLabel(coll::Algo a);   // coll::algoName capitalised as NCCL prints it: "Ring", "Tree"
const char* protocolName(Protocol p);  // "LL", "Simple"

struct CostParams {
  // Published small all-reduce latency on 8 GPUs (formats.md section 6): 13-17 us without graph
  // capture, 6-8 us with it; the midpoints. What capture removes is the host's enqueue and
  // launch, so the host launch cost is their difference (8 us).
  double publishedUncapturedUs = 15.0;
  double publishedCapturedUs = 7.0;
  int publishedRanks = 8;
  // Device side of an empty collective: kernel start to completion seen by the stream, ~2-3 us
  // for a kernel launched from a graph on current GPUs.
  double kernelBaseUs = 2.8;
  // LL per-step latency over NVLink / xGMI is derived from the captured figure: the published
  // 8-GPU all-reduce is a ring of 2(n-1) = 14 steps, so (7 - 2.8) / 14 = 0.3 us (see
  // alphaLLFabricUs()). Other paths from typical one-way latencies of a posted write seen by a
  // poller:
  double alphaLLPixUs = 0.5;   // through one PCIe switch
  double alphaLLPxbUs = 0.6;   // each further bridge ~0.1 us
  double alphaLLHostUs = 0.8;  // through the root complex (PHB, NODE)
  double alphaLLSysUs = 1.2;   // plus the socket interconnect
  // Network: the NIC's one-way latency when the model gives it, else 2 us (InfiniBand / RoCE
  // small messages take 1-2 us one way), plus the proxy thread's poll-and-post turn.
  double netLatencyUs = 2.0;
  double proxyUs = 1.0;
  // Simple: data, then a system-scope fence, then the flag -- two ordered transactions and a
  // fence where LL has one store: alpha = 2 x alpha_LL + fence.
  double fenceUs = 1.0;
  // Simple's slot: NCCL's 4 MiB BUFFSIZE (formats.md section 5) over its 8 steps, the setting
  // the published figures were measured with.
  double slotBytes = 512.0 * 1024;
  // What one channel (one thread block on one SM / CU) moves at most: NCCL fills NVLink4's
  // ~370 GB/s with 16 channels, ~23 GB/s each.
  double channelGBs = 24.0;
  int maxChannels = 32;
  // All-to-all posts one send and one receive per peer; each costs the kernel / proxy a turn.
  double perPeerUs = 0.2;
  // LL's payload fraction: 4 data bytes per 8-byte line.
  double llPayload = 0.5;

  double hostLaunchUs() const { return publishedUncapturedUs - publishedCapturedUs; }
  double alphaLLFabricUs() const { return (publishedCapturedUs - kernelBaseUs) / (2.0 * (publishedRanks - 1)); }
};

struct CostInput {
  const Cluster* cluster = nullptr;
  const SearchResult* topo = nullptr;
  coll::CollKind collective = coll::CollKind::kAllReduce;
  coll::Algo algorithm = coll::Algo::kRing;
  Protocol protocol = Protocol::kSimple;
  int64_t bytes = 0;  // nccl-tests' size: the larger of the send and receive buffers, per rank
  int channels = 0;   // 0: params.maxChannels
  bool graphCaptured = false;
  CostParams params;
};

// Predicted time in microseconds; +infinity when the algorithm cannot run the collective (a
// tree all-gather, say: coll::algoSupported) or the model does not price it.
double predictTime(const CostInput& in);

struct Prediction {
  coll::Algo algorithm = coll::Algo::kRing;
  Protocol protocol = Protocol::kSimple;
  int channels = 1;
  double timeUs = 0;
  double algBwGBs = 0;           // bytes / time
  double busBwGBs = 0;           // algBw x coll::collBusBwFactor
  std::string describe() const;  // "Ring/Simple x16: 5212.3 us, algbw 206.0 GB/s, busbw 360.5 GB/s"
};

// One configuration's prediction with its bandwidths filled in.
Prediction predict(const CostInput& in);

// The tuner: the algorithm, protocol and channel count with the least predicted time; within
// 1% of the least, the fewest channels (each channel occupies an SM / CU).
Prediction predictBest(const Cluster& cluster, const SearchResult& topo, coll::CollKind c, int64_t bytes,
                       bool graphCaptured = false, const CostParams& params = CostParams());

// The same over a subset: the algorithms whose bit (1 << coll::Algo) is in `algos`, channel
// counts from minChannels to maxChannels (0: params.maxChannels). timeUs is +infinity when the
// model prices none of them.
struct BestOptions {
  bool graphCaptured = false;
  int minChannels = 1;
  int maxChannels = 0;
  uint32_t algos = ~0u;
  CostParams params;
};
Prediction predictBestOf(const Cluster& cluster, const SearchResult& topo, coll::CollKind c, int64_t bytes,
                         const BestOptions& options);

// ---- Host memory: ranks whose buffers live in host memory (no GPU), one thread per rank ----
//
// Time = call + hops on the critical path x alpha + this rank's copy and reduce work + lanes,
// with the hops and bytes those of the algorithm's schedule (HostWork below).
//   alpha  one message from send to the peer seeing it: through a shared-memory FIFO on one host,
//          a socket across hosts.
//   work   what the busiest rank's one thread does with the bytes: a copy into each slot it sends,
//          a copy (or a reduce of two inputs) out of each slot it receives, at the copy / reduce
//          rates -- in-cache rates up to cacheBytes of traffic per call, memory rates beyond.
//          Across hosts a hop's bytes also cross the socket at netGBs.
//   lanes  every channel's lanes (the schedule's lanes per channel: the double binary tree's two)
//          are FIFOs the thread polls per step (channels split the data but not the thread:
//          one CPU moves every byte), and each lane's FIFO adds to the capacity (refill).
//   share  more ranks than CPUs on a host (ranksPerCpu > 1) stretch all of the above alike,
//          and each hop of a ring then costs sharedChainHopUs more.
//   refill with more ranks than CPUs, what a rank sends beyond the capacity of its FIFOs
//          (fifoBytes per channel) waits for the reader to free slots: one wait (refillUs, the
//          reader being scheduled) per FIFO-full. More channels, more capacity, fewer waits.
//          A reader with a CPU of its own polls and frees each slot as it reads it: no wait
//          beyond the copies already counted (2 ranks at real-time priority: one channel
//          level with four at 8 MiB, 4-30 % ahead at 1, 2, 4 and 16 MiB; perf/RESULTS.md,
//          "Medium sizes on the Intel VM").
// Calibrated on the 2-vCPU development VM (AMD EPYC, shared with other builds, load 10-14),
// from weft-perf allreduce -np 2 and -np 4 with WEFT_ALGO=ring|tree|doubling forced, taking the
// fastest of 6 timings per size (3 runs, in and out of place) as the undisturbed cost:
// recursive doubling on 2 ranks gives the per-message cost (0.3 us at 8 B) and the in-cache
// copy + reduce rates (12 us at 64 KiB, 66 us at 512 KiB), the 256 MiB ring the memory rates.
// The socket constants are not calibrated here (no second host). perf/RESULTS.md ("Tuner: cost
// model against the size rule") has the figures.
struct HostCostParams {
  double callUs = 0.3;       // validation, plan lookup, executor set-up per call
  double alphaShmUs = 0.5;   // a message through a shared-memory FIFO
  double alphaNetUs = 25.0;  // a message over a socket (not calibrated here)
  double copyGBs = 16.0;     // memcpy into / out of a slot, in cache
  double reduceGBs = 8.0;    // out = a op b (float sum), in cache
  double memCopyGBs = 4.0;   // the same beyond the caches
  double memReduceGBs = 3.0;
  double cacheBytes = 4 << 20;  // traffic per call that stays in cache
  double netGBs = 1.5;          // one socket stream (not calibrated here)
  double laneUs = 0.5;          // one more FIFO polled per step
  double fifoBytes = 1 << 20;   // one connection's FIFO (WEFT_BUFFSIZE's default)
  double refillUs = 300;        // one wait for a descheduled reader to free a FIFO
  // A ring all-reduce of two ranks on one host pays for its two dependent exchanges: once
  // measured at 35 us up to 8 KiB (a back-off sleep since gone), then 10 us (session 11, AMD
  // EPYC VM: switch at 512 KiB). Re-measured in session 12 (Intel Xeon VM, weft-bench-mpi at
  // real-time priority, WEFT_ALGO forced): the ring is ahead from 48 KiB (64 KiB: 5.0-5.9 GB/s
  // against doubling's 4.3-4.6; 128-256 KiB: 5.1-5.7 against 4.6-5.0), but behind from 24 to
  // 40 KiB (about 2 against 4 GB/s: steps under ~22 KiB run at half speed there, for doubling
  // too below 24 KiB). 2.5 us puts the switch between 64 and 128 KiB, clear of that band
  // (perf/RESULTS.md, "Medium sizes on the Intel VM"). Charged per hop after the first on two
  // ranks (which only the all-reduces have: the ring's and the tree's, whose two-rank schedule
  // is the ring's steps; doubling's one exchange pays none).
  double pairHopUs = 2.5;
  // A ring's hop when ranks share CPUs, beyond alpha. The all-reduce's 2(n - 1) steps are one
  // chain of dependencies around all the ranks, so each step waits for the ranks of every CPU to
  // be switched in in turn; the tree's and doubling's exchanges went at their modelled cost.
  // Fitted in session 13 (Intel Xeon VM, 4 ranks on 2 vCPUs, weft-bench-mpi with WEFT_ALGO
  // forced, 4 series): the ring 31-64 us at 32 KiB against the tree's 19-30, and 34-101 at 64
  // KiB against 32-56 (doubling 42-98); the ring ahead from 128 KiB (64-82 against 73-144).
  // 1.1 us put doubling to 8 KiB, the tree from 16 to 64 KiB and the ring from 128 KiB
  // (perf/RESULTS.md, "Four ranks on two vCPUs"), with the tree priced by a formula that
  // charged it more than its schedule does. Re-fitted in session 19 with each algorithm priced
  // by its schedule's work (AMD EPYC VM, quiet, weft-perf -np 4 with WEFT_ALGO forced, 3 runs):
  // doubling ahead to 64 KiB (15.9-17.0 us against the ring's 18.6-42 and the tree's 23.8-30),
  // the ring from 128 KiB (30.5-31.4 in two runs of three, against doubling's 32.0-33.2 and the
  // tree's 31.7-54.7; 49-50 against 53-62 at 256 KiB). 1.5 us puts doubling to 64 KiB and the
  // ring from 128 KiB; the tree, which both VMs measured level with doubling at 32-64 KiB, is
  // chosen nowhere. Charged to every algorithm whose steps chain through every rank
  // (coll::AlgoTraits::chainsEveryRank: the ring, in every collective; measured on the
  // all-reduce).
  double sharedChainHopUs = 1.5;
};

// What the busiest rank does in one call of a host algorithm, each field the most of any rank:
// the messages on the critical path, one after another (hops), and the bytes it copies into
// or out of slots, reduces out of slots and sends. The schedules count them
// (collectives/traffic.h scheduleWork); the model takes them as plain numbers and never sees a
// schedule.
struct HostWork {
  double hops = 0;
  double copies = 0;
  double reduces = 0;
  double sent = 0;
  // FIFO lanes per channel the schedule runs on one rank (the double binary tree's two trees:
  // 2); the executor polls each in turn, and each has a FIFO of its own.
  double lanes = 1;
};

// Where the tuner gets a HostWork per collective, algorithm and size (collectives/traffic.h
// ScheduleWorkSource, over the schedules). `bytes` is the call's count x element size, as
// Tuner::choose takes it; false when it has no schedule for the pair.
class HostWorkSource {
 public:
  virtual ~HostWorkSource() = default;
  virtual bool work(coll::CollKind kind, coll::Algo algo, int nRanks, int64_t bytes, HostWork* out) = 0;
};

struct HostCostInput {
  int nRanks = 1;
  int nHosts = 1;
  coll::CollKind collective = coll::CollKind::kAllReduce;
  coll::Algo algorithm = coll::Algo::kRing;
  int64_t bytes = 0;  // nccl-tests' size: the larger of the send and receive buffers, per rank
  HostWork work;      // what the algorithm's schedule makes the busiest rank do at this size
  int channels = 1;
  // Ranks per CPU on the busiest host (1 or less: each rank has a CPU of its own). Above 1 the
  // ranks take turns on the CPUs: every term but the call's fixed cost stretches by it (the
  // same factor for every algorithm, so it changes predictions, not choices).
  double ranksPerCpu = 1;
  HostCostParams params;
};

// Predicted time in microseconds from in.work (a HostWorkSource's for this collective,
// algorithm and size); +infinity when the algorithm cannot run the collective.
double predictHostTime(const HostCostInput& in);

}  // namespace topo
}  // namespace weft

#endif  // WEFT_TOPOLOGY_COST_MODEL_H_
