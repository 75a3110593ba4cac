// Launched by mpirun: every rank runs Open MPI's MPI_Allreduce and Weft's weftAllReduce on the
// same inputs (integer types, every op MPI shares with Weft, counts from 0 to 1M elements,
// values that overflow and wrap) and the results must agree bit for bit. Exits non-zero on any
// difference; prints "N passed, M failed" on rank 0.
#include <mpi.h>

#include <cstdint>
#include <cstdio>
#include <cstring>
#include <random>
#include <vector>

#include "weft/weft.h"

namespace {

struct TypePair {
  weftDataType_t weft;
  MPI_Datatype mpi;
  size_t size;
  const char* name;
};

struct OpPair {
  weftRedOp_t weft;
  MPI_Op mpi;
  const char* name;
};

}  // namespace

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank = 0, nranks = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &nranks);

  weftUniqueId id;
  if (rank == 0 && weftGetUniqueId(&id) != weftSuccess) {
    std::fprintf(stderr, "weftGetUniqueId: %s\n", weftGetLastError(nullptr));
    MPI_Abort(MPI_COMM_WORLD, 1);
  }
  MPI_Bcast(&id, sizeof(id), MPI_BYTE, 0, MPI_COMM_WORLD);
  weftComm_t comm = nullptr;
  if (weftCommInitRank(&comm, nranks, id, rank) != weftSuccess) {
    std::fprintf(stderr, "rank %d: weftCommInitRank: %s\n", rank, weftGetLastError(nullptr));
    MPI_Abort(MPI_COMM_WORLD, 1);
  }

  const TypePair types[] = {{weftInt8, MPI_INT8_T, 1, "int8"},       {weftUint8, MPI_UINT8_T, 1, "uint8"},
                            {weftInt32, MPI_INT32_T, 4, "int32"},    {weftUint32, MPI_UINT32_T, 4, "uint32"},
                            {weftInt64, MPI_INT64_T, 8, "int64"},    {weftUint64, MPI_UINT64_T, 8, "uint64"}};
  const OpPair ops[] = {{weftSum, MPI_SUM, "sum"}, {weftProd, MPI_PROD, "prod"}, {weftMax, MPI_MAX, "max"},
                        {weftMin, MPI_MIN, "min"}};
  const size_t counts[] = {0, 1, 3, 1000, 65537, 1 << 20};

  int passed = 0, failed = 0;
  std::mt19937_64 rng(0x5eed + static_cast<uint64_t>(rank));
  for (const auto& t : types) {
    for (const auto& op : ops) {
      for (size_t count : counts) {
        std::vector<unsigned char> send(count * t.size + 1), mpiOut(send.size()), weftOut(send.size());
        // Random bytes: sums and products overflow and wrap, signs mix.
        for (auto& b : send) b = static_cast<unsigned char>(rng());
        MPI_Allreduce(send.data(), mpiOut.data(), static_cast<int>(count), t.mpi, op.mpi, MPI_COMM_WORLD);
        weftResult_t r = weftAllReduce(send.data(), weftOut.data(), count, t.weft, op.weft, comm, nullptr);
        bool ok = r == weftSuccess && std::memcmp(mpiOut.data(), weftOut.data(), count * t.size) == 0;
        if (r != weftSuccess) std::fprintf(stderr, "rank %d: %s\n", rank, weftGetLastError(comm));
        for (size_t i = 0; r == weftSuccess && !ok && i < count * t.size; ++i) {
          if (mpiOut[i] != weftOut[i]) {
            std::fprintf(stderr, "rank %d: %s %s count %zu: first difference at byte %zu: MPI %u, Weft %u, input %u\n",
                         rank, t.name, op.name, count, i, mpiOut[i], weftOut[i], send[i]);
            break;
          }
        }
        int okAll = ok ? 1 : 0;
        MPI_Allreduce(MPI_IN_PLACE, &okAll, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
        if (okAll) {
          ++passed;
        } else {
          ++failed;
          if (rank == 0) std::printf("FAILED: %s %s count %zu differs from MPI_Allreduce\n", t.name, op.name, count);
        }
      }
    }
  }
  if (rank == 0) std::printf("%d passed, %d failed\n", passed, failed);
  weftCommDestroy(comm);
  MPI_Finalize();
  return failed == 0 ? 0 : 1;
}
