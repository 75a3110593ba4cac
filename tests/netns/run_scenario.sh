#!/usr/bin/env bash
# run_scenario.sh NETTEST SCENARIO [--net socket|ofi] [--hosts K] [--per-host P] [--missing R] [--hub HUB]
#                 [--placement block|cyclic] [--inspect WEFT_INSPECT]
#
# One multi-host test (ctest -L netns; tests/netns/CMakeLists.txt registers them): makes K hosts
# with netns.sh, starts K*P ranks of weft-nettest (rank r on host r/P, so ranks on one host share
# memory and ranks on different hosts use the network transport WEFT_NET), and judges them.
#
#   collectives  every collective, type and op, bit-exact; passes when every rank exits 0
#   kill         `loop`; SIGKILL the last rank mid-loop; every survivor must fail within
#                WEFT_TIMEOUT_S + margin, naming the dead rank
#   linkdown     `loop`; eth0 of the last host goes down mid-loop; every rank must fail within
#                WEFT_TIMEOUT_S + margin, naming a peer
#   stop         `loop` with WEFT_TIMEOUT_S=1800; SIGSTOP the last rank mid-loop; every other rank
#                must fail within 10 s naming it (the heartbeat, not the time-out)
#   silenthost   `loop` with WEFT_TIMEOUT_S=1800; eth0 of the last host goes down; every rank must
#                fail within 10 s on a stalled heartbeat (ranks across hosts beat over UDP)
#   neverjoin    rank R (--missing) is never started; the others must fail with a time-out that
#                names it
#   stranger     a stranger pokes the bootstrap root (garbage, wrong secret, silence, ...) and a
#                rank with a wrong secret knocks; the real ranks must init and pass `collectives quick`
#   netem        200 ms delay and 1% loss on every host; `collectives quick` must pass. Without
#                the netem qdisc, weft-netem-hub does it (HUB, by default next to NETTEST;
#                NETNS_NETEM=hub uses it even where the qdisc exists)
#   abort        `abort`: weftCommAbort unblocks a collective in < 1 s; a new communicator works
#   inspect      `loop` with WEFT_RECORDER_DIR; SIGKILL every rank of the last host mid-loop; the
#                survivors dump their flight recorders, and `weft-inspect DIR` (--inspect) must name
#                the dead host's ranks as missing and the one call every survivor failed in
#   topology     every host its own WEFT_TOPO_FILE (two NUMA nodes of one CPU each, a NIC on each),
#                its ranks bound to alternate CPUs (host 1's the other way round); `collectives
#                quick` must pass, and in rank 0's GRAPH log every ring must cross between hosts
#                exactly twice (once each way) and each host must send through both its NICs
#   nicbind      as topology, but each host really has the two NICs its file names (nic0, nic1 on
#                two subnets: netns_add_nics), and the ranks run `loop` (4 MiB all-reduces, rings
#                on 2 channels); the network transport must use each rank's NIC (socket: listen
#                on it and bind to it; ofi: open the domain on it). Checked from the kernel's side: every TCP connection of a rank off
#                the bootstrap's subnet starts at its own NIC's address and stays on that subnet
#                (ss -tnp in each host, sampled while the loop runs), and the transmit counters of
#                nic0 and nic1 (/sys/class/net/*/statistics) each carry at least a quarter of what
#                the host sends to the other, eth0 under 5%
#
# Exit status: 0 pass, 1 fail, 77 skipped (not root, no namespaces, neither netem nor the hub, no
# libfabric).
set -u
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source-path=SCRIPTDIR source=netns.sh
source "$here/netns.sh"

if [[ $# -lt 2 ]]; then
  sed -n '2,34p' "$0" | sed 's/^# \{0,1\}//' >&2
  exit 2
fi
NETTEST=$(readlink -f "$1")
SCENARIO=$2
shift 2
NET=socket
HOSTS=2
PER_HOST=2
MISSING=""
HUB=""
PLACEMENT=block
INSPECT=""
while [[ $# -gt 0 ]]; do
  case $1 in
    --net) NET=$2; shift 2 ;;
    --hosts) HOSTS=$2; shift 2 ;;
    --per-host) PER_HOST=$2; shift 2 ;;
    --missing) MISSING=$2; shift 2 ;;
    --hub) HUB=$2; shift 2 ;;
    --placement) PLACEMENT=$2; shift 2 ;;
    --inspect) INSPECT=$2; shift 2 ;;
    *) echo "run_scenario.sh: unknown option $1" >&2; exit 2 ;;
  esac
done
NRANKS=$((HOSTS * PER_HOST))
[[ -x $NETTEST ]] || { echo "run_scenario.sh: $NETTEST is not an executable" >&2; exit 2; }
NETNS_HUB=$(readlink -f "${HUB:-$(dirname "$NETTEST")/weft-netem-hub}")

# Fresh namespaces: the root's port is free in host 0 whatever runs on the machine.
PORT=29500
SECRET=$(od -An -N16 -tx1 /dev/urandom | tr -d ' \n')
declare -a RANK_ENV=("WEFT_NET=$NET")
if [[ $NET == ofi ]]; then
  ldconfig -p 2>/dev/null | grep -q 'libfabric\.so\.1 ' ||
    netns_skip "WEFT_NET=ofi needs libfabric (libfabric.so.1 is not installed)"
  RANK_ENV+=("WEFT_OFI_PROVIDER=${WEFT_OFI_PROVIDER:-tcp;ofi_rxm}")
fi
# Pass the caller's logging choices through (e.g. WEFT_DEBUG=INFO to see the transports chosen).
for v in WEFT_DEBUG WEFT_DEBUG_SUBSYS WEFT_ALGO WEFT_SHM_DISABLE; do
  [[ -n ${!v+x} ]] && RANK_ENV+=("$v=${!v}")
done

FAILED=0
fail() {
  echo "FAIL: $*"
  FAILED=1
}

# host_of R: rank R's host: R/PER_HOST (block: ranks numbered host by host, as mpirun does by
# default) or R%HOSTS (cyclic: neighbours in rank order on different hosts, so Weft must reorder
# its rings to cross between hosts only once per host).
host_of() {
  if [[ $PLACEMENT == cyclic ]]; then echo $(($1 % HOSTS)); else echo $(($1 / PER_HOST)); fi
}
# start_rank R LIMIT_S ARGS...: rank R of NRANKS on host_of R, with RANK_ENV and EXTRA_ENV.
declare -a EXTRA_ENV=()
start_rank() {
  local r=$1 limit=$2
  shift 2
  netns_spawn "rank$r" "$(host_of "$r")" "$limit" \
    WEFT_RANK="$r" WEFT_NRANKS="$NRANKS" WEFT_ROOT_ADDR="$(netns_addr 0):$PORT" WEFT_ROOT_SECRET="$SECRET" \
    "${RANK_ENV[@]}" "${EXTRA_ENV[@]}" -- "$NETTEST" "$@"
}

# Every rank must have exited 0.
judge_all_pass() {
  local name rc
  for name in "${NETNS_NAMES[@]}"; do
    [[ $name == rank* ]] || continue
    rc=${NETNS_RC[$name]}
    if [[ $rc -ne 0 ]]; then
      case $rc in
        124 | 137) fail "$name hung: still running after its time limit (exit $rc)" ;;
        *) fail "$name exited $rc after $(netns_seconds "${NETNS_START[$name]}" "${NETNS_END[$name]}") s" ;;
      esac
      netns_show "$name" 15
    fi
  done
}

# Waits until every running rank printed "iteration N ok"; fails if a rank ends first.
wait_for_iteration() {
  local want=$1 limit_s=$2 r name deadline
  deadline=$(($(netns_now_us) + limit_s * 1000000))
  while :; do
    local behind=0
    for ((r = 0; r < NRANKS; r++)); do
      name=rank$r
      if ! grep -q "iteration $want ok" "$NETNS_LOGS/$name.out" 2>/dev/null; then
        behind=1
        if ! netns_running "$name"; then
          echo "FAIL: $name ended before iteration $want of the loop; nothing was tested"
          netns_wait_all
          netns_show "$name" 10
          return 1
        fi
      fi
    done
    ((behind == 0)) && return 0
    if (($(netns_now_us) > deadline)); then
      echo "FAIL: the ranks did not reach iteration $want within $limit_s s"
      return 1
    fi
    sleep 0.1
  done
}

# Survivors of a fault: each must fail (not succeed, not hang) within limit_s of the fault at
# fault_us, and its stderr must match the extended regex `pattern` (with @SELF@ = its rank).
judge_fault() {
  local fault_us=$1 limit_s=$2 pattern=$3 what=$4 name rc took r
  for ((r = 0; r < NRANKS; r++)); do
    name=rank$r
    [[ -n ${NETNS_RC[$name]+x} ]] || continue
    [[ $name == "${VICTIM:-none}" ]] && continue
    rc=${NETNS_RC[$name]}
    took=$(netns_seconds "$fault_us" "${NETNS_END[$name]}")
    local bad=""
    if [[ $rc -eq 0 ]]; then
      bad="exited 0: it reported success after $what"
    elif [[ $rc -eq 124 || $rc -eq 137 ]]; then
      bad="hung: killed by its time limit $took s after $what"
    elif awk -v t="$took" -v l="$limit_s" 'BEGIN { exit !(t > l) }'; then
      bad="failed only $took s after $what (limit $limit_s s)"
    elif ! check_names "$name" "$r" "$pattern"; then
      bad="failed $took s after $what, but its message does not name $PATTERN_DESC"
    fi
    if [[ -n $bad ]]; then
      fail "$name $bad"
      netns_show "$name" 8
    else
      echo "ok: $name failed (exit $rc) $took s after $what: $(grep -m1 -v '^$' "$NETNS_LOGS/$name.err" | cut -c1-400)"
    fi
  done
}

# check_names NAME SELF PATTERN: NAME's stderr matches PATTERN; the special pattern "@PEER@"
# means "names a rank other than SELF".
check_names() {
  local name=$1 self=$2 pattern=$3 err=$NETNS_LOGS/$1.err
  if [[ $pattern == "@PEER@" ]]; then
    grep -oE 'rank [0-9]+' "$err" | grep -vqx "rank $self"
  else
    grep -qE "$pattern" "$err"
  fi
}

scenario_collectives() {
  netns_up "$HOSTS"
  EXTRA_ENV=(WEFT_TIMEOUT_S=120)
  for ((r = 0; r < NRANKS; r++)); do start_rank "$r" 500 collectives; done
  netns_wait_all
  judge_all_pass
  grep -h . "$NETNS_LOGS/rank0.out" | sed 's/^/  /'
}

loop_fault() {
  local kind=$1 timeout_s=15 margin_s=10
  netns_up "$HOSTS"
  EXTRA_ENV=("WEFT_TIMEOUT_S=$timeout_s")
  for ((r = 0; r < NRANKS; r++)); do start_rank "$r" 120 loop 1000000; done
  wait_for_iteration 3 60 || exit 1
  local fault_us
  fault_us=$(netns_now_us)
  if [[ $kind == kill ]]; then
    VICTIM=rank$((NRANKS - 1))
    netns_log "SIGKILL $VICTIM"
    netns_kill "$VICTIM"
    netns_wait_all
    PATTERN_DESC="the dead rank ($((NRANKS - 1)))"
    judge_fault "$fault_us" $((timeout_s + margin_s)) "rank $((NRANKS - 1))([^0-9]|$)" "rank $((NRANKS - 1)) was killed"
  else
    netns_log "eth0 down in host $((HOSTS - 1))"
    netns_link_down $((HOSTS - 1))
    netns_wait_all
    PATTERN_DESC="a peer"
    judge_fault "$fault_us" $((timeout_s + margin_s)) "@PEER@" "eth0 of host $((HOSTS - 1)) went down"
  fi
}

# Waits for every rank but VICTIM to end (recording when), then SIGKILLs VICTIM.
wait_survivors() {
  local name done_pid rc
  local -a pending
  while :; do
    pending=()
    for name in "${NETNS_NAMES[@]}"; do
      [[ $name == "$VICTIM" || -n ${NETNS_RC[$name]+x} ]] || pending+=("${NETNS_PID_OF[$name]}")
    done
    ((${#pending[@]} > 0)) || break
    done_pid=""
    wait -n -p done_pid "${pending[@]}" 2>/dev/null
    rc=$?
    [[ -n ${done_pid:-} ]] || continue
    NETNS_RC[${NETNS_NAME_OF[$done_pid]}]=$rc
    NETNS_END[${NETNS_NAME_OF[$done_pid]}]=$(netns_now_us)
  done
  netns_kill "$VICTIM"
}

# A rank or a host goes silent without closing anything: only the heartbeat can tell, long before
# WEFT_TIMEOUT_S (1800 s here).
silence_fault() {
  local kind=$1 limit_s=10 victim=$((NRANKS - 1)) fault_us
  netns_up "$HOSTS"
  EXTRA_ENV=("WEFT_TIMEOUT_S=1800" "WEFT_HEARTBEAT_TIMEOUT_S=3")
  for ((r = 0; r < NRANKS; r++)); do start_rank "$r" 120 loop 1000000; done
  wait_for_iteration 3 60 || exit 1
  fault_us=$(netns_now_us)
  if [[ $kind == stop ]]; then
    VICTIM=rank$victim
    netns_log "SIGSTOP $VICTIM"
    kill -STOP -- "-${NETNS_PID_OF[$VICTIM]}" 2>/dev/null || kill -STOP "${NETNS_PID_OF[$VICTIM]}"
    wait_survivors
    PATTERN_DESC="the stopped rank ($victim)"
    judge_fault "$fault_us" "$limit_s" "rank $victim \\(host|caused by rank $victim([^0-9]|$)|blaming rank $victim([^0-9]|$)" \
      "rank $victim was stopped"
  else
    netns_log "eth0 down in host $((HOSTS - 1))"
    netns_link_down $((HOSTS - 1))
    netns_wait_all
    PATTERN_DESC="a rank whose heartbeat stalled"
    judge_fault "$fault_us" "$limit_s" "heartbeat|caused by rank" "eth0 of host $((HOSTS - 1)) went down"
  fi
}

scenario_neverjoin() {
  local timeout_s=5 margin_s=10 r missing=${MISSING:-$((NRANKS - 1))}
  netns_up "$HOSTS"
  EXTRA_ENV=("WEFT_TIMEOUT_S=$timeout_s")
  for ((r = 0; r < NRANKS; r++)); do
    ((r == missing)) || start_rank "$r" 60 collectives quick
  done
  netns_wait_all
  local start_us=${NETNS_START[rank$(((missing + 1) % NRANKS))]}
  if ((missing == 0)); then
    # No rank 0, no root: the message must say whom the ranks waited for.
    PATTERN_DESC="rank 0 or the root's address $(netns_addr 0):$PORT"
    judge_fault "$start_us" $((timeout_s + margin_s)) "rank 0([^0-9]|$)|$(netns_addr 0):$PORT" "starting without rank 0"
  else
    PATTERN_DESC="the missing rank $missing"
    judge_fault "$start_us" $((timeout_s + margin_s)) "rank $missing([^0-9]|$)" "starting without rank $missing"
  fi
  # And it must be a time-out, not some other error.
  for ((r = 0; r < NRANKS; r++)); do
    ((r == missing)) && continue
    grep -qiE 'timeout|timed out|within' "$NETNS_LOGS/rank$r.err" ||
      fail "rank$r: its message does not say it timed out"
  done
}

scenario_stranger() {
  netns_up "$HOSTS"
  EXTRA_ENV=(WEFT_TIMEOUT_S=60)
  # Rank 0 starts the root; the stranger (on the last host, across the network) and a rank with
  # the wrong secret knock while the root waits; the other ranks come 2 s later.
  start_rank 0 300 collectives quick
  netns_spawn stranger $((HOSTS - 1)) 60 -- "$NETTEST" stranger "$(netns_addr 0):$PORT" 8
  netns_spawn impostor $((HOSTS - 1)) 60 WEFT_RANK=1 WEFT_NRANKS="$NRANKS" WEFT_ROOT_ADDR="$(netns_addr 0):$PORT" \
    WEFT_ROOT_SECRET=0123456789abcdef0123456789abcdef "${RANK_ENV[@]}" WEFT_TIMEOUT_S=20 -- "$NETTEST" collectives quick
  sleep 2
  for ((r = 1; r < NRANKS; r++)); do start_rank "$r" 300 collectives quick; done
  netns_wait_all
  judge_all_pass
  if [[ ${NETNS_RC[stranger]} -ne 0 ]]; then
    fail "the stranger exited ${NETNS_RC[stranger]}"
  fi
  netns_show stranger 30
  if [[ ${NETNS_RC[impostor]} -eq 0 ]]; then
    fail "a rank with the wrong secret joined"
  elif ! grep -qi 'secret' "$NETNS_LOGS/impostor.err"; then
    fail "the rank with the wrong secret failed, but its message does not mention the secret"
    netns_show impostor 8
  else
    echo "ok: the rank with the wrong secret was turned away: $(head -n1 "$NETNS_LOGS/impostor.err" | cut -c1-300)"
  fi
}

scenario_netem() {
  netns_up "$HOSTS"
  netns_netem_all delay 200ms loss 1%
  EXTRA_ENV=(WEFT_TIMEOUT_S=120)
  for ((r = 0; r < NRANKS; r++)); do start_rank "$r" 240 collectives quick; done
  netns_wait_all
  judge_all_pass
  grep -h . "$NETNS_LOGS/rank0.out" | sed 's/^/  /'
  netns_hub_stop
}

scenario_abort() {
  netns_up "$HOSTS"
  EXTRA_ENV=(WEFT_TIMEOUT_S=10)
  for ((r = 0; r < NRANKS; r++)); do start_rank "$r" 60 abort; done
  netns_wait_all
  judge_all_pass
  for ((r = 0; r < NRANKS; r++)); do grep -h 'abort' "$NETNS_LOGS/rank$r.out" | sed 's/^/  /'; done
}

# topology_file H [PREFIX]: host H's machine: NUMA node n holds CPU n and the NIC PREFIXn
# (default mlx5_).
topology_file() {
  local n prefix=${2:-mlx5_}
  echo '<system version="1">'
  for n in 0 1; do
    cat <<XML
  <cpu numaid="$n" affinity="0000000$((1 << n))" arch="x86_64" vendor="AuthenticAMD" familyid="25" modelid="1">
    <pci busid="0000:$((n * 8 + 1))0:00.0" class="0x020000" vendor="0x15b3" device="0x1021" link_speed="16.0 GT/s PCIe" link_width="16">
      <nic><net name="$prefix$n" dev="$n" speed="100000" port="1" guid="0x$1$n" maxconn="131072" gdr="0"/></nic>
    </pci>
  </cpu>
XML
  done
  echo '</system>'
}

# check_rings LOG [PREFIX]: every "ring K (...): ranks; host H sends from rank R via NIC N; ..." line of
# rank 0's GRAPH log crosses between hosts exactly twice, and each host sends through 2 NICs
# (PREFIX0 and PREFIX1; default mlx5_).
check_rings() {
  local log=$1 prefix=${2:-mlx5_} line ranks rings=0 h
  declare -A nics=()
  while IFS= read -r line; do
    rings=$((rings + 1))
    ranks=${line#*): }
    ranks=${ranks%%;*}
    ranks=${ranks//|/}
    local -a list=()
    read -r -a list <<<"$ranks"
    local crossings=0 i n=${#list[@]}
    for ((i = 0; i < n; i++)); do
      [[ $(host_of "${list[i]}") != $(host_of "${list[(i + 1) % n]}") ]] && crossings=$((crossings + 1))
    done
    ((n == NRANKS)) || fail "ring line lists $n of $NRANKS ranks: $line"
    ((crossings == 2)) || fail "ring crosses between hosts $crossings times, not twice: $line"
    for ((h = 0; h < HOSTS; h++)); do
      [[ $line =~ host\ $h\ sends\ from\ rank\ [0-9]+\ via\ NIC\ ([a-z0-9_]+) ]] || fail "no NIC for host $h: $line"
      nics[$h]+=" ${BASH_REMATCH[1]}"
    done
    echo "  $line"
  done < <(grep -v 'trees of ring' "$log" | grep -oE 'ring [0-9]+ \(.*')
  ((rings >= 2)) || fail "rank 0 logged $rings rings; one per NIC (2) expected"
  for ((h = 0; h < HOSTS; h++)); do
    [[ ${nics[$h]} == *${prefix}0* && ${nics[$h]} == *${prefix}1* ]] || fail "host $h sends only through${nics[$h]}"
  done
}

scenario_topology() {
  (($(nproc) >= 2)) || netns_skip "the topology scenario binds ranks to two CPUs; this machine has $(nproc)"
  netns_up "$HOSTS"
  local r h cpu
  for ((h = 0; h < HOSTS; h++)); do topology_file "$h" >"$NETNS_LOGS/host$h.xml"; done
  for ((r = 0; r < NRANKS; r++)); do
    h=$(host_of "$r")
    cpu=$(((r + h) % 2))  # host 0: ranks on CPUs 0 1 0 1 ..., host 1: 1 0 1 0 ...
    netns_spawn "rank$r" "$h" 500 WEFT_RANK="$r" WEFT_NRANKS="$NRANKS" WEFT_ROOT_ADDR="$(netns_addr 0):$PORT" \
      WEFT_ROOT_SECRET="$SECRET" "${RANK_ENV[@]}" WEFT_TIMEOUT_S=120 WEFT_TOPO_FILE="$NETNS_LOGS/host$h.xml" \
      WEFT_DEBUG=INFO WEFT_DEBUG_SUBSYS=GRAPH -- taskset -c "$cpu" "$NETTEST" collectives quick
  done
  netns_wait_all
  judge_all_pass
  check_rings "$NETNS_LOGS/rank0.err"
}

# tx_bytes H IF: bytes interface IF of host H has sent.
tx_bytes() { netns_exec "$1" cat "/sys/class/net/$2/statistics/tx_bytes"; }

# Appends every established TCP connection of every host to $NETNS_LOGS/ss.h<H>, as
# "RANK LOCAL PEER" (RANK: the WEFT_RANK of the process that owns it, - when not a rank).
declare -A RANK_OF_PID=()
sample_connections() {
  local h line pid
  for ((h = 0; h < HOSTS; h++)); do
    while IFS= read -r line; do
      [[ $line =~ pid=([0-9]+) ]] || continue
      pid=${BASH_REMATCH[1]}
      if [[ -z ${RANK_OF_PID[$pid]+x} ]]; then
        RANK_OF_PID[$pid]=$(tr '\0' '\n' < "/proc/$pid/environ" 2>/dev/null | sed -n 's/^WEFT_RANK=//p')
      fi
      read -r -a f <<<"$line"
      echo "${RANK_OF_PID[$pid]:--} ${f[2]} ${f[3]}" >> "$NETNS_LOGS/ss.h$h"
    done < <(netns_exec "$h" ss -tnpH state established 2>/dev/null)
  done
}

# check_connections: each rank's connections off eth0's subnet start at its own NIC's address
# (nic<(R + H) % 2> of its host: its CPU's NUMA node's) and end on the same subnet.
check_connections() {
  local h r local_ip peer_ip want nic
  declare -A seen=() count=()
  for ((h = 0; h < HOSTS; h++)); do
    [[ -s $NETNS_LOGS/ss.h$h ]] || { fail "no TCP connection was seen in host $h"; continue; }
    while read -r r local_ip peer_ip; do
      [[ $r == - ]] && continue
      local_ip=${local_ip%:*}
      peer_ip=${peer_ip%:*}
      [[ -n ${seen[$r $local_ip $peer_ip]+x} ]] && continue
      seen[$r $local_ip $peer_ip]=1
      # ss writes ADDRESS%IF for a socket bound to an interface (SO_BINDTODEVICE, as root).
      local bound=""
      [[ $local_ip == *%* ]] && bound=", bound to ${local_ip#*%}"
      local_ip=${local_ip%%%*}
      [[ $local_ip == 198.18.0.* ]] && continue  # the bootstrap's subnet
      nic=$(((r + h) % 2))
      want=$(netns_nic_addr "$h" "$nic")
      count[$r]=$((${count[$r]:-0} + 1))
      if [[ $local_ip != "$want" ]]; then
        fail "rank $r (host $h, near nic$nic = $want) has a connection from $local_ip to $peer_ip"
      elif [[ ${peer_ip%.*} != "${local_ip%.*}" ]]; then
        fail "rank $r's connection from its nic$nic ($local_ip) ends on another subnet: $peer_ip"
      else
        echo "  ok: rank $r: $local_ip (nic$nic$bound) <-> $peer_ip"
      fi
    done < "$NETNS_LOGS/ss.h$h"
  done
  for ((r = 0; r < NRANKS; r++)); do
    ((${count[$r]:-0} > 0)) || fail "rank $r had no connection through a NIC while the loop ran"
  done
}

scenario_nicbind() {
  (($(nproc) >= 2)) || netns_skip "the nicbind scenario binds ranks to two CPUs; this machine has $(nproc)"
  command -v ss > /dev/null || netns_skip "iproute2's ss is not installed"
  ((HOSTS == 2 && PER_HOST == 2)) || { echo "run_scenario.sh: nicbind runs 2 hosts of 2 ranks" >&2; exit 2; }
  netns_up "$HOSTS"
  netns_add_nics 2
  local r h cpu iters=40 ifc
  declare -A before=()
  for ((h = 0; h < HOSTS; h++)); do
    topology_file "$h" nic >"$NETNS_LOGS/host$h.xml"
    for ifc in eth0 nic0 nic1; do before[$h.$ifc]=$(tx_bytes "$h" "$ifc"); done
  done
  for ((r = 0; r < NRANKS; r++)); do
    h=$(host_of "$r")
    cpu=$(((r + h) % 2))  # host 0: rank 0 near nic0, rank 1 near nic1; host 1 the other way round
    netns_spawn "rank$r" "$h" 300 WEFT_RANK="$r" WEFT_NRANKS="$NRANKS" WEFT_ROOT_ADDR="$(netns_addr 0):$PORT" \
      WEFT_ROOT_SECRET="$SECRET" "${RANK_ENV[@]}" WEFT_TIMEOUT_S=120 WEFT_TOPO_FILE="$NETNS_LOGS/host$h.xml" \
      WEFT_ALGO=ring WEFT_MIN_NCHANNELS=2 WEFT_MAX_NCHANNELS=2 WEFT_DEBUG=INFO WEFT_DEBUG_SUBSYS=GRAPH,NET \
      -- taskset -c "$cpu" "$NETTEST" loop "$iters"
  done
  local running=1
  while ((running)); do
    sample_connections
    running=0
    for ((r = 0; r < NRANKS; r++)); do netns_running "rank$r" && running=1; done
    sleep 0.2
  done
  netns_wait_all
  judge_all_pass
  check_rings "$NETNS_LOGS/rank0.err" nic
  check_connections
  # 4 ranks, 2 per host: a ring all-reduce of 4 MiB sends 2 * 3/4 * 4 MiB from each rank, and
  # half of the rings' edges cross between the hosts: 6 MiB from each host per iteration.
  local expect=$((iters * 6 * 1024 * 1024)) sent
  for ((h = 0; h < HOSTS; h++)); do
    for ifc in eth0 nic0 nic1; do
      sent=$(($(tx_bytes "$h" "$ifc") - ${before[$h.$ifc]}))
      echo "  host $h $ifc sent $sent bytes (the host sends about $expect to the other)"
      if [[ $ifc == eth0 ]]; then
        ((sent * 20 < expect)) || fail "host $h's eth0 carried $sent bytes: the data did not keep to the NICs"
      else
        ((sent * 4 >= expect)) || fail "host $h's $ifc carried only $sent bytes of about $expect"
      fi
    done
  done
  if grep -qE 'default (interface|route)' "$NETNS_LOGS"/rank*.err; then
    fail "a rank fell back to the default interface or route: $(grep -hE 'default (interface|route)' "$NETNS_LOGS"/rank*.err | head -n1)"
  fi
}

# Host K-1's ranks are killed mid-loop: every survivor dumps its flight recorder into
# WEFT_RECORDER_DIR (a failure a peer caused), and `weft-inspect DIR` must name the dead host's
# ranks as missing and the call each survivor failed in, the same call for all.
scenario_inspect() {
  [[ -x $INSPECT ]] || { echo "run_scenario.sh: inspect needs --inspect PATH (weft-inspect)" >&2; exit 2; }
  netns_up "$HOSTS"
  local dir first_dead r out calls missing
  dir=$(mktemp -d /tmp/weft-netns-inspect.XXXXXX)
  EXTRA_ENV=(WEFT_TIMEOUT_S=15 "WEFT_RECORDER_DIR=$dir")
  for ((r = 0; r < NRANKS; r++)); do start_rank "$r" 120 loop 1000000; done
  wait_for_iteration 3 60 || exit 1
  first_dead=$(((HOSTS - 1) * PER_HOST))
  netns_log "SIGKILL ranks $first_dead-$((NRANKS - 1)) (host $((HOSTS - 1)))"
  for ((r = first_dead; r < NRANKS; r++)); do netns_kill "rank$r"; done
  netns_wait_all
  out=$("$INSPECT" "$dir")
  echo "$out"
  if ((NRANKS - first_dead == 1)); then missing="rank $first_dead of $NRANKS is missing"
  else missing="ranks $first_dead-$((NRANKS - 1)) of $NRANKS are missing"; fi
  grep -qF "$missing" <<<"$out" || fail "weft-inspect does not say \"$missing\""
  for ((r = 0; r < first_dead; r++)); do
    grep -qE "=> rank $r failed in allreduce #[0-9]+" <<<"$out" || fail "weft-inspect does not name the call rank $r failed in"
  done
  calls=$(grep -oE "=> rank [0-9]+ failed in allreduce #[0-9]+" <<<"$out" | grep -oE "#[0-9]+" | sort -u | wc -l)
  ((calls == 1)) || fail "the survivors failed in $calls different calls; expected one"
  rm -rf "$dir"
}

case $SCENARIO in
  collectives) scenario_collectives ;;
  inspect) scenario_inspect ;;
  topology) scenario_topology ;;
  nicbind) scenario_nicbind ;;
  kill | linkdown) loop_fault "$SCENARIO" ;;
  stop | silenthost) silence_fault "$SCENARIO" ;;
  neverjoin) scenario_neverjoin ;;
  stranger) scenario_stranger ;;
  netem) scenario_netem ;;
  abort) scenario_abort ;;
  *) echo "run_scenario.sh: unknown scenario $SCENARIO" >&2; exit 2 ;;
esac

if ((FAILED)); then
  echo "netns $SCENARIO ($NRANKS ranks on $HOSTS host(s), WEFT_NET=$NET): FAILED"
  exit 1
fi
echo "netns $SCENARIO ($NRANKS ranks on $HOSTS host(s), WEFT_NET=$NET): passed"
exit 0
