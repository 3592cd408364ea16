#!/usr/bin/env bash
# A 3-node MariaDB Galera cluster on 127.0.0.1, for diesel-occ's multi-primary tests.
#
#   galera.sh start       fresh cluster: bootstrap node 1, join 2 and 3, wait until all
#                         three are Synced with cluster size 3, create database `test`
#                         and a passwordless root@127.0.0.1, print the URLs. When some
#                         nodes already run, only the missing ones are started (joined).
#   galera.sh stop        shut every node down; nothing of ours is left running
#   galera.sh kill N      SIGKILL node N (a crash, not a shutdown)
#   galera.sh restart N   start node N again (it rejoins, by IST when the donor's gcache
#                         still holds what it missed) and wait until all are Synced, size 3
#   galera.sh partition N cut node N's group traffic (gcomm, IST, SST) off from the other
#                         two with iptables, both ways; clients still reach its SQL port.
#                         Returns once N left the primary component (the others see
#                         size 2, N is non-primary); needs root (installs iptables)
#   galera.sh heal        remove the cut and wait until all three are Synced, size 3
#   galera.sh freeze N    SIGSTOP node N: it stops answering without closing a socket,
#                         as a node whose host died or hangs does for its clients
#   galera.sh thaw N      SIGCONT node N and wait until all three are Synced, size 3
#   galera.sh status      each node's state and the cluster size; exit 0 only when healthy
#   galera.sh urls        the three URLs, one a line
#
# Port scheme: node N (1..3) uses Galera's default ports shifted by 10000 + 10*(N-1), so
# nothing clashes with a system MariaDB on 3306 or another Galera on 4567/4568/4444:
#   SQL                 OCC_GALERA_PORT + N-1          13306 13307 13308
#   group communication 14567 + 10*(N-1)               14567 14577 14587
#   IST receive         group communication + 1        14568 14578 14588
#   SST receive (rsync) 14444 + 10*(N-1)               14444 14454 14464
#
# Environment:
#   OCC_CLUSTER_DIR      base of both cluster scripts' state (default /tmp/occ-cluster)
#   OCC_GALERA_DIR       this cluster's dir (default $OCC_CLUSTER_DIR/galera); node N has
#                        nodeN/{my.cnf,data,tmp,mariadbd.sock,mariadbd.pid,mariadbd.log}
#   OCC_GALERA_PORT      SQL port of node 1 (default 13306); nodes 2, 3 use the next two
#   OCC_GALERA_GCOMM_PORT group-communication port of node 1 (default 14567)
#   OCC_GALERA_SST_PORT  SST port of node 1 (default 14444)
#   OCC_CLUSTER_TIMEOUT  seconds to wait for a node or the cluster (default 180)
#   OCC_GALERA_STOP_GRACE seconds `stop` waits after SIGTERM before SIGKILL (default 30)
#
# `start` on a stopped cluster wipes OCC_GALERA_DIR and makes a new one: tests want a
# known state, and bootstrapping from the most advanced node after a full stop is a
# recovery procedure this script does not need. `stop` keeps the dir for its logs.
# A failed start leaves what it launched running for inspection: run `stop` after it.
set -euo pipefail

NODES=3
base_dir=${OCC_GALERA_DIR:-${OCC_CLUSTER_DIR:-/tmp/occ-cluster}/galera}
sql_port0=${OCC_GALERA_PORT:-13306}
gcomm_port0=${OCC_GALERA_GCOMM_PORT:-14567}
sst_port0=${OCC_GALERA_SST_PORT:-14444}
timeout=${OCC_CLUSTER_TIMEOUT:-180}
stop_grace=${OCC_GALERA_STOP_GRACE:-30}

say() { echo "galera: $*" >&2; }
die() { say "error: $*"; exit 1; }

sql_port() { echo $((sql_port0 + $1 - 1)); }
gcomm_port() { echo $((gcomm_port0 + 10 * ($1 - 1))); }
# Node N's group traffic (gcomm, IST, SST) runs on its own loopback address 127.0.0.N
# (all of 127/8 is loopback on Linux): Galera binds its outgoing connections to the
# listen address, so `partition N` can drop node N's group packets by address and
# port, both directions, while clients keep reaching its SQL port on 127.0.0.1.
group_host() { echo "127.0.0.$1"; }
ist_port() { echo $(($(gcomm_port "$1") + 1)); }
sst_port() { echo $((sst_port0 + 10 * ($1 - 1))); }
node_dir() { echo "$base_dir/node$1"; }
url() { echo "mysql://root@127.0.0.1:$(sql_port "$1")/test"; }

# mariadbd must not run as root: rsync SST then fails with "Permission denied" (seen in
# the feasibility check). As root we run every node as `mysql` with mysql-owned dirs;
# as anyone else, as that user with their own dirs.
if ((EUID == 0)); then
  as_user() { setpriv --reuid=mysql --regid=mysql --init-groups -- "$@"; }
else
  as_user() { "$@"; }
fi

find_provider() {
  local p
  for p in /usr/lib/galera/libgalera_smm.so /usr/lib/libgalera_smm.so \
    /usr/lib/galera-4/libgalera_smm.so /usr/lib64/galera-4/libgalera_smm.so; do
    [[ -f $p ]] && { echo "$p"; return; }
  done
  p=$(dpkg -L galera-4 2>/dev/null | grep -m1 '/libgalera_smm\.so$' || true)
  [[ -n $p ]] || die "libgalera_smm.so not found: install galera-4 (apt-get install -y galera-4)"
  echo "$p"
}

# Installs what the nodes need when we may (root, like .ci/run does); else says what's missing.
ensure_packages() {
  local missing=()
  command -v mariadbd >/dev/null || missing+=(mariadb-server)
  command -v mariadb >/dev/null || missing+=(mariadb-client)
  command -v rsync >/dev/null || missing+=(rsync) # the SST method
  [[ -f /usr/lib/galera/libgalera_smm.so ]] || dpkg -L galera-4 >/dev/null 2>&1 || missing+=(galera-4)
  ((${#missing[@]})) || return 0
  ((EUID == 0)) || die "missing packages: ${missing[*]}"
  say "installing ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  apt-get install -y -q "${missing[@]}" >&2 \
    || { apt-get update -q >&2 && apt-get install -y -q "${missing[@]}" >&2; }
}

# The pid of node N's mariadbd, or nothing. Found by its own --defaults-file, which no
# other process has, so we signal only our nodes and also find one whose start was cut off.
node_pid() {
  pgrep -o -f -- "^[^ ]*mariadbd --defaults-file=$(re "$(node_dir "$1")/my.cnf")( |\$)" || true
}
re() { printf '%s' "$1" | sed 's/[][\\.*^$+?(){}|]/\\&/g'; }

# Runs SQL on node N over its socket as root (passwordless, see init_node).
sql() {
  local n=$1
  shift
  mariadb --no-defaults --socket="$(node_dir "$n")/mariadbd.sock" -u root \
    --batch --skip-column-names --connect-timeout=2 -e "$*"
}

# "state size" of node N (e.g. "Synced 3"), or nothing when it does not answer.
node_state() {
  sql "$1" "SELECT MAX(IF(VARIABLE_NAME='WSREP_LOCAL_STATE_COMMENT',VARIABLE_VALUE,NULL)),
                   MAX(IF(VARIABLE_NAME='WSREP_CLUSTER_SIZE',VARIABLE_VALUE,NULL))
            FROM information_schema.GLOBAL_STATUS" 2>/dev/null | tr '\t' ' ' || true
}

write_config() {
  local n=$1 dir peers="" i
  dir=$(node_dir "$n")
  for ((i = 1; i <= NODES; i++)); do peers+="${peers:+,}$(group_host "$i"):$(gcomm_port "$i")"; done
  # A file per node, passed with --defaults-file so /etc/mysql/my.cnf (the system
  # server's socket, port, datadir) never leaks in; the SST script reads it too.
  cat >"$dir/my.cnf" <<EOF
[mysqld]
datadir=$dir/data
tmpdir=$dir/tmp
socket=$dir/mariadbd.sock
pid-file=$dir/mariadbd.pid
log-error=$dir/mariadbd.log
port=$(sql_port "$n")
bind-address=127.0.0.1
# Accounts are matched by address, so root@127.0.0.1 is the TCP account.
skip-name-resolve
character-set-server=utf8mb4
collation-server=utf8mb4_general_ci
# Small, so three nodes sit beside the system server and the builds.
innodb_buffer_pool_size=64M
innodb_log_file_size=32M
performance_schema=OFF
# What Galera requires.
binlog_format=ROW
default_storage_engine=InnoDB
innodb_autoinc_lock_mode=2
wsrep_on=ON
wsrep_provider=$(find_provider)
wsrep_cluster_name=occ-galera
wsrep_cluster_address=gcomm://$peers
wsrep_node_name=node$n
wsrep_node_address=$(group_host "$n"):$(gcomm_port "$n")
wsrep_node_incoming_address=127.0.0.1:$(sql_port "$n")
wsrep_sst_method=rsync
wsrep_sst_receive_address=$(group_host "$n"):$(sst_port "$n")
# gcache keeps the write sets a restarted node missed, so it rejoins by IST, not SST.
# The evs timeouts make a killed node leave the view in a few seconds (defaults 5s/15s),
# so the survivors' commits are not held up long in the kill tests.
wsrep_provider_options="gmcast.listen_addr=tcp://$(group_host "$n"):$(gcomm_port "$n");ist.recv_addr=$(group_host "$n"):$(ist_port "$n");gcache.size=128M;evs.suspect_timeout=PT3S;evs.inactive_timeout=PT6S;evs.inactive_check_period=PT1S"
EOF
}

# Makes node N's dirs and config; node 1's data dir gets system tables (the others
# receive theirs by SST from a donor).
init_node() {
  local n=$1 dir
  dir=$(node_dir "$n")
  mkdir -p "$dir/data" "$dir/tmp"
  write_config "$n"
  ((EUID == 0)) && chown -R mysql:mysql "$dir"
  if ((n == 1)); then
    # normal: root@localhost without password, so the script can use the socket as
    # any OS user (unix_socket auth would tie it to the OS user root).
    as_user mariadb-install-db --defaults-file="$dir/my.cnf" --auth-root-authentication-method=normal \
      --skip-test-db --wsrep-on=OFF >"$dir/install-db.log" 2>&1 \
      || { tail -n 30 "$dir/install-db.log" >&2; die "mariadb-install-db failed for node 1"; }
  fi
}

# After a crash grastate.dat says seqno -1: the node does not know how far it got, asks
# for a full state (SST) and IST never happens. So, like galera_recovery does for
# systemd, read the last committed position from InnoDB with --wsrep-recover and pass
# it on as --wsrep-start-position. Prints the position, or nothing when not needed.
recover_position() {
  local dir pos
  dir=$(node_dir "$1")
  grep -qE '^seqno:[[:space:]]+-1' "$dir/data/grastate.dat" 2>/dev/null || return 0
  as_user mariadbd --defaults-file="$dir/my.cnf" --wsrep-recover --disable-log-error \
    >"$dir/recover.log" 2>&1 || fail_node "$1" "mariadbd --wsrep-recover failed: $(tail -n 5 "$dir/recover.log")"
  pos=$(sed -n 's/.*WSREP: Recovered position: *\([0-9a-f-]*:-\{0,1\}[0-9]*\).*/\1/p' "$dir/recover.log" | tail -n 1)
  [[ -n $pos ]] || fail_node "$1" "no recovered position in $dir/recover.log"
  say "node $1 recovered position $pos"
  echo "$pos"
}

# Starts node N's mariadbd in the background; extra args (--wsrep-new-cluster) follow.
launch_node() {
  local n=$1 dir
  shift
  dir=$(node_dir "$n")
  rm -f "$dir/mariadbd.sock" "$dir/mariadbd.pid"
  say "starting node $n on port $(sql_port "$n")${1:+ with $*}"
  # setsid: the node outlives this script and a Ctrl-C in the caller's terminal.
  # --defaults-file must be the first argument (mariadbd and wsrep_sst_rsync need that).
  local cmd=(mariadbd --defaults-file="$dir/my.cnf" "$@")
  local pos
  pos=$(recover_position "$n")
  [[ -z $pos ]] || cmd+=(--wsrep-start-position="$pos")
  if ((EUID == 0)); then
    cmd=(setpriv --reuid=mysql --regid=mysql --init-groups -- "${cmd[@]}")
  fi
  setsid "${cmd[@]}" </dev/null >>"$dir/mariadbd.out" 2>&1 &
  # Until setsid and setpriv have exec'd into mariadbd, node_pid finds nothing; wait for
  # that, so callers never take a node that is still launching for one that died.
  local launcher=$! i
  for ((i = 0; i < 100; i++)); do
    [[ -z $(node_pid "$n") ]] || return 0
    kill -0 "$launcher" 2>/dev/null || break
    sleep 0.1
  done
  [[ -n $(node_pid "$n") ]] || fail_node "$n" "mariadbd did not start"
}

fail_node() {
  local n=$1
  shift
  say "error: node $n: $*; last lines of $(node_dir "$n")/mariadbd.log:"
  tail -n 40 "$(node_dir "$n")/mariadbd.log" >&2 2>/dev/null || true
  tail -n 10 "$(node_dir "$n")/mariadbd.out" >&2 2>/dev/null || true
  exit 1
}

# Waits until each node in "$@" is Synced and sees cluster size $want; fails loudly when a
# node's process dies or the timeout passes.
wait_synced() {
  local want=$1 deadline n st
  shift
  deadline=$((SECONDS + timeout))
  while :; do
    local ok=1
    for n in "$@"; do
      [[ -n $(node_pid "$n") ]] || fail_node "$n" "mariadbd exited"
      st=$(node_state "$n")
      [[ $st == "Synced $want" ]] || ok=0
    done
    ((ok)) && return 0
    if ((SECONDS >= deadline)); then
      # Newest node first: when a join times out, the joiner's log tells why.
      for n in $(printf '%s\n' "$@" | sort -rn); do
        st=$(node_state "$n")
        [[ $st == "Synced $want" ]] || fail_node "$n" "not Synced with cluster size $want after ${timeout}s (state: ${st:-no answer})"
      done
    fi
    sleep 1
  done
}

cmd_status() {
  local n pid st healthy=0
  for ((n = 1; n <= NODES; n++)); do
    pid=$(node_pid "$n")
    if [[ -z $pid ]]; then
      echo "node $n  127.0.0.1:$(sql_port "$n")  down"
      healthy=1
      continue
    fi
    st=$(node_state "$n")
    if [[ -z $st ]]; then
      echo "node $n  127.0.0.1:$(sql_port "$n")  pid $pid  no answer (starting, or in state transfer)"
    else
      echo "node $n  127.0.0.1:$(sql_port "$n")  pid $pid  state ${st% *}  cluster_size ${st#* }"
    fi
    [[ $st == "Synced $NODES" ]] || healthy=1
  done
  n=$(partitioned_node)
  if [[ -n $n ]]; then
    echo "partition: node $n cut off (iptables chain $(chain)); galera.sh heal removes it"
    healthy=1
  fi
  return "$healthy"
}

# The iptables chain holding this cluster's cut, named by its gcomm port so that two
# clusters on other ports (the tests' and CI's) never remove each other's rules.
chain() { echo "occ-galera-$gcomm_port0"; }

need_iptables() {
  ((EUID == 0)) || die "partition and heal change iptables rules: run as root"
  command -v iptables >/dev/null && return 0
  say "installing iptables"
  export DEBIAN_FRONTEND=noninteractive
  apt-get install -y -q iptables >&2 || { apt-get update -q >&2 && apt-get install -y -q iptables >&2; }
}

# The node cut off now (from the chain's comment), or nothing.
partitioned_node() {
  command -v iptables >/dev/null && ((EUID == 0)) || return 0
  iptables -S "$(chain)" 2>/dev/null | sed -n 's/.*--comment "\{0,1\}occ-galera partition node \([0-9]*\).*/\1/p' | head -n 1 || true
}

# Removes the cut (the jump and the chain), without waiting for anything.
remove_cut() {
  command -v iptables >/dev/null && ((EUID == 0)) || return 0
  while iptables -D OUTPUT -j "$(chain)" 2>/dev/null; do :; done
  iptables -F "$(chain)" 2>/dev/null || true
  iptables -X "$(chain)" 2>/dev/null || true
}

cmd_partition() {
  local n=$1 m ports t0=$SECONDS st
  need_iptables
  [[ -n $(node_pid "$n") ]] || die "node $n is not running"
  remove_cut
  iptables -N "$(chain)"
  # Packets between N's group address and another node's, on a group port of either
  # (gcomm, IST, SST); dropped on OUTPUT, which loopback traffic passes in both
  # directions. Dropped, not rejected: the nodes see silence, as with a cable cut, and
  # the evs timeouts decide (suspect 3 s, inactive 6 s).
  for ((m = 1; m <= NODES; m++)); do
    ((m == n)) && continue
    ports="$(gcomm_port "$n"),$(ist_port "$n"),$(sst_port "$n"),$(gcomm_port "$m"),$(ist_port "$m"),$(sst_port "$m")"
    iptables -A "$(chain)" -p tcp -s "$(group_host "$n")" -d "$(group_host "$m")" -m multiport --ports "$ports" \
      -m comment --comment "occ-galera partition node $n" -j DROP
    iptables -A "$(chain)" -p tcp -s "$(group_host "$m")" -d "$(group_host "$n")" -m multiport --ports "$ports" \
      -m comment --comment "occ-galera partition node $n" -j DROP
  done
  iptables -I OUTPUT -j "$(chain)"
  say "node $n cut off from the others (iptables chain $(chain))"
  # Wait until the others formed a primary component of two without N and N knows it
  # is alone (wsrep_cluster_status non-Primary): only then is the fault in place.
  local deadline=$((SECONDS + timeout)) others
  while :; do
    others=1
    for ((m = 1; m <= NODES; m++)); do
      ((m == n)) && continue
      [[ $(node_state "$m") == "Synced $((NODES - 1))" ]] || others=0
    done
    st=$(sql "$n" "SHOW STATUS LIKE 'wsrep_cluster_status'" 2>/dev/null | cut -f2 || true)
    ((others)) && [[ -n $st && $st != Primary ]] && break
    ((SECONDS < deadline)) || die "node $n not out of the primary component after ${timeout}s (its status: ${st:-no answer})"
    sleep 0.5
  done
  say "node $n is $st, the other two form the primary component (after $((SECONDS - t0))s)"
  cmd_status || true
}

cmd_heal() {
  local t0=$SECONDS n was all
  all=$(seq 1 "$NODES")
  need_iptables
  was=$(partitioned_node)
  remove_cut
  say "cut removed${was:+ (node $was)}"
  # shellcheck disable=SC2086 # the node list is meant to split
  wait_synced "$NODES" $all
  say "all three Synced with cluster size 3 in $((SECONDS - t0))s"
  cmd_status
}

cmd_freeze() {
  local n=$1 pid
  pid=$(node_pid "$n")
  [[ -n $pid ]] || die "node $n is not running"
  kill -STOP "$pid"
  say "node $n frozen (SIGSTOP, pid $pid)"
}

cmd_thaw() {
  local n=$1 pid t0=$SECONDS all
  all=$(seq 1 "$NODES")
  pid=$(node_pid "$n")
  [[ -n $pid ]] || die "node $n is not running"
  kill -CONT "$pid"
  say "node $n thawed (SIGCONT, pid $pid)"
  # shellcheck disable=SC2086 # the node list is meant to split
  wait_synced "$NODES" $all
  say "all three Synced with cluster size 3 in $((SECONDS - t0))s"
}

cmd_urls() {
  local n
  for ((n = 1; n <= NODES; n++)); do url "$n"; done
}

running_nodes() {
  local n
  for ((n = 1; n <= NODES; n++)); do [[ -z $(node_pid "$n") ]] || echo "$n"; done
}

cmd_start() {
  local n t0=$SECONDS all
  all=$(seq 1 "$NODES")
  ensure_packages
  if [[ -n $(running_nodes) ]]; then
    # Running already: start only the missing nodes, as joiners.
    for ((n = 1; n <= NODES; n++)); do [[ -n $(node_pid "$n") ]] || launch_node "$n"; done
  else
    say "new cluster in $base_dir"
    remove_cut # one left by a test that was killed outright would stop the joins
    rm -rf "$base_dir"
    mkdir -p "$base_dir"
    # The mysql user must reach its dirs; a base under /root (mode 700) would not do.
    if ((EUID == 0)) && ! setpriv --reuid=mysql --regid=mysql --init-groups -- test -x "$base_dir"; then
      die "user mysql cannot enter $base_dir: choose OCC_GALERA_DIR/OCC_CLUSTER_DIR elsewhere (e.g. under /tmp)"
    fi
    for ((n = 1; n <= NODES; n++)); do init_node "$n"; done
    launch_node 1 --wsrep-new-cluster
    wait_synced 1 1
    say "node 1 Synced at $((SECONDS - t0))s"
    # One joiner at a time: two simultaneous SSTs from one donor are slower and flakier.
    for ((n = 2; n <= NODES; n++)); do
      launch_node "$n"
      # shellcheck disable=SC2046 # the node list is meant to split
      wait_synced "$n" $(seq 1 "$n")
      say "node $n Synced at $((SECONDS - t0))s"
    done
  fi
  # shellcheck disable=SC2086 # the node list is meant to split
  wait_synced "$NODES" $all
  # In both paths (a cluster whose first start was cut short may lack them); Galera
  # replicates these statements to every node.
  sql 1 "CREATE DATABASE IF NOT EXISTS test;
         CREATE USER IF NOT EXISTS 'root'@'127.0.0.1';
         GRANT ALL ON *.* TO 'root'@'127.0.0.1' WITH GRANT OPTION;" \
    || fail_node 1 "could not create database test and user root@127.0.0.1"
  say "cluster ready in $((SECONDS - t0))s"
  cmd_status
  cmd_urls
}

cmd_stop() {
  local n pid st pids=() deadline
  remove_cut
  for ((n = 1; n <= NODES; n++)); do
    pid=$(node_pid "$n")
    [[ -n $pid ]] || continue
    pids+=("$pid")
    kill -CONT "$pid" 2>/dev/null || true # one left frozen
    # A node in a state transfer (donor or joiner) hangs on SIGTERM; as start wipes the
    # data anyway, such a node gets SIGKILL at once.
    st=$(node_state "$n")
    if [[ $st == Synced* ]]; then
      say "stopping node $n (pid $pid)"
      kill -TERM "$pid" 2>/dev/null || true
    else
      say "node $n (pid $pid) is not Synced (${st:-no answer}): SIGKILL"
      kill -KILL "$pid" 2>/dev/null || true
    fi
  done
  # A straggler gets SIGKILL after the grace period.
  deadline=$((SECONDS + stop_grace))
  for pid in "${pids[@]}"; do
    while kill -0 "$pid" 2>/dev/null; do
      if ((SECONDS >= deadline)); then
        say "pid $pid did not shut down in ${stop_grace}s: SIGKILL"
        kill -KILL "$pid" 2>/dev/null || true
        while kill -0 "$pid" 2>/dev/null; do sleep 0.1; done
      fi
      sleep 0.2
    done
  done
  # A state transfer cut short can leave its rsync daemon behind; it names our data dir.
  pids=()
  mapfile -t pids < <(pgrep -f -- "rsync.*$(re "$base_dir")/" || true)
  if ((${#pids[@]})); then
    say "ending leftover rsync ${pids[*]}"
    kill -KILL "${pids[@]}" 2>/dev/null || true
  fi
  [[ -z $(running_nodes) ]] || die "nodes still running: $(running_nodes | tr '\n' ' ')"
  say "stopped"
}

check_node_arg() {
  if ! [[ ${1:-} =~ ^[1-9][0-9]*$ ]] || (($1 > NODES)); then
    die "node must be 1..$NODES, got '${1:-}'"
  fi
}

cmd_kill() {
  local n=$1 pid
  pid=$(node_pid "$n")
  [[ -n $pid ]] || { say "node $n is not running"; return 0; }
  say "SIGKILL node $n (pid $pid)"
  kill -KILL "$pid"
  while kill -0 "$pid" 2>/dev/null; do sleep 0.1; done
}

cmd_restart() {
  local n=$1 t0=$SECONDS all
  all=$(seq 1 "$NODES")
  local log lines=0 how
  log=$(node_dir "$n")/mariadbd.log
  [[ -f $(node_dir "$n")/my.cnf ]] || die "no cluster in $base_dir: run start first"
  [[ -f $log ]] && lines=$(wc -l <"$log")
  if [[ -n $(node_pid "$n") ]]; then say "node $n is running"; else launch_node "$n"; fi
  # shellcheck disable=SC2086 # the node list is meant to split
  wait_synced "$NODES" $all
  # Say how it caught up, from this start's part of its log: the tests of a node that
  # dies under load mean to exercise IST (the donor's gcache), not a full copy.
  how=$(tail -n +"$((lines + 1))" "$log" | grep -oE 'rsync (IST|SST) completed on joiner|Receiving IST: [0-9]+ writesets' | paste -sd ';' - || true)
  say "node $n rejoined in $((SECONDS - t0))s${how:+ ($how)}"
  cmd_status
}

case ${1:-} in
  start) cmd_start ;;
  stop) cmd_stop ;;
  status) cmd_status ;;
  urls) cmd_urls ;;
  kill) check_node_arg "${2:-}" && cmd_kill "$2" ;;
  restart) check_node_arg "${2:-}" && cmd_restart "$2" ;;
  partition) check_node_arg "${2:-}" && cmd_partition "$2" ;;
  heal) cmd_heal ;;
  freeze) check_node_arg "${2:-}" && cmd_freeze "$2" ;;
  thaw) check_node_arg "${2:-}" && cmd_thaw "$2" ;;
  *) echo "usage: $0 start|stop|status|urls|kill N|restart N|partition N|heal|freeze N|thaw N" >&2; exit 2 ;;
esac
