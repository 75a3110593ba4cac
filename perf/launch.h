// How weft-perf's ranks come to be: under mpirun (MPI carries the unique id, nothing else),
// standalone with -np N (the parent makes the id and forks N ranks), or alone (one process;
// -t threads make more ranks in every case). --compare mpi needs MPI, which cannot start in
// forked ranks: without mpirun, weft-perf runs itself again under `mpirun -np N` when one is
// in PATH, else leaves MPI out with a note.
#ifndef WEFT_PERF_LAUNCH_H_
#define WEFT_PERF_LAUNCH_H_

#include "perf/options.h"

namespace weft::perf {

enum class LaunchMode { kMpi, kFork, kSingle };

// kMpi when an MPI launcher's variables are set (OMPI_COMM_WORLD_SIZE, PMI_SIZE), kFork with
// -np, else kSingle. Both at once is a usage error (returns false with *error set).
bool chooseLaunch(const Options& o, bool mpiEnv, LaunchMode* mode, const char** error);
bool mpiEnvironment();

// Runs every rank of this process (o.nThreads of them) and returns the process exit status;
// argv is the command line, for a re-run under mpirun. May not return (the re-run replaces
// this process).
int launch(Options o, const char* program, int argc, char** argv);

}  // namespace weft::perf

#endif  // WEFT_PERF_LAUNCH_H_
