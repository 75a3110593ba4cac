#!/usr/bin/env bash
# perf/fault_matrix_netns.sh [BUILD_DIR]
#
# Reproduces the second table of docs/failures.md, "Failures and what you see" (faults that need
# namespaces or whole-program runs; perf/fault_matrix.sh makes the call mismatches and the
# stopped, killed and never-joining ranks): runs each fault and prints, per
# rank, how long after the fault it failed and the first line it printed. Needs a build
# (default ./build: weft-perf, tests/netns/weft-nettest, libweft.so) and, for the multi-host
# rows and the full /dev/shm, root (network namespaces, a private mount namespace).
#
#   killed rank      4 ranks on 2 hosts (netns), SIGKILL of rank 3 mid all-reduce loop
#   link down        the same, eth0 of host 1 goes down (WEFT_TIMEOUT_S=15)
#   never joins      rank 3 never started (WEFT_TIMEOUT_S=5)
#   stranger         garbage, a wrong secret and silence on the bootstrap port
#   full /dev/shm    2 ranks as processes, a 2 MiB /dev/shm (private mount namespace)
#   bad parameter    WEFT_NSLOTS=0 (warned, clamped), WEFT_TIMEOUT_S=0 and WEFT_ALGO=bogus (refused)
#   bad argument     weftAllReduce with a null send buffer (python3 ctypes over libweft.so)
#   id used twice    a second communicator from one unique id
#
# Times: netns rows from run_scenario.sh (fault to each rank's exit); the others are the
# wall time of the whole command, start to exit.
set -u
BUILD=$(readlink -f "${1:-build}")
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
PERF=$BUILD/perf/weft-perf
NETTEST=$BUILD/tests/netns/weft-nettest
LIB=$BUILD/src/core/libweft.so
for f in "$PERF" "$NETTEST" "$LIB"; do
  [[ -e $f ]] || { echo "fault_matrix_netns.sh: $f is missing; build first (ninja -C $BUILD weft-perf weft-nettest)" >&2; exit 2; }
done

now_ms() { date +%s%3N; }
# first_lines LABEL START_MS FILE: the first Weft line of each process (pid) in FILE.
first_lines() {
  local label=$1 start=$2 file=$3 took
  took=$(awk -v a="$start" -v b="$(now_ms)" 'BEGIN { printf "%.2f", (b - a) / 1000 }')
  echo "## $label (whole command: $took s)"
  awk -F: '/ weft (WARN|INFO) / && !seen[$2]++ { print "  " $0 }' "$file" | cut -c1-400
}

netns_row() {
  local label=$1
  shift
  echo "## $label"
  timeout 300 "$HERE/tests/netns/run_scenario.sh" "$NETTEST" "$@" 2>&1 | grep -E '^(ok|FAIL|netns)' | cut -c1-450 | sed 's/^/  /'
}

netns_row "killed rank (SIGKILL of rank 3 of 4, 2 hosts, sockets)" kill
netns_row "link down (eth0 of host 1, WEFT_TIMEOUT_S=15)" linkdown
netns_row "a rank that never joins (rank 3 of 4, WEFT_TIMEOUT_S=5)" neverjoin --missing 3
# The stranger's row: the ranks pass; what the root (in rank 0) logs is the interesting part.
echo "## stranger on the bootstrap port (the ranks go on)"
out=$(NETNS_KEEP_LOGS=1 timeout 300 "$HERE/tests/netns/run_scenario.sh" "$NETTEST" stranger 2>&1)
echo "$out" | grep -E '^(ok|FAIL|netns)' | cut -c1-300 | sed 's/^/  /'
logs=$(echo "$out" | grep -oE '/tmp/weftt-[0-9]+-logs\.[A-Za-z0-9]+' | head -n1)
if [[ -n $logs && -d $logs ]]; then
  grep -h 'WARN' "$logs/rank0.err" | head -n 4 | cut -c1-300 | sed 's/^/  rank0: /'
  rm -rf "$logs"
fi

log=$(mktemp)
trap 'rm -f "$log"' EXIT

start=$(now_ms)
unshare -m sh -c "mount --make-rprivate / && mount -t tmpfs -o size=2m tmpfs /dev/shm &&
  WEFT_TIMEOUT_S=30 WEFT_BUFFSIZE=4194304 '$PERF' -np 2 -b 1M -e 1M -n 1 -w 0" > "$log" 2>&1
first_lines "full /dev/shm (2 MiB; 2 ranks as processes)" "$start" "$log"

for setting in WEFT_NSLOTS=0 WEFT_TIMEOUT_S=0 WEFT_ALGO=bogus; do
  start=$(now_ms)
  env "$setting" "$PERF" -np 2 -b 8 -e 8 -n 1 -w 0 > "$log" 2>&1
  first_lines "bad parameter $setting" "$start" "$log"
done

start=$(now_ms)
python3 - "$LIB" > "$log" 2>&1 <<'EOF'
import ctypes, sys, threading
weft = ctypes.CDLL(sys.argv[1])
class UniqueId(ctypes.Structure):
    _fields_ = [("internal", ctypes.c_char * 128)]
P = ctypes.c_void_p
weft.weftGetLastError.restype = ctypes.c_char_p
weft.weftGetLastError.argtypes = [P]
weft.weftGetUniqueId.argtypes = [ctypes.POINTER(UniqueId)]
weft.weftCommInitRank.argtypes = [ctypes.POINTER(P), ctypes.c_int, UniqueId, ctypes.c_int]
weft.weftCommInitAll.argtypes = [ctypes.POINTER(P), ctypes.c_int, P]
weft.weftAllReduce.argtypes = [P, P, ctypes.c_size_t, ctypes.c_int, ctypes.c_int, P, P]
weft.weftCommDestroy.argtypes = [P]
comms = (P * 2)()
assert weft.weftCommInitAll(comms, 2, None) == 0
buf = (ctypes.c_float * 4)()
r = weft.weftAllReduce(None, ctypes.cast(buf, P), 4, 7, 0, comms[0], None)  # 7: weftFloat32, 0: weftSum
print("weftAllReduce returned", r, ":", weft.weftGetLastError(comms[0]).decode(), flush=True)
for c in comms:
    weft.weftCommDestroy(c)
EOF
first_lines "bad argument (null send buffer)" "$start" "$log"
grep -h '^weftAllReduce returned' "$log" | sed 's/^/  /'

start=$(now_ms)
python3 - "$LIB" > "$log" 2>&1 <<'EOF'
import ctypes, sys, threading
weft = ctypes.CDLL(sys.argv[1])
class UniqueId(ctypes.Structure):
    _fields_ = [("internal", ctypes.c_char * 128)]
P = ctypes.c_void_p
weft.weftGetLastError.restype = ctypes.c_char_p
weft.weftGetLastError.argtypes = [P]
weft.weftGetUniqueId.argtypes = [ctypes.POINTER(UniqueId)]
weft.weftCommInitRank.argtypes = [ctypes.POINTER(P), ctypes.c_int, UniqueId, ctypes.c_int]
weft.weftCommInitAll.argtypes = [ctypes.POINTER(P), ctypes.c_int, P]
weft.weftAllReduce.argtypes = [P, P, ctypes.c_size_t, ctypes.c_int, ctypes.c_int, P, P]
weft.weftCommDestroy.argtypes = [P]
uid = UniqueId()
assert weft.weftGetUniqueId(ctypes.byref(uid)) == 0
def run(tag):
    comms = [P() for _ in range(2)]
    res = [None, None]
    def rank(r):
        res[r] = weft.weftCommInitRank(ctypes.byref(comms[r]), 2, uid, r)
    ts = [threading.Thread(target=rank, args=(r,)) for r in range(2)]
    [t.start() for t in ts]
    [t.join() for t in ts]
    for r in range(2):
        if res[r] == 0:
            weft.weftCommDestroy(comms[r])
    print(tag, "results", res, flush=True)
run("first")
run("second")
EOF
first_lines "unique id used twice (second communicator, 2 ranks as threads)" "$start" "$log"
