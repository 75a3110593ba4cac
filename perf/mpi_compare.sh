#!/usr/bin/env bash
# Weft against Open MPI, float-sum all-reduce on host memory, the way issue 16's floors read:
# several consecutive runs of weft-bench-mpi (which alternates the two libraries in blocks on
# the same buffers, so that drift of this shared machine hits both alike) for 2 ranks over
# 8 B .. 256 MiB and for 4 ranks (oversubscribed on a 2-CPU machine) over 8 B .. 64 MiB, then
# one table per rank count: the Weft/MPI bus-bandwidth ratio of every run per size, its
# minimum, and the floor the issue sets for that size (2 ranks: >= 1 everywhere, >= 3 at
# 64 MiB; 4 ranks: >= 1 from 32 KiB up), marked "below" where a run misses it.
#
#   perf/mpi_compare.sh [runs] [build dir]     (default 3 runs, build dir "build")
#   perf/mpi_compare.sh summary DIR            (the tables of a saved output folder again)
#
# PRIO=1 (default) runs rank counts up to the CPU count at real-time priority (chrt -f 50, where
# chrt can: other processes on the machine then cannot preempt a polling rank); PRIO=0 does not.
# At real-time priority weft-bench-mpi pauses 100 ms before every block, so that the ranks never
# reach the kernel's RT throttling (950 ms of each second, then 50 ms stopped), which otherwise
# doubled whichever short block it fell into.
# LOCK=FILE takes flock FILE around each mpirun (a machine whose users share a timing lock).
# RANKS (default "2 4") picks the rank counts; REGISTER=1 runs weft-bench-mpi -R 1 (both buffers
# from weftMemAlloc, registered: Weft's zero-copy path from WEFT_ZERO_COPY_MIN_BYTES up). MAX (e.g. 4K, at
# most 64K) keeps only the small-size run, up to that size: a short series for small-message work,
# same iterations and tables as the full run. Raw outputs go to OUT (default a new folder
# under /tmp), one file per rank count and run. The first lines record the CPU model and the
# load average: figures are comparable only within one run of this script.
set -euo pipefail

# summarise DIR NP: the ratio table of every DIR/np$NP.run*.txt.
summarise() {
  local dir=$1 np=$2
  local files=("$dir"/np"$np".run*.txt)
  [[ -e ${files[0]} ]] || return 0
  echo "## $np ranks: Weft/MPI bus bandwidth per run (weft-bench-mpi's 'bw ratio')"
  awk -v np="$np" '
FNR == 1 { ++run }
/^#/ || NF < 8 { next }
{ size = $1; if (!(size in seen)) { seen[size] = 1; order[++ns] = size } ratio[size, run] = $6; wbw[size, run] = $5
  if ($8 != "ok") bad[size] = 1 }
function floorFor(s) { if (np == 2) return s == 67108864 ? 3 : 1; return s >= 32768 ? 1 : 0 }
END {
  printf "# %10s", "size (B)"; for (r = 1; r <= run; ++r) printf "  run %-3d", r
  printf "  %7s  %5s  %s\n", "min", "floor", "verdict"
  for (i = 1; i <= ns; ++i) { s = order[i]; m = ""
    printf "  %10s", s
    for (r = 1; r <= run; ++r) { x = ratio[s, r]; printf "  %7s", x == "" ? "-" : sprintf("%.2f", x); if (x != "" && (m == "" || x + 0 < m + 0)) m = x }
    f = floorFor(s); verdict = f == 0 ? "(no floor)" : (m + 0 >= f ? "ok" : "below")
    if (s in bad) verdict = verdict " WRONG RESULTS"
    printf "  %7.2f  %5s  %s\n", m, f == 0 ? "-" : f, verdict }
}' "${files[@]}"
}

if [[ ${1:-} == summary ]]; then
  [[ -d ${2:-} ]] || { echo "usage: $0 summary DIR" >&2; exit 2; }
  for np in ${RANKS:-2 4}; do summarise "$2" "$np"; done
  exit 0
fi

runs=${1:-3}
build=${2:-build}
bench=$build/perf/weft-bench-mpi
[[ $runs =~ ^[1-9][0-9]*$ ]] || { echo "$0: runs must be a positive number, not '$runs'" >&2; exit 2; }
[[ -x $bench ]] || { echo "$0: $bench not found: build weft-bench-mpi first (needs Open MPI)" >&2; exit 2; }
command -v mpirun >/dev/null || { echo "$0: mpirun not found (apt-get install openmpi-bin)" >&2; exit 2; }
reg=${REGISTER:-0}
[[ $reg == 0 || $reg == 1 ]] || { echo "$0: REGISTER must be 0 or 1, not '$reg'" >&2; exit 2; }
out=${OUT:-$(mktemp -d /tmp/weft-mpi-compare.XXXXXX)}
mkdir -p "$out"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1

echo "# $(date -u '+%F %T UTC'); $(lscpu | sed -n 's/^Model name: *//p'); $(nproc) CPUs; load $(cut -d' ' -f1-3 /proc/loadavg)"
echo "# raw outputs in $out; registered buffers (-R): $reg; real-time priority up to $(nproc) ranks (PRIO): ${PRIO:-1}"
for run in $(seq 1 "$runs"); do
  for np in ${RANKS:-2 4}; do
    f=$out/np$np.run$run.txt
    if [[ $np -le $(nproc) ]]; then bind=(--bind-to core); else bind=(--oversubscribe --bind-to none); fi
    launch=()
    [[ -n ${LOCK:-} ]] && launch=(flock "$LOCK")
    [[ ${PRIO:-1} == 1 && $np -le $(nproc) ]] && chrt -f 50 true 2>/dev/null && launch+=(chrt -f 50)
    max=256M; [[ $np -gt 2 ]] && max=64M
    # small sizes many iterations, large ones few (the time of one run stays near a minute)
    "${launch[@]}" mpirun -np "$np" "${bind[@]}" --mca btl self,vader "$bench" -R "$reg" -b 8 -e "${MAX:-64K}" -f 8 -n 4000 -w 400 > "$f"
    if [[ -n ${MAX:-} ]]; then echo "# run $run, $np ranks done ($(date -u +%T), load $(cut -d' ' -f1 /proc/loadavg))"; continue; fi
    "${launch[@]}" mpirun -np "$np" "${bind[@]}" --mca btl self,vader "$bench" -R "$reg" -b 256K -e 4M -f 4 -n 200 -w 20 | grep -v '^#' >> "$f"
    "${launch[@]}" mpirun -np "$np" "${bind[@]}" --mca btl self,vader "$bench" -R "$reg" -b 16M -e "$max" -f 4 -n 12 -w 2 | grep -v '^#' >> "$f"
    echo "# run $run, $np ranks done ($(date -u +%T), load $(cut -d' ' -f1 /proc/loadavg))"
  done
done
for np in ${RANKS:-2 4}; do summarise "$out" "$np"; done
