#!/usr/bin/env bash
# The host cost model's error on this machine: for 2 and 4 ranks (processes) and each all-reduce
# algorithm (WEFT_ALGO forced), the model's prediction (weft-topo --tuner-sizes, this machine's
# CPUs) against the fastest measured time of RUNS weft-perf runs (in and out of place), 8 B to
# 256 MiB; then the same for the algorithm the tuner chooses unforced. perf/RESULTS.md "Cost
# model: the host model's error" is its output.
#   usage: perf/host_model_error.sh [BUILD_DIR] [RUNS]     (defaults: build 3)
set -euo pipefail
build=${1:-build}
runs=${2:-3}
topo=$build/tools/weft-topo
perfbin=$build/perf/weft-perf
[[ -x $topo && -x $perfbin ]] || { echo "host_model_error: build $topo and $perfbin first" >&2; exit 2; }
out=$(mktemp -d /tmp/weft-model-error.XXXXXX)
trap 'rm -rf "$out"' EXIT
export OMP_NUM_THREADS=1
echo "# $(date -u '+%F %T UTC'), $(lscpu | sed -n 's/^Model name: *//p'), $(nproc --all) CPUs, load $(cut -d' ' -f1-3 /proc/loadavg)"

# weft-perf's rows: size and the smaller of the out-of-place and in-place times (columns 6, 10).
measure() {  # ranks algo file
  for ((r = 0; r < runs; ++r)); do
    WEFT_ALGO=$2 "$perfbin" allreduce -np "$1" -b 8 -e 512K -f 2 -n 40 -w 5 -c 0
    WEFT_ALGO=$2 "$perfbin" allreduce -np "$1" -b 1M -e 256M -f 2 -n 4 -w 1 -c 0
  done | awk '$1 ~ /^[0-9]+$/ && NF >= 10 { t = ($6 < $10 ? $6 : $10); if (!($1 in best) || t < best[$1]) best[$1] = t }
              END { for (s in best) print s, best[s] }' | sort -n > "$3"
}
predict() {  # ranks algo ("" = the tuner's own) file
  WEFT_ALGO=$2 "$topo" --ranks "$1" --tuner-sizes 2>/dev/null | awk '$1 == "allreduce" && NF == 5 && $2 ~ /^[0-9]+$/ && $4 ~ /^x/ { print $2, $3, $5 }' > "$3"
}
for n in 2 4; do
  for a in ring tree doubling; do
    [[ $n == 2 && $a == tree ]] && continue  # on two ranks the tree's schedule is the ring's steps
    predict "$n" "$a" "$out/p.$n.$a"
    measure "$n" "$a" "$out/m.$n.$a"
  done
  predict "$n" "" "$out/p.$n.tuner"
done
# One row per size: each algorithm's predicted / fastest measured time (and the error), the
# tuner's choice, the fastest algorithm measured, and the tuner's choice's time over the fastest.
for n in 2 4; do
  algos=$(cd "$out" && ls m.$n.* | sed "s/^m\.$n\.//" | sort -r | tr '\n' ' ')
  echo
  echo "$n ranks: predicted / fastest measured us (error); the tuner's choice; the fastest measured; the choice's time over the fastest"
  echo
  printf '| bytes |'; for a in $algos; do printf ' %s |' "$a"; done; echo ' tuner | fastest | ratio |'
  printf '|---:|'; for a in $algos; do printf -- '---|'; done; echo '---|---|---:|'
  awk -v algos="$algos" -v dir="$out" -v n="$n" '
    BEGIN {
      na = split(algos, A, " ")
      for (i = 1; i <= na; ++i) {
        f = dir "/p." n "." A[i]; while ((getline line < f) > 0) { split(line, x, " "); pred[A[i], x[1]] = x[3]; sizes[x[1]] = 1 }
        f = dir "/m." n "." A[i]; while ((getline line < f) > 0) { split(line, x, " "); meas[A[i], x[1]] = x[2] }
      }
      f = dir "/p." n ".tuner"; while ((getline line < f) > 0) { split(line, x, " "); chosen[x[1]] = x[2] }
      m = 0; for (s in sizes) list[++m] = s + 0
      for (i = 1; i <= m; ++i) for (j = i + 1; j <= m; ++j) if (list[j] < list[i]) { t = list[i]; list[i] = list[j]; list[j] = t }
      for (i = 1; i <= m; ++i) {
        s = list[i]; if (!((A[1], s) in meas)) continue
        row = "| " s " |"; best = ""; 
        for (k = 1; k <= na; ++k) {
          a = A[k]; p = pred[a, s]; t = meas[a, s]
          row = row sprintf(" %.1f / %.1f (%+.0f %%) |", p, t, 100 * (p - t) / t)
          if (best == "" || t < meas[best, s]) best = a
        }
        c = chosen[s]; ratio = ((c, s) in meas) ? sprintf("%.2f", meas[c, s] / meas[best, s]) : "-"
        print row " " c " | " best " | " ratio " |"
      }
    }'
done
