#!/usr/bin/env bash
# netns.sh: several "hosts" on one machine for Weft's multi-host tests, made of Linux network
# namespaces. A bash library: run_scenario.sh sources it (ctest -L netns runs the scenarios).
#
# The topology of one run (every name carries the prefix weftt-<pid of the test script>-):
#
#     weftt-<pid>-h0            weftt-<pid>-h1           ...   weftt-<pid>-h<K-1>      "hosts"
#     lo, eth0 198.18.0.1/24    lo, eth0 198.18.0.2/24         lo, eth0 198.18.0.K/24
#        | veth                    | veth                           | veth
#     ---p0---------------------- p1 ----------------------------- p<K-1> --- br0   weftt-<pid>-sw
#                                                                                    "switch"
# Each host namespace holds lo and eth0, one end of a veth pair; the other end, p<i>, is a port
# of bridge br0, which lives in a namespace of its own. Nothing is created in the root namespace,
# and the addresses (198.18.0.0/15 is reserved for benchmarking, RFC 2544) exist only inside the
# namespaces. Weft counts processes in different network namespaces as different hosts, so ranks
# in one namespace talk through shared memory and ranks in different ones through the network.
#
# Slow, lossy links (netns_netem_all delay 200ms loss 1%): a netem qdisc on each eth0 where the
# kernel has one. Where it has none (or NETNS_NETEM=hub), the veth pairs and the bridge give way
# to weft-netem-hub (netem_hub.cc; path in NETNS_HUB), a user-space switch in the switch namespace
# whose TAP devices become the hosts' eth0:
#
#     weftt-<pid>-h0: eth0 (TAP)   ...   weftt-<pid>-h<K-1>: eth0 (TAP)
#                  \ fd                          / fd
#                   weft-netem-hub in weftt-<pid>-sw: every frame waits the delay, or is lost
#
# Cleanup: netns_up installs a trap (EXIT, INT, TERM) that kills every process this run started
# (each runs under `timeout` in a process group of its own) and the hub, if any (it also dies with
# the script, through PR_SET_PDEATHSIG, and its TAPs with it), and anything left inside its
# namespaces, then deletes the namespaces. A run killed with SIGKILL leaves them behind; the
# next run's netns_up removes weftt-<pid>-* namespaces whose pid no longer exists.
# Without root (or where `ip netns add` fails, e.g. a container without CAP_SYS_ADMIN) the run
# exits 77, which ctest reports as skipped.
#
# One test by hand (as root, from the repository root, after building build-netns):
#   tests/netns/run_scenario.sh build-netns/tests/netns/weft-nettest collectives --net socket --hosts 2 --per-host 2
#   NETNS_KEEP_LOGS=1 tests/netns/run_scenario.sh ... keeps every rank's stdout/stderr (the folder is printed)
# or interactively:
#   source tests/netns/netns.sh; netns_up 2; netns_exec 1 ip addr; netns_exec 0 ip neigh; netns_down
# and the hub (a ping takes twice the delay):
#   source tests/netns/netns.sh; NETNS_HUB=build-netns/tests/netns/weft-netem-hub NETNS_NETEM=hub
#   netns_up 2; netns_netem_all delay 200ms loss 1%; netns_exec 0 ping -c 3 198.18.0.2; netns_down
#
# More NICs per host (netns_add_nics N): host i gets nic0..nic<N-1>, nic<k> with address
# 198.18.<k+1>.<i+1>/24 on bridge br<k+1> of the switch namespace, one subnet per "rail" (as the
# NICs of one index share a switch in a rail-optimised cluster); eth0 stays for the bootstrap.
#
# Functions: netns_up K, netns_add_nics N, netns_nic_addr I K, netns_down, netns_exec I CMD..., netns_link_down I, netns_netem_all ARGS...,
# netns_hub_stop, netns_spawn NAME I LIMIT_S [VAR=VALUE...] -- CMD..., netns_kill NAME,
# netns_wait_all, netns_host I, netns_addr I, netns_skip REASON, netns_log TEXT.

# shellcheck disable=SC2034  # the NETNS_* state is read by the scripts that source this file
NETNS_PREFIX="weftt-$$-"
NETNS_K=0
NETNS_LOGS=""
NETNS_DOWN_DONE=0
declare -a NETNS_CREATED=()  # namespaces this run made, in order
declare -a NETNS_NAMES=()    # processes started by netns_spawn, in order
declare -A NETNS_PID_OF=()   # name -> pid of its `timeout` (also its process group id)
declare -A NETNS_NAME_OF=()  # pid -> name
declare -A NETNS_START=()    # name -> start time, microseconds
declare -A NETNS_END=()      # name -> end time, microseconds
declare -A NETNS_RC=()       # name -> exit status (124: timed out, 137: killed)
NETNS_HUB_PID=""             # weft-netem-hub, while netns_netem_all has one running

netns_log() { echo "[netns $(date +%T)] $*" >&2; }
netns_skip() {
  echo "SKIP: $*" >&2
  exit 77
}

netns_host() { echo "${NETNS_PREFIX}h$1"; }
netns_switch() { echo "${NETNS_PREFIX}sw"; }
netns_addr() { echo "198.18.0.$(($1 + 1))"; }
# Microseconds since the epoch.
netns_now_us() { echo "${EPOCHREALTIME/[.,]/}"; }
# "12.345" seconds from two microsecond stamps.
netns_seconds() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.3f", (b - a) / 1e6 }'; }

# Kills every process inside namespace $1 (processes this library started, or a dead run's).
_netns_kill_inside() {
  local p
  for p in $(ip netns pids "$1" 2>/dev/null); do kill -KILL "$p" 2>/dev/null; done
}

# Removes weftt-<pid>-* namespaces whose test script (pid) is gone.
netns_sweep_stale() {
  local name pid
  for name in $(ip netns list 2>/dev/null | awk '{ print $1 }'); do
    [[ $name =~ ^weftt-([0-9]+)- ]] || continue
    pid=${BASH_REMATCH[1]}
    [[ $pid == "$$" ]] && continue
    kill -0 "$pid" 2>/dev/null && continue
    netns_log "removing stale namespace $name (the run that made it, pid $pid, is gone)"
    _netns_kill_inside "$name"
    ip netns del "$name" 2>/dev/null || netns_log "could not delete $name"
  done
  # Log folders of runs that died before cleaning up (kept ones hold a .kept file).
  local dir
  for dir in /tmp/weftt-*-logs.*; do
    [[ -d $dir && ! -e $dir/.kept && $dir =~ /weftt-([0-9]+)-logs ]] || continue
    pid=${BASH_REMATCH[1]}
    [[ $pid == "$$" ]] || kill -0 "$pid" 2>/dev/null || rm -rf "$dir"
  done
}

# Makes K hosts and the switch, and arms the cleanup.
netns_up() {
  local k=$1 i h sw err
  [[ $(id -u) -eq 0 ]] || netns_skip "the netns tests need root to create network namespaces (run as root or with sudo)"
  command -v ip > /dev/null || netns_skip "iproute2 ('ip') is not installed"
  command -v timeout > /dev/null || netns_skip "coreutils 'timeout' is not installed"
  netns_sweep_stale
  trap 'netns_down' EXIT
  trap 'netns_down; exit 130' INT
  trap 'netns_down; exit 143' TERM
  NETNS_LOGS=$(mktemp -d "/tmp/weftt-$$-logs.XXXXXX")
  sw=$(netns_switch)
  if ! err=$(ip netns add "$sw" 2>&1); then
    netns_skip "cannot create a network namespace (ip netns add: $err); the netns tests need root with CAP_SYS_ADMIN and CAP_NET_ADMIN"
  fi
  NETNS_CREATED+=("$sw")
  if ! err=$( (ip -n "$sw" link set lo up && ip -n "$sw" link add br0 type bridge && ip -n "$sw" link set br0 up) 2>&1); then
    netns_skip "cannot create a bridge inside a namespace ($err); the kernel needs CONFIG_BRIDGE"
  fi
  for ((i = 0; i < k; i++)); do
    h=$(netns_host "$i")
    err=$(ip netns add "$h" 2>&1) || netns_skip "cannot create namespace $h: $err"
    NETNS_CREATED+=("$h")
    if ! err=$( (ip -n "$sw" link add "p$i" type veth peer name eth0 netns "$h" &&
      ip -n "$sw" link set "p$i" master br0 up &&
      ip -n "$h" link set lo up &&
      ip -n "$h" addr add "$(netns_addr "$i")/24" dev eth0 &&
      ip -n "$h" link set eth0 up) 2>&1); then
      netns_skip "cannot connect host $i to the switch with a veth pair ($err); the kernel needs CONFIG_VETH"
    fi
  done
  NETNS_K=$k
  # The bridge has no STP, so its ports forward as soon as they are up: wait for that.
  for ((i = 0; i < k; i++)); do
    local tries=0
    until ip -n "$(netns_host "$i")" link show eth0 | grep -q 'state UP'; do
      ((++tries > 100)) && { echo "netns: eth0 of host $i did not come up" >&2; exit 1; }
      sleep 0.05
    done
  done
  netns_log "$k host(s) up: ${NETNS_PREFIX}h0..h$((k - 1)) (198.18.0.1..$k) on bridge br0 in $sw; logs in $NETNS_LOGS"
}

# netns_nic_addr I K: address of host I's nic<K>.
netns_nic_addr() { echo "198.18.$(($2 + 1)).$(($1 + 1))"; }

# Gives every host N more NICs on N more subnets (see the top). Everything lives inside the
# run's namespaces, so netns_down removes it with them.
netns_add_nics() {
  local n=$1 k i h sw err
  sw=$(netns_switch)
  for ((k = 0; k < n; k++)); do
    if ! err=$( (ip -n "$sw" link add "br$((k + 1))" type bridge && ip -n "$sw" link set "br$((k + 1))" up) 2>&1); then
      echo "netns: cannot make bridge br$((k + 1)) for nic$k: $err" >&2
      exit 1
    fi
    for ((i = 0; i < NETNS_K; i++)); do
      h=$(netns_host "$i")
      if ! err=$( (ip -n "$sw" link add "n${k}p$i" type veth peer name "nic$k" netns "$h" &&
        ip -n "$sw" link set "n${k}p$i" master "br$((k + 1))" up &&
        ip -n "$h" addr add "$(netns_nic_addr "$i" "$k")/24" dev "nic$k" &&
        ip -n "$h" link set "nic$k" up) 2>&1); then
        echo "netns: cannot give host $i its nic$k: $err" >&2
        exit 1
      fi
    done
  done
  for ((i = 0; i < NETNS_K; i++)); do
    for ((k = 0; k < n; k++)); do
      local tries=0
      until ip -n "$(netns_host "$i")" link show "nic$k" | grep -q 'state UP'; do
        ((++tries > 100)) && { echo "netns: nic$k of host $i did not come up" >&2; exit 1; }
        sleep 0.05
      done
    done
  done
  netns_log "every host has nic0..nic$((n - 1)) (198.18.1..$n.<host+1>/24 on bridges br1..br$n)"
}

# Kills what this run started, deletes its namespaces and (unless NETNS_KEEP_LOGS=1) its logs.
# Safe to call more than once; keeps the exit status of the script.
netns_down() {
  local rc=$? name ns i
  ((NETNS_DOWN_DONE)) && return "$rc"
  NETNS_DOWN_DONE=1
  for name in "${NETNS_NAMES[@]}"; do
    [[ -n ${NETNS_RC[$name]+x} ]] && continue
    kill -KILL -- "-${NETNS_PID_OF[$name]}" 2>/dev/null || kill -KILL "${NETNS_PID_OF[$name]}" 2>/dev/null
  done
  netns_hub_stop >&2
  wait 2> /dev/null
  for ((i = ${#NETNS_CREATED[@]} - 1; i >= 0; i--)); do
    ns=${NETNS_CREATED[i]}
    _netns_kill_inside "$ns"
    ip netns del "$ns" 2>/dev/null || netns_log "could not delete namespace $ns"
  done
  NETNS_CREATED=()
  if [[ -n $NETNS_LOGS ]]; then
    if [[ ${NETNS_KEEP_LOGS:-0} == 1 ]]; then
      touch "$NETNS_LOGS/.kept"
      netns_log "logs kept in $NETNS_LOGS"
    else
      rm -rf "$NETNS_LOGS"
    fi
  fi
  return "$rc"
}

# Runs a command in host I (in the foreground).
netns_exec() {
  local i=$1
  shift
  ip netns exec "$(netns_host "$i")" "$@"
}

# Takes host I off the network: its eth0 goes down (the switch side stays up).
netns_link_down() { ip -n "$(netns_host "$1")" link set eth0 down; }

# Delays and drops every frame on every host's way out, e.g. netns_netem_all delay 200ms loss 1%.
# With the netem qdisc (CONFIG_NET_SCH_NETEM) that is a qdisc on each host's eth0. Without it (or
# with NETNS_NETEM=hub) the hosts' veth pairs and the bridge make way for weft-netem-hub
# ($NETNS_HUB), which does the same in user space: see _netns_hub_all. NETNS_NETEM=qdisc insists
# on the qdisc. Call it from the script's own shell (not inside $(...)): the hub is its child.
# Exits 77 when neither way is possible.
netns_netem_all() {
  local i err mode=${NETNS_NETEM:-auto}
  case $mode in
    auto | qdisc | hub) ;;
    *) echo "netns: NETNS_NETEM must be auto, qdisc or hub, not '$mode'" >&2; exit 2 ;;
  esac
  if [[ $mode == hub ]]; then
    _netns_hub_all "$@"
    return
  fi
  for ((i = 0; i < NETNS_K; i++)); do
    if ! err=$(ip netns exec "$(netns_host "$i")" tc qdisc add dev eth0 root netem "$@" 2>&1); then
      # The first host finds out whether the kernel has netem at all.
      if [[ $i -eq 0 && ($err == *"qdisc kind is unknown"* || $err == *"No such file"*) ]]; then
        [[ $mode == qdisc ]] && netns_skip "this kernel has no netem qdisc (CONFIG_NET_SCH_NETEM; tc said: $err)"
        netns_log "no netem qdisc in this kernel (tc said: $err); weft-netem-hub stands in for it"
        _netns_hub_all "$@"
        return
      fi
      echo "netns: tc qdisc add dev eth0 root netem $* failed in host $i: $err" >&2
      exit 1
    fi
  done
  netns_log "netem $* on eth0 of every host"
}

# _netns_hub_all delay D loss P%: rewires the hosts through weft-netem-hub. The hub runs in the
# switch namespace and makes TAP devices tap0..tap<K-1> there; each moves into its host as eth0
# (same address, MTU 1500; a TAP without offloads hands the hub frames of at most the MTU). A
# frame sent by any host waits D in the hub and is lost with probability P, as with netem on
# every eth0. The hub keeps the TAPs' file descriptors: when it exits, the TAPs vanish. Its
# stdout (the seed; the counters when it stops) goes to $NETNS_LOGS/hub.out. NETNS_HUB_SEED=S
# repeats a run's losses (as far as the traffic repeats).
_netns_hub_all() {
  local delay_ms=0 loss=0 sw i h err tries
  while [[ $# -gt 0 ]]; do
    case $1 in
      delay)
        [[ ${2:-} =~ ^([0-9]+(\.[0-9]+)?)(us|usec|ms|msec|s|sec)$ ]] ||
          { echo "netns: netem delay '${2:-}' is not a time such as 200ms" >&2; exit 2; }
        delay_ms=$(awk -v v="${BASH_REMATCH[1]}" -v u="${BASH_REMATCH[3]}" \
          'BEGIN { printf "%g", u ~ /^us/ ? v / 1000 : u ~ /^ms/ ? v : v * 1000 }')
        shift 2 ;;
      loss)
        [[ ${2:-} == random ]] && shift
        [[ ${2:-} =~ ^([0-9]+(\.[0-9]+)?)%$ ]] ||
          { echo "netns: netem loss '${2:-}' is not a percentage such as 1%" >&2; exit 2; }
        loss=${BASH_REMATCH[1]}
        shift 2 ;;
      *) echo "netns: weft-netem-hub emulates only 'delay D' and 'loss P%', not '$1'" >&2; exit 2 ;;
    esac
  done
  [[ -n ${NETNS_HUB:-} && -x ${NETNS_HUB:-} ]] ||
    netns_skip "this kernel has no netem qdisc, and weft-netem-hub (NETNS_HUB='${NETNS_HUB:-}') is not there to stand in for it; build it or set NETNS_HUB"
  [[ -c /dev/net/tun ]] ||
    netns_skip "this kernel has neither the netem qdisc (CONFIG_NET_SCH_NETEM) nor TAP devices (/dev/net/tun, CONFIG_TUN)"
  sw=$(netns_switch)
  # Away with the veth pairs (deleting one end deletes both) and the bridge.
  for ((i = 0; i < NETNS_K; i++)); do ip -n "$sw" link del "p$i" 2>/dev/null; done
  ip -n "$sw" link del br0 2>/dev/null
  # --exit-with-parent: a run killed outright (SIGKILL) takes its hub with it.
  ip netns exec "$sw" "$NETNS_HUB" --taps "$NETNS_K" --prefix tap --delay-ms "$delay_ms" --loss "$loss" \
    ${NETNS_HUB_SEED:+--seed "$NETNS_HUB_SEED"} --exit-with-parent > "$NETNS_LOGS/hub.out" 2> "$NETNS_LOGS/hub.err" &
  NETNS_HUB_PID=$!
  tries=0
  until grep -q 'ready:' "$NETNS_LOGS/hub.out" 2>/dev/null; do
    if ! kill -0 "$NETNS_HUB_PID" 2>/dev/null || ((++tries > 200)); then
      echo "netns: weft-netem-hub ($NETNS_HUB) did not start:" >&2
      sed 's/^/  | /' "$NETNS_LOGS/hub.err" >&2
      netns_hub_stop > /dev/null
      exit 1
    fi
    sleep 0.05
  done
  for ((i = 0; i < NETNS_K; i++)); do
    h=$(netns_host "$i")
    if ! err=$( (ip -n "$sw" link set "tap$i" netns "$h" &&
      ip -n "$h" link set "tap$i" name eth0 &&
      ip -n "$h" link set eth0 mtu 1500 &&
      ip -n "$h" addr add "$(netns_addr "$i")/24" dev eth0 &&
      ip -n "$h" link set eth0 up) 2>&1); then
      echo "netns: cannot move the hub's TAP tap$i into host $i as eth0: $err" >&2
      exit 1
    fi
  done
  # A TAP's operational state stays UNKNOWN; LOWER_UP says it has its carrier (the hub's fd).
  for ((i = 0; i < NETNS_K; i++)); do
    tries=0
    until ip -n "$(netns_host "$i")" link show eth0 | grep -q 'LOWER_UP'; do
      ((++tries > 100)) && { echo "netns: eth0 of host $i (a TAP of the hub) did not come up" >&2; exit 1; }
      sleep 0.05
    done
  done
  netns_log "every host's eth0 is now a TAP of weft-netem-hub in $sw: $(head -n1 "$NETNS_LOGS/hub.out")"
}

# Stops weft-netem-hub, if one runs, and prints its counters (frames forwarded, lost, dropped).
netns_hub_stop() {
  local pid=${NETNS_HUB_PID:-} tries=0
  [[ -n $pid ]] || return 0
  NETNS_HUB_PID=""
  kill -TERM "$pid" 2>/dev/null
  while kill -0 "$pid" 2>/dev/null && ((++tries < 40)); do sleep 0.05; done
  kill -KILL "$pid" 2>/dev/null
  wait "$pid" 2>/dev/null
  if grep -q ': received [0-9]* frames' "$NETNS_LOGS/hub.out" 2>/dev/null; then
    echo "  $(tail -n1 "$NETNS_LOGS/hub.out")"
  else
    echo "  weft-netem-hub left no counters; its stderr:"
    sed 's/^/  | /' "$NETNS_LOGS/hub.err" 2>/dev/null
  fi
}

# netns_spawn NAME I LIMIT_S [VAR=VALUE...] -- CMD...: runs CMD in host I in the background with
# the given environment, under `timeout` (SIGTERM after LIMIT_S, SIGKILL 5 s later), which puts
# it in a process group of its own. Its stdout and stderr go to $NETNS_LOGS/NAME.{out,err}.
netns_spawn() {
  local name=$1 host=$2 limit=$3 pid
  shift 3
  local -a envs=()
  while [[ $# -gt 0 && $1 != -- ]]; do
    envs+=("$1")
    shift
  done
  shift
  timeout -k 5 "$limit" ip netns exec "$(netns_host "$host")" env "${envs[@]}" "$@" \
    > "$NETNS_LOGS/$name.out" 2> "$NETNS_LOGS/$name.err" &
  pid=$!
  NETNS_NAMES+=("$name")
  NETNS_PID_OF[$name]=$pid
  NETNS_NAME_OF[$pid]=$name
  NETNS_START[$name]=$(netns_now_us)
}

# SIGKILLs process NAME (its whole group) and reaps it.
netns_kill() {
  local name=$1 pid=${NETNS_PID_OF[$1]}
  kill -KILL -- "-$pid" 2>/dev/null || kill -KILL "$pid" 2>/dev/null
  wait "$pid" 2>/dev/null  # here, so that bash's "Killed" notice goes nowhere
  NETNS_RC[$name]=$?
  NETNS_END[$name]=$(netns_now_us)
}

# True while process NAME runs.
netns_running() { [[ -z ${NETNS_RC[$1]+x} ]] && kill -0 "${NETNS_PID_OF[$1]}" 2>/dev/null; }

# Waits for every spawned process; records NETNS_RC[name] and NETNS_END[name].
netns_wait_all() {
  local name pid done_pid rc any
  local -a pending=()
  while :; do
    pending=()
    for name in "${NETNS_NAMES[@]}"; do
      [[ -z ${NETNS_RC[$name]+x} ]] && pending+=("${NETNS_PID_OF[$name]}")
    done
    ((${#pending[@]} > 0)) || return 0
    done_pid=""
    wait -n -p done_pid "${pending[@]}" 2>/dev/null
    rc=$?
    if [[ -n ${done_pid:-} ]]; then
      NETNS_RC[${NETNS_NAME_OF[$done_pid]}]=$rc
      NETNS_END[${NETNS_NAME_OF[$done_pid]}]=$(netns_now_us)
      continue
    fi
    # wait -n had nothing to report (a job bash already reaped): collect the finished ones.
    any=0
    for pid in "${pending[@]}"; do
      kill -0 "$pid" 2>/dev/null && continue
      wait "$pid" 2>/dev/null
      rc=$?
      NETNS_RC[${NETNS_NAME_OF[$pid]}]=$rc
      NETNS_END[${NETNS_NAME_OF[$pid]}]=$(netns_now_us)
      any=1
    done
    ((any)) || sleep 0.05
  done
}

# Prints the last lines of process NAME's stdout and stderr, indented.
netns_show() {
  local name=$1 lines=${2:-20}
  if [[ -s $NETNS_LOGS/$name.out ]]; then
    echo "  --- $name stdout (last $lines lines)"
    tail -n "$lines" "$NETNS_LOGS/$name.out" | sed 's/^/  | /'
  fi
  if [[ -s $NETNS_LOGS/$name.err ]]; then
    echo "  --- $name stderr (last $lines lines)"
    tail -n "$lines" "$NETNS_LOGS/$name.err" | sed 's/^/  | /'
  fi
}
