// Open MPI (or any MPI) as a peer library (see peer_libs.h): each collective is the one MPI
// call an application would make (MPI_Allreduce, MPI_Allgather, MPI_Reduce_scatter_block,
// MPI_Bcast, MPI_Reduce, MPI_Alltoall, MPI_Sendrecv) on a duplicate of MPI_COMM_WORLD, so its
// traffic never matches the benchmark's own. Which transport MPI uses is the launcher's choice
// (mpirun --mca btl tcp,self); the description reports it.
//
// Not emulated, reported as unsupported instead: the half, bfloat16 and fp8 types (MPI has
// none), avg (MPI has no such op), and counts above INT_MAX (MPI-3's int counts).
#ifndef OMPI_SKIP_MPICXX
#define OMPI_SKIP_MPICXX 1  // the C API only: no C++ bindings
#endif
#ifndef MPICH_SKIP_MPICXX
#define MPICH_SKIP_MPICXX 1
#endif
#include <mpi.h>

#include <climits>
#include <cstdlib>
#include <cstring>
#include <string>

#include "perf/datatypes.h"
#include "perf/peer_libs.h"

namespace weft::perf {
namespace {

bool mpiType(weftDataType_t t, MPI_Datatype* out) {
  switch (t) {
    case weftInt8:
      *out = MPI_INT8_T;
      return true;
    case weftUint8:
      *out = MPI_UINT8_T;
      return true;
    case weftInt32:
      *out = MPI_INT32_T;
      return true;
    case weftUint32:
      *out = MPI_UINT32_T;
      return true;
    case weftInt64:
      *out = MPI_INT64_T;
      return true;
    case weftUint64:
      *out = MPI_UINT64_T;
      return true;
    case weftFloat32:
      *out = MPI_FLOAT;
      return true;
    case weftFloat64:
      *out = MPI_DOUBLE;
      return true;
    default:
      return false;
  }
}

bool mpiOp(weftRedOp_t op, MPI_Op* out) {
  switch (op) {
    case weftSum:
      *out = MPI_SUM;
      return true;
    case weftProd:
      *out = MPI_PROD;
      return true;
    case weftMax:
      *out = MPI_MAX;
      return true;
    case weftMin:
      *out = MPI_MIN;
      return true;
    default:
      return false;
  }
}

// The first line of MPI_Get_library_version ("Open MPI v4.1.4, package: ...": up to the comma).
std::string libraryVersion() {
  char v[MPI_MAX_LIBRARY_VERSION_STRING];
  int len = 0;
  if (MPI_Get_library_version(v, &len) != MPI_SUCCESS) return "MPI";
  std::string s(v, static_cast<size_t>(len));
  const size_t cut = s.find_first_of(",\n");
  return cut == std::string::npos ? s : s.substr(0, cut);
}

class MpiPeer : public PeerLib {
 public:
  explicit MpiPeer(MPI_Comm comm) : comm_(comm) {
    MPI_Comm_rank(comm_, &rank_);
    MPI_Comm_size(comm_, &nranks_);
    // Errors come back as codes, to be reported, instead of aborting the job.
    MPI_Comm_set_errhandler(comm_, MPI_ERRORS_RETURN);
  }
  ~MpiPeer() override { MPI_Comm_free(&comm_); }

  const char* name() const override { return "mpi"; }

  std::string description() const override {
    const char* btl = std::getenv("OMPI_MCA_btl");
    const char* pml = std::getenv("OMPI_MCA_pml");
    const char* ifInclude = std::getenv("OMPI_MCA_btl_tcp_if_include");
    std::string s = libraryVersion() + ", btl " + (btl && *btl ? btl : "(default: shared memory may be used)");
    if (pml && *pml) s += std::string(", pml ") + pml;
    if (ifInclude && *ifInclude) s += std::string(", btl_tcp_if_include ") + ifInclude;
    return s;
  }

  std::string unsupported(Collective coll, weftDataType_t type, weftRedOp_t op) const override {
    MPI_Datatype t;
    MPI_Op o;
    if (!mpiType(type, &t)) return std::string("MPI has no ") + typeName(type) + " type";
    if (collectiveReduces(coll) && !mpiOp(op, &o)) return std::string("MPI has no ") + opName(op) + " operation";
    return "";
  }

  PeerStatus run(const PeerCall& c) override {
    MPI_Datatype t;
    MPI_Op op = MPI_SUM;
    if (!mpiType(c.type, &t) || (collectiveReduces(c.coll) && !mpiOp(c.op, &op)))
      return PeerStatus::failure(unsupported(c.coll, c.type, c.op));
    if (c.count > static_cast<size_t>(INT_MAX))
      return PeerStatus::failure("MPI counts are ints: " + std::to_string(c.count) + " elements is too many");
    const int rc = call(c, t, op);
    if (rc == MPI_SUCCESS) return PeerStatus::success();
    char msg[MPI_MAX_ERROR_STRING];
    int len = 0;
    MPI_Error_string(rc, msg, &len);
    return PeerStatus::failure(std::string(collectiveName(c.coll)) + ": " + std::string(msg, static_cast<size_t>(len)));
  }

 private:
  int call(const PeerCall& c, MPI_Datatype t, MPI_Op op) {
    const int n = static_cast<int>(c.count);
    const size_t blockBytes = c.count * typeSize(c.type);
    char* recv = static_cast<char*>(c.recv);
    const char* send = static_cast<const char*>(c.send);
    const void* inPlace = MPI_IN_PLACE;
    switch (c.coll) {
      case Collective::kAllReduce:
        return MPI_Allreduce(send == recv ? inPlace : send, recv, n, t, op, comm_);
      case Collective::kAllGather:
        // In place: this rank's block already sits in recv.
        return MPI_Allgather(send == recv + rank_ * blockBytes ? inPlace : send, n, t, recv, n, t, comm_);
      case Collective::kReduceScatter: {
        if (recv != send + rank_ * blockBytes) return MPI_Reduce_scatter_block(send, recv, n, t, op, comm_);
        // In place, MPI leaves the result at the start of the buffer; the nccl-tests layout
        // wants it at this rank's block.
        char* buf = recv - rank_ * blockBytes;
        const int rc = MPI_Reduce_scatter_block(inPlace, buf, n, t, op, comm_);
        if (rc == MPI_SUCCESS && rank_ != 0) std::memmove(recv, buf, blockBytes);
        return rc;
      }
      case Collective::kBroadcast:
        // MPI broadcasts in place; the root copies its input to its output first.
        if (rank_ == c.root && send != recv) std::memcpy(recv, send, blockBytes);
        return MPI_Bcast(recv, n, t, c.root, comm_);
      case Collective::kReduce:
        return MPI_Reduce(send == recv && rank_ == c.root ? inPlace : send, recv, n, t, op, c.root, comm_);
      case Collective::kAllToAll:
        return MPI_Alltoall(send == recv ? inPlace : send, n, t, recv, n, t, comm_);
      case Collective::kSendRecv: {
        const int next = (rank_ + 1) % nranks_, prev = (rank_ - 1 + nranks_) % nranks_;
        if (send == recv) return MPI_Sendrecv_replace(recv, n, t, next, 0, prev, 0, comm_, MPI_STATUS_IGNORE);
        return MPI_Sendrecv(send, n, t, next, 0, recv, n, t, prev, 0, comm_, MPI_STATUS_IGNORE);
      }
    }
    return MPI_ERR_OTHER;
  }

  MPI_Comm comm_;
  int rank_ = 0;
  int nranks_ = 1;
};

PeerStatus makeMpi(const PeerSettings&, PeerBootstrap& boot, std::unique_ptr<PeerLib>* out) {
  int initialized = 0;
  MPI_Initialized(&initialized);
  if (!initialized) return PeerStatus::failure("MPI is not initialised: run the benchmark under mpirun");
  int size = 0;
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  if (size != boot.size())
    return PeerStatus::failure("MPI_COMM_WORLD has " + std::to_string(size) + " ranks but the run has " +
                               std::to_string(boot.size()));
  MPI_Comm comm;
  if (MPI_Comm_dup(MPI_COMM_WORLD, &comm) != MPI_SUCCESS) return PeerStatus::failure("MPI_Comm_dup failed");
  *out = std::make_unique<MpiPeer>(comm);
  return PeerStatus::success();
}

}  // namespace

WEFT_PERF_REGISTER_PEER(mpi, "mpi", makeMpi);

}  // namespace weft::perf
