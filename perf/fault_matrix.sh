#!/usr/bin/env bash
# docs/failures.md's "Failures and what you see" table, reproduced: each fault is made on purpose in a
# 2-rank job (rank 1 is the odd one out), and the script prints, per fault and rank, the line
# that rank printed (the failing call's result, how long it took, weftGetLastError's message)
# and the first line the library wrote to stderr (its log), if any.
#
#   perf/fault_matrix.sh [build dir] [fault ...]     (default: build, every fault)
#
# Faults: count-small count-large datatype op collective root skipped (call mismatches on host
# buffers), stopped (SIGSTOP), killed (SIGKILL), never-joins (rank 1 never starts), bad-param
# (WEFT_BUFFSIZE=1). Add WEFT_* variables to the environment to run them another way, e.g.
# WEFT_SHM_DISABLE=1 WEFT_SOCKET_IFNAME=lo for sockets. Ranks run as processes of this host,
# launched like any launcher does (WEFT_RANK, WEFT_NRANKS, WEFT_ROOT_ADDR, WEFT_ROOT_SECRET).
set -uo pipefail
build=${1:-build}
shift || true
probe=$build/perf/weft-fault-probe
[ -x "$probe" ] || { echo "fault_matrix.sh: $probe not built (ninja -C $build weft-fault-probe)" >&2; exit 2; }
faults=("$@")
[ ${#faults[@]} -gt 0 ] || faults=(count-small count-large datatype op collective root skipped stopped killed
                                   never-joins bad-param)
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
limit=${FAULT_MATRIX_LIMIT_S:-60}  # no fault should take this long; a hang shows as "no line"

echo "# $(date -u '+%Y-%m-%d %H:%M UTC'); $(lscpu | grep 'Model name' | sed 's/  */ /g'); load $(cut -d' ' -f1-3 /proc/loadavg)"
env | grep '^WEFT_' | sed 's/^/# environment: /'

# launch FAULT NRANKS_STARTED [VAR=VALUE ...]: starts the ranks of a 2-rank job, waits for them
# (resuming a stopped rank once rank 0 is done), and prints their lines.
launch() {
  local fault=$1 started=$2 probeCase=$1
  shift 2
  case $fault in never-joins | bad-param) probeCase=ok ;; esac
  local port=$((20000 + RANDOM % 20000))
  local secret
  secret=$(od -An -N16 -tx1 /dev/urandom | tr -d ' \n')
  local pids=()
  for ((r = 0; r < started; ++r)); do
    env "$@" WEFT_RANK=$r WEFT_NRANKS=2 WEFT_ROOT_ADDR=127.0.0.1:$port WEFT_ROOT_SECRET=$secret \
      timeout -s KILL "$limit" "$probe" "$probeCase" > "$dir/$fault.$r.out" 2> "$dir/$fault.$r.err" &
    pids+=($!)
  done
  # Rank 0 first: rank 1 may be stopped until rank 0 is done; then it is resumed (its probe is
  # the child of `timeout`) and finds rank 0 gone.
  local status=()
  { wait "${pids[0]}"; } 2> /dev/null
  status[0]=$?
  if [ "$started" -gt 1 ]; then
    if [ "$fault" = stopped ]; then
      local child
      child=$(ps -o pid= --ppid "${pids[1]}" | tr -d ' ')
      [ -z "$child" ] || kill -CONT "$child"
    fi
    { wait "${pids[1]}"; } 2> /dev/null
    status[1]=$?
  fi
  for ((r = 0; r < 2; ++r)); do
    local line="(not started)" first=""
    if [ "$r" -lt "$started" ]; then
      line=$(head -n 1 "$dir/$fault.$r.out")
      local how="exit status ${status[$r]}"
      [ "${status[$r]}" != 137 ] || how="killed by SIGKILL"
      [ -n "$line" ] || line="rank $r: (no line: $how)"
      first=$(head -n 1 "$dir/$fault.$r.err")
    fi
    printf '%-12s %s\n' "$fault" "$line"
    [ -z "$first" ] || printf '%-12s   first line on stderr: %s\n' "$fault" "$first"
  done
}

for fault in "${faults[@]}"; do
  case $fault in
    count-small | count-large | datatype | op | collective | root | skipped | stopped | killed) launch "$fault" 2 ;;
    # Rank 0 waits for rank 1 at init; the bootstrap gives up after WEFT_TIMEOUT_S (lowered here).
    never-joins) launch "$fault" 1 WEFT_TIMEOUT_S=${WEFT_TIMEOUT_S:-10} ;;
    bad-param) launch "$fault" 2 WEFT_BUFFSIZE=1 ;;
    *) echo "fault_matrix.sh: unknown fault '$fault'" >&2; exit 2 ;;
  esac
done
