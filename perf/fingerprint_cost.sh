#!/usr/bin/env bash
# What the call fingerprint costs (issue 13): 2-rank all-reduce, 8 B latency and 64 MiB bus
# bandwidth, with the checks on (the default) and off (WEFT_CHECK_CALLS=0), over shared memory
# and over sockets. Runs of the two variants alternate ABBA (on off off on, repeated), so that
# drift of this shared machine hits both alike; the adjacent "off, off" pair of every block
# gives the noise between two runs of the same variant, to read the on/off difference against.
#
#   perf/fingerprint_cost.sh [blocks] [build dir]      (default 5 blocks: 10 runs per variant)
#   perf/fingerprint_cost.sh summary FILE              (the summary of a saved output again)
#
# Prints one line per run (raw figures) and, per transport and size, the median, min-max and
# interquartile range of each variant, the ratio of the medians, and the median of the
# per-pair ratios next to that of the same-variant pairs. TRANSPORTS (default "shm socket")
# picks the paths; ITERS_8B (default 100000; each run makes as many in place as out of place)
# and ITERS_64M (default 20) the timed iterations. COLL (default allreduce) and NP (default 2)
# pick the collective and the ranks (broadcast/reduce: the call-check token lane's cost), SIZES
# (default "8 67108864") the sizes; the 64 MiB figure is bytes / time (the bus bandwidth of 2
# ranks only). RT_PRIO (default none) runs each weft-perf under `chrt -f RT_PRIO` (SCHED_FIFO; as
# root): on a machine whose cores other builds keep busy, the ranks then keep theirs for the run
# (the kernel still leaves others 5% of each second), so that 8 B times are the library's and
# not the scheduler's. Only with no more ranks than cores: ranks sharing one would spin in turn.
set -euo pipefail

# summarise RAW: the latency (us) at 8 B, the bus bandwidth (GB/s) at 64 MiB; out of place and
# in place.
summarise() {
  awk '
function sortn(a, n,   i, j, t) { for (i = 2; i <= n; ++i) { t = a[i]; for (j = i - 1; j >= 1 && a[j] > t; --j) a[j + 1] = a[j]; a[j + 1] = t } }
function q(a, n, p,   h, l) { h = (n - 1) * p + 1; l = int(h); return l >= n ? a[n] : a[l] + (h - l) * (a[l + 1] - a[l]) }
function stats(key, v, n,   a, i) { for (i = 1; i <= n; ++i) a[i] = v[i]; sortn(a, n)
  med[key] = q(a, n, 0.5); return sprintf("%9.4g  %9.4g-%-9.4g  %9.4g-%-9.4g", med[key], a[1], a[n], q(a, n, 0.25), q(a, n, 0.75)) }
{ k = $1 " " $2; if (!(k in keys)) { keys[k] = 1; order[++nk] = k } for (c = 0; c < 2; ++c) {
    # the latency as printed; the bus bandwidth from the time (more digits than weft-perf prints
    # it with): bytes / time x 2(n-1)/n, which is 1 for 2 ranks
    x = ($2 == 8) ? $(6 + 2 * c) : $2 / ($(6 + 2 * c) * 1e3)
    val[k, c, $3, ++cnt[k, c, $3]] = x; byslot[k, c, $4, $5] = x; nb[k] = $4 + 1 } }
END {
  printf "# %-6s %-9s %-4s %-6s %9s  %-19s  %-19s  %s\n", "path", "size", "", "var", "median", "min-max", "IQR", ""
  for (ki = 1; ki <= nk; ++ki) for (c = 0; c < 2; ++c) { k = order[ki]
    split(k, kk, " "); unit = (kk[2] == 8) ? "us" : "GB/s"; place = c ? "in" : "out"
    for (vi = 0; vi < 2; ++vi) { var = vi ? "off" : "on"; n = cnt[k, c, var]; delete v
      for (i = 1; i <= n; ++i) v[i] = val[k, c, var, i]
      printf "  %-6s %-9s %-4s %-6s %s %s\n", kk[1], kk[2], place, var, stats(k SUBSEP c SUBSEP var, v, n), unit }
    # paired ratios: on/off in each adjacent pair (slots 0-1 and 2-3), and off/off (slots 1-2)
    np = 0; na = 0; delete pr; delete ar
    for (b = 0; b < nb[k]; ++b) {
      if (!((k, c, b, 3) in byslot)) continue  # a block cut short
      pr[++np] = byslot[k, c, b, 0] / byslot[k, c, b, 1]; pr[++np] = byslot[k, c, b, 3] / byslot[k, c, b, 2]
      ar[++na] = byslot[k, c, b, 1] / byslot[k, c, b, 2] }
    sortn(pr, np); sortn(ar, na)
    printf "  %-6s %-9s %-4s on/off ratio of medians %.3f; paired on/off median %.3f (IQR %.3f-%.3f); same-variant off/off median %.3f (min-max %.3f-%.3f)\n",
      kk[1], kk[2], place, med[k SUBSEP c SUBSEP "on"] / med[k SUBSEP c SUBSEP "off"],
      q(pr, np, 0.5), q(pr, np, 0.25), q(pr, np, 0.75), q(ar, na, 0.5), ar[1], ar[na] }
}' "$1"
}

if [ "${1:-}" = summary ]; then
  summarise <(grep -E '^(shm|socket) ' "$2")
  exit 0
fi
blocks=${1:-5}
build=${2:-build}
perf=$build/perf/weft-perf
[ -x "$perf" ] || { echo "fingerprint_cost.sh: $perf not built (ninja -C $build weft-perf)" >&2; exit 2; }
raw=$(mktemp)
trap 'rm -f "$raw"' EXIT

echo "# $(date -u '+%Y-%m-%d %H:%M UTC'); $(lscpu | grep 'Model name' | sed 's/  */ /g'); $(nproc) CPUs"
echo "# ${COLL:-allreduce}, ${NP:-2} ranks${RT_PRIO:+, SCHED_FIFO priority $RT_PRIO}; load at start: $(cut -d' ' -f1-3 /proc/loadavg)"

# run TRANSPORT SIZE VARIANT BLOCK SLOT: one weft-perf process pair; records the out-of-place
# and in-place time (us) and bus bandwidth (GB/s).
run() {
  local transport=$1 size=$2 variant=$3 block=$4 slot=$5 check=1 net=() iters
  [ "$variant" = off ] && check=0
  [ "$transport" = socket ] && net=(--weft-net)
  if [ "$size" = 8 ]; then iters=(-n "${ITERS_8B:-100000}" -w 2000); else iters=(-n "${ITERS_64M:-20}" -w 3); fi
  local line
  local prio=()
  [ -n "${RT_PRIO:-}" ] && prio=(chrt -f "$RT_PRIO")
  line=$(WEFT_CHECK_CALLS=$check "${prio[@]}" "$perf" "${COLL:-allreduce}" -np "${NP:-2}" "${net[@]}" -b "$size" -e "$size" "${iters[@]}" |
         awk '!/^#/ && NF >= 13 { print $6, $8, $10, $12, $9 + $13 }')
  [ -n "$line" ] || { echo "fingerprint_cost.sh: no result from $transport $size $variant" >&2; exit 1; }
  set -- $line
  [ "$5" = 0 ] || { echo "fingerprint_cost.sh: $5 wrong elements ($transport $size $variant)" >&2; exit 1; }
  echo "$transport $size $variant $block $slot $1 $2 $3 $4 $(cut -d' ' -f1 /proc/loadavg)" | tee -a "$raw"
}

echo "# transport size variant block slot oop_us oop_busbw ip_us ip_busbw load1"
for transport in ${TRANSPORTS:-shm socket}; do
  for size in ${SIZES:-8 67108864}; do
    for ((b = 0; b < blocks; ++b)); do
      run $transport $size on $b 0
      run $transport $size off $b 1
      run $transport $size off $b 2
      run $transport $size on $b 3
    done
  done
done
echo "# load at end: $(cut -d' ' -f1-3 /proc/loadavg)"

summarise "$raw"
