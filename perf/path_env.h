// The environment weft-perf sets so that a comparison runs and compares like with like, and the
// data path each library then takes, for the report header. Pure decisions (tested in
// tests/perf without a GPU) plus two helpers that read and write the process environment.
//
// --weft-net: Weft's ranks talk over its network transport even on one host (shared memory and
// GPU peer access off), so that it can be set against NCCL's socket transport. launch.cc sets
// it before the communicator exists.
//
// NCCL and ranks that share a GPU: NCCL refuses two ranks on one GPU ("Duplicate GPU detected").
// From 2.30 NCCL_MULTI_RANK_GPU_ENABLE=1 lifts that; before, a distinct NCCL_HOSTID per process
// makes each rank a host of its own, so NCCL connects them through its socket transport (over
// lo). NCCL_HOSTID is per process, so ranks that are threads of one process cannot use it.
// peer_nccl.cc sets it before NCCL's first init (ncclGetUniqueId / ncclCommInitRank).
#ifndef WEFT_PERF_PATH_ENV_H_
#define WEFT_PERF_PATH_ENV_H_

#include <map>
#include <string>
#include <utility>
#include <vector>

namespace weft::perf {

// The variables of the user's environment a decision reads: name -> value, set ones only (an
// empty value counts as unset).
using EnvSnapshot = std::map<std::string, std::string>;

struct EnvPlan {
  std::vector<std::pair<std::string, std::string>> set;  // to put into the environment, in order
  std::string skip;                // not empty: the library cannot run this way; why, and what to do
  std::string path;                // the path its data takes, for the header; "" when left to the library
  std::vector<std::string> notes;  // "# Note:" lines: variables kept from the environment, advice
};

// The first NCCL version (ncclGetVersion's number: 23000 = 2.30.0) that runs several ranks on
// one GPU when NCCL_MULTI_RANK_GPU_ENABLE=1.
constexpr int kNcclMultiRankGpuVersion = 23000;

// The variables planWeftNet reads (WEFT_P2P_DISABLE, WEFT_SHM_DISABLE, WEFT_SOCKET_IFNAME,
// WEFT_NET).
const std::vector<std::string>& weftNetVariables();

// --weft-net: WEFT_P2P_DISABLE=1 and WEFT_SHM_DISABLE=1 always (the point of the flag; a user's
// other value is overridden, with a note); WEFT_SOCKET_IFNAME=lo and WEFT_NET=socket, as NCCL's
// side uses, unless the user set them (kept, with a note).
EnvPlan planWeftNet(const EnvSnapshot& user);

// What decides NCCL's setup in a run whose ranks may share GPUs.
struct NcclShareQuery {
  bool ranksAreThreads = false;  // several ranks in one process (-t)
  bool gpuShared = false;        // some GPU serves more than one rank of the run
  int ncclVersion = 0;           // ncclGetVersion's number
  int rank = 0;                  // names this process's NCCL_HOSTID
  int nHosts = 1;                // hosts of the run: lo reaches no other
  bool weftNet = false;          // --weft-net: Weft runs its network path
  EnvSnapshot user;              // ncclShareVariables() as the user set them
};

// The variables planNcclSharing reads (NCCL_MULTI_RANK_GPU_ENABLE, NCCL_HOSTID,
// NCCL_SOCKET_IFNAME, NCCL_NET).
const std::vector<std::string>& ncclShareVariables();

// No GPU shared: nothing to set (a note when --weft-net puts Weft on a different path). Shared,
// ranks are threads: skip, saying to run the ranks as processes. Shared, processes, NCCL >= 2.30:
// NCCL_MULTI_RANK_GPU_ENABLE=1. Older: NCCL_HOSTID=weft-perf-rank-<rank>, NCCL_SOCKET_IFNAME=lo
// (on one host) and NCCL_NET=Socket (so that an InfiniBand card or a net plugin is not used
// instead); a note recommends --weft-net when it is not given. A variable the user set is kept,
// with a note.
EnvPlan planNcclSharing(const NcclShareQuery& q);

// The named variables as this process's environment has them.
EnvSnapshot currentEnv(const std::vector<std::string>& names);

// Puts plan.set into this process's environment (overwriting).
void applyEnv(const EnvPlan& plan);

}  // namespace weft::perf

#endif  // WEFT_PERF_PATH_ENV_H_
