#!/usr/bin/env bash
# Low-precision all-reduce against float, the way issue 16's floor reads (bfloat16 and half at
# 64 MiB >= 80 % of float's bus bandwidth): the types run side by side in one weft-perf process,
# in blocks of a mirrored order (float, bfloat16, half, .., then back: drift that is linear in
# time cancels), so that the VM's changes of speed (RESULTS.md: its two vCPUs change placement
# every few tens of seconds) hit every type of a block alike. For every block each type's busbw
# (the mean of its two places in the block) is divided by float's in that block; each run
# prints those ratios per type, their median and minimum, and the verdict against the floor
# (the median of the blocks' ratios in every run >= FLOOR).
#
#   perf/lowp_compare.sh [runs] [build dir]     (default 3 runs, build dir "build")
#
# TYPES (default float,bfloat16,half,f8e4m3,f8e5m2; float first: the reference), BLOCKS (8),
# SIZE (64M), ITERS (timed iterations per type and block, 4), FLOOR (0.80), PLACE (oop: out of
# place, or ip), PRIO (0; 1: the ranks at real-time priority, chrt -f 50, where chrt can; weft-perf
# then pauses 100 ms before each timed entry for the kernel's RT throttling), CHECK
# (1: a checked pass of every type before each run; 0 skips it). A run of 8 blocks takes minutes
# on a loaded 2-vCPU machine: weft-perf fills every type's 64 MiB input before each section.
# Raw outputs go to OUT (default a new folder under /tmp).
set -euo pipefail

runs=${1:-3}
build=${2:-build}
perf=$build/perf/weft-perf
types=${TYPES:-float,bfloat16,half,f8e4m3,f8e5m2}
blocks=${BLOCKS:-8}
size=${SIZE:-64M}
iters=${ITERS:-4}
floor=${FLOOR:-0.80}
place=${PLACE:-oop}
[[ $runs =~ ^[1-9][0-9]*$ ]] || { echo "$0: runs must be a positive number, not '$runs'" >&2; exit 2; }
[[ $blocks =~ ^[1-9][0-9]*$ ]] || { echo "$0: BLOCKS must be a positive number, not '$blocks'" >&2; exit 2; }
[[ $iters =~ ^[1-9][0-9]*$ ]] || { echo "$0: ITERS must be a positive number, not '$iters'" >&2; exit 2; }
[[ $floor =~ ^[0-9]*\.?[0-9]+$ ]] || { echo "$0: FLOOR must be a number, not '$floor'" >&2; exit 2; }
[[ $place == oop || $place == ip ]] || { echo "$0: PLACE must be oop or ip, not '$place'" >&2; exit 2; }
[[ ${types%%,*} == float ]] || { echo "$0: TYPES must start with float (the reference), not '$types'" >&2; exit 2; }
[[ -x $perf ]] || { echo "$0: $perf not found: build weft-perf first" >&2; exit 2; }
# float,a,b -> float,a,b,b,a,float
mirrored=$types,$(tr ',' '\n' <<< "$types" | tac | paste -sd, -)
prio=()
if [[ ${PRIO:-0} == 1 ]] && chrt -f 50 true 2>/dev/null; then prio=(chrt -f 50); fi
out=${OUT:-$(mktemp -d /tmp/weft-lowp-compare.XXXXXX)}
mkdir -p "$out"

echo "# $(date -u '+%F %T UTC'); $(lscpu | sed -n 's/^Model name: *//p'); $(nproc) CPUs; load $(cut -d' ' -f1-3 /proc/loadavg)"
echo "# weft-perf allreduce -np 2 -b $size -e $size -n $iters -w 1 -c 0 -d $mirrored -N $blocks ${prio[*]:+(under ${prio[*]})}"
echo "# busbw $place; per block: type / float; raw outputs in $out"
col=$([[ $place == oop ]] && echo 8 || echo 12)
for run in $(seq 1 "$runs"); do
  f=$out/run$run.txt
  # Every type checked once (the check of 64 MiB takes longer than its timing), then timed.
  [[ ${CHECK:-1} == 0 ]] || "$perf" allreduce -np 2 -b "$size" -e "$size" -n 1 -w 0 -c 1 -d "$types" > "$out/check$run.txt" ||
    { echo "$0: run $run: wrong results or a failed call, see $out/check$run.txt" >&2; exit 1; }
  "${prio[@]}" "$perf" allreduce -np 2 -b "$size" -e "$size" -n "$iters" -w 1 -c 0 -d "$mirrored" -N "$blocks" > "$f" ||
    { echo "$0: run $run: weft-perf failed, see $f" >&2; exit 1; }
  echo "## run $run ($(date -u +%T), load $(cut -d' ' -f1 /proc/loadavg))"
  awk -v col="$col" -v floor="$floor" -v per=$((2 * $(tr ',' '\n' <<< "$types" | wc -l))) '
function median(a, n,   i, j, t) {
  for (i = 2; i <= n; ++i) { t = a[i]; for (j = i - 1; j >= 1 && a[j] > t; --j) a[j + 1] = a[j]; a[j + 1] = t }
  return n % 2 ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2
}
/^#/ || NF < 13 { next }
{ block = int(row / per); ++row; t = $3
  if (!(t in seen)) { seen[t] = 1; order[++nt] = t }
  bw[t, block] += $col / 2; nb = block + 1 }
END {
  printf "# %-9s", "type"; for (b = 0; b < nb; ++b) printf " %5s", "b" b + 1
  printf "  %6s %6s  %s\n", "median", "min", "verdict"
  for (i = 1; i <= nt; ++i) { t = order[i]; n = 0; m = ""
    printf "  %-9s", t
    for (b = 0; b < nb; ++b) { r = bw["float", b] > 0 ? bw[t, b] / bw["float", b] : 0; printf " %5.2f", r
      x[++n] = r; if (m == "" || r < m) m = r }
    med = median(x, n)
    printf "  %6.2f %6.2f  %s\n", med, m, t == "float" ? "(reference)" : (med >= floor ? "ok" : "below")
    delete x }
  printf "# float busbw per block (GB/s):"; for (b = 0; b < nb; ++b) printf " %.2f", bw["float", b]; printf "\n"
}' "$f"
done
