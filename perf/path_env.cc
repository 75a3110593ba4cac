// The environment weft-perf sets for --weft-net and for NCCL on shared GPUs (see path_env.h).
#include "perf/path_env.h"

#include <strings.h>

#include <cstdlib>

namespace weft::perf {
namespace {

// The user's value of name, or nullptr.
const std::string* userValue(const EnvSnapshot& user, const std::string& name) {
  const auto it = user.find(name);
  return it == user.end() ? nullptr : &it->second;
}

// name=value unless the user set name (then theirs stays, with a note); the value in effect.
std::string setUnlessSet(const EnvSnapshot& user, const std::string& name, const std::string& value,
                         const std::string& why, EnvPlan* plan) {
  if (const std::string* v = userValue(user, name)) {
    plan->notes.push_back(name + "=" + *v + " kept from the environment" + why);
    return *v;
  }
  plan->set.emplace_back(name, value);
  return value;
}

}  // namespace

const std::vector<std::string>& weftNetVariables() {
  static const std::vector<std::string> names = {"WEFT_P2P_DISABLE", "WEFT_SHM_DISABLE", "WEFT_SOCKET_IFNAME",
                                                 "WEFT_NET"};
  return names;
}

EnvPlan planWeftNet(const EnvSnapshot& user) {
  EnvPlan plan;
  // The point of the flag: these two are set whatever the environment said.
  for (const char* name : {"WEFT_P2P_DISABLE", "WEFT_SHM_DISABLE"}) {
    const std::string* v = userValue(user, name);
    if (v && *v != "1") plan.notes.push_back(std::string(name) + "=" + *v + " from the environment: --weft-net sets 1");
    plan.set.emplace_back(name, "1");
  }
  const std::string ifname = setUnlessSet(user, "WEFT_SOCKET_IFNAME", "lo", "", &plan);
  const std::string net = setUnlessSet(user, "WEFT_NET", "socket", "", &plan);
  plan.path = "network path (WEFT_P2P_DISABLE=1 WEFT_SHM_DISABLE=1): " +
              (net == "socket" ? std::string("socket transport") : "WEFT_NET=" + net) + " over " + ifname;
  return plan;
}

const std::vector<std::string>& ncclShareVariables() {
  static const std::vector<std::string> names = {"NCCL_MULTI_RANK_GPU_ENABLE", "NCCL_HOSTID", "NCCL_SOCKET_IFNAME",
                                                 "NCCL_NET"};
  return names;
}

EnvPlan planNcclSharing(const NcclShareQuery& q) {
  EnvPlan plan;
  if (!q.gpuShared) {
    if (q.weftNet)
      plan.notes.push_back(
          "with a GPU per rank NCCL uses its own intra-node transports (GPU peer access, shared memory) while Weft "
          "runs its network path (--weft-net): the ratio compares different paths; drop --weft-net to compare "
          "intra-node paths");
    return plan;
  }
  if (q.ranksAreThreads) {
    plan.skip =
        "ranks are threads of one process (-t) and share a GPU; NCCL refuses two ranks on one GPU unless each is a "
        "process of its own with a distinct NCCL_HOSTID (or, from NCCL 2.30, NCCL_MULTI_RANK_GPU_ENABLE=1), which "
        "weft-perf sets per process; run the ranks as processes (-np N, or mpirun -np N) without -t";
    return plan;
  }
  if (q.ncclVersion >= kNcclMultiRankGpuVersion) {
    const std::string v = setUnlessSet(q.user, "NCCL_MULTI_RANK_GPU_ENABLE", "1", "", &plan);
    if (v != "1") plan.notes.back() += " (NCCL refuses ranks that share a GPU unless it is 1)";
    plan.path = "several ranks per GPU (NCCL_MULTI_RANK_GPU_ENABLE=" + v + "), on NCCL's intra-node transports";
    if (q.weftNet)
      plan.notes.push_back(
          "NCCL keeps ranks that share a GPU on its intra-node transports while Weft runs its network path "
          "(--weft-net): the ratio compares different paths; drop --weft-net to compare intra-node paths");
    return plan;
  }
  // Before 2.30: every process a host of its own, so NCCL connects them through its network.
  setUnlessSet(q.user, "NCCL_HOSTID", "weft-perf-rank-" + std::to_string(q.rank),
               " (it must differ between the processes that share a GPU, or NCCL stops with \"Duplicate GPU "
               "detected\")",
               &plan);
  std::string ifname;
  if (q.nHosts == 1 || userValue(q.user, "NCCL_SOCKET_IFNAME")) {
    ifname = setUnlessSet(q.user, "NCCL_SOCKET_IFNAME", "lo", "", &plan);
  } else {
    ifname = "NCCL's default interface";
    plan.notes.push_back("NCCL_SOCKET_IFNAME left unset: the run spans " + std::to_string(q.nHosts) +
                         " hosts, which lo does not reach");
  }
  const std::string net = setUnlessSet(q.user, "NCCL_NET", "Socket", "", &plan);
  const std::string transport =
      strcasecmp(net.c_str(), "Socket") == 0 ? std::string("socket transport") : "NCCL_NET=" + net + " transport";
  const bool ownHostId = userValue(q.user, "NCCL_HOSTID") != nullptr;
  plan.path =
      transport + " over " + ifname + (ownHostId ? " (NCCL_HOSTID from the environment)" : " (NCCL_HOSTID per rank)");
  if (!q.weftNet)
    plan.notes.push_back("NCCL's ranks talk through its " + transport +
                         " while Weft's use shared memory and GPU peer access: add "
                         "--weft-net, which puts Weft on its network path too, for a like-with-like ratio");
  return plan;
}

EnvSnapshot currentEnv(const std::vector<std::string>& names) {
  EnvSnapshot env;
  for (const std::string& n : names) {
    const char* v = std::getenv(n.c_str());
    if (v && *v) env[n] = v;
  }
  return env;
}

void applyEnv(const EnvPlan& plan) {
  for (const auto& [name, value] : plan.set) setenv(name.c_str(), value.c_str(), 1);
}

}  // namespace weft::perf
