#!/usr/bin/env bash
# A PostgreSQL primary and one streaming hot standby on 127.0.0.1, for diesel-occ's
# "read from a standby, write to the primary" tests.
#
#   pg-replicas.sh start          fresh pair: initdb the primary, create database `test`,
#                                 pg_basebackup the standby, wait until the primary's
#                                 pg_stat_replication shows it `streaming`, print the URLs.
#                                 When one server already runs, only the other is started.
#   pg-replicas.sh stop           stop both; nothing of ours is left running
#   pg-replicas.sh status         both servers' state; exit 0 only when streaming
#   pg-replicas.sh pause-replay   pg_wal_replay_pause() on the standby, wait until paused
#                                 (it still receives WAL but its reads go stale: forced lag)
#   pg-replicas.sh resume-replay  pg_wal_replay_resume() on the standby
#   pg-replicas.sh urls           primary URL, then standby URL
#
# Failover (tests/tests/integration/scale_out/pg_replicas/failover.rs, the soak's
# --failover); `start` after them (with both servers stopped: `stop` first) makes a new
# pair:
#   pg-replicas.sh sync on|off    synchronous_standby_names = the standby (on) or empty
#                                 (off) on the primary, reloaded; `on` returns once the
#                                 primary's pg_stat_replication says `sync`: from then a
#                                 commit is acknowledged only once the standby flushed it
#   pg-replicas.sh hold-wal       cut the standby's WAL stream (primary_conninfo emptied,
#                                 reloaded: its walreceiver exits and is not restarted);
#                                 returns once the primary sees no walsender for it.
#                                 Commits on the primary from here never reach it
#   pg-replicas.sh release-wal    primary_conninfo back: the standby streams again
#   pg-replicas.sh kill-primary   SIGKILL the primary's postmaster and every child of it
#                                 (a crash; nothing is flushed or shipped after it)
#   pg-replicas.sh promote        pg_ctl promote the standby, wait until it takes writes
#
# Ports: primary OCC_PG_PORT (default 15432), standby OCC_PG_PORT + 1 (15433), so nothing
# clashes with the system server on 5432.
#
# Environment:
#   OCC_CLUSTER_DIR      base of both cluster scripts' state (default /tmp/occ-cluster)
#   OCC_PG_DIR           this pair's dir (default $OCC_CLUSTER_DIR/pg): primary/ and
#                        standby/ data dirs, primary.log, standby.log, run/ (sockets)
#   OCC_PG_PORT          primary port (default 15432); the standby uses the next one
#   OCC_PG_BIN           PostgreSQL's bin dir (default: newest /usr/lib/postgresql/*/bin)
#   OCC_CLUSTER_TIMEOUT  seconds to wait for a server or for streaming (default 180)
#
# Auth is trust for everyone on loopback and the unix socket: a throwaway test pair.
# `start` on a stopped pair wipes OCC_PG_DIR and makes a new one, so tests begin from a
# known state; `stop` keeps the dir for its logs.
set -euo pipefail

base_dir=${OCC_PG_DIR:-${OCC_CLUSTER_DIR:-/tmp/occ-cluster}/pg}
primary_port=${OCC_PG_PORT:-15432}
standby_port=$((primary_port + 1))
timeout=${OCC_CLUSTER_TIMEOUT:-180}
# The walreceiver's application_name (from the standby's cluster_name), by which the
# primary's pg_stat_replication row is found.
standby_name=occ_standby

say() { echo "pg-replicas: $*" >&2; }
die() { say "error: $*"; exit 1; }

bin=${OCC_PG_BIN:-}
if [[ -z $bin ]]; then
  bin=$(find /usr/lib/postgresql -mindepth 2 -maxdepth 2 -name bin -type d 2>/dev/null | sort -V | tail -n 1)
fi
[[ -n $bin && -x $bin/initdb ]] \
  || die "no PostgreSQL server binaries (initdb) found: install postgresql or set OCC_PG_BIN"

# PostgreSQL refuses to run as root: as root, every server command runs as `postgres`
# on postgres-owned dirs; as anyone else, as that user.
if ((EUID == 0)); then
  as_user() { setpriv --reuid=postgres --regid=postgres --init-groups -- "$@"; }
else
  as_user() { "$@"; }
fi

datadir() { echo "$base_dir/$1"; }
port() { if [[ $1 == primary ]]; then echo "$primary_port"; else echo "$standby_port"; fi; }
url() { echo "postgres://postgres@127.0.0.1:$(port "$1")/test"; }

# Runs SQL on a server as the superuser over TCP; prints unaligned rows.
psql_on() {
  local which=$1
  shift
  "$bin/psql" -X -q -h 127.0.0.1 -p "$(port "$which")" -U postgres -d "${PSQL_DB:-postgres}" \
    -v ON_ERROR_STOP=1 -At -c "$*"
}

# The postmaster's pid, or nothing: postmaster.pid's first line, checked against the
# process's command line so a stale file or a reused pid is never signalled.
server_pid() {
  local f pid
  f="$(datadir "$1")/postmaster.pid"
  [[ -r $f ]] || return 0
  pid=$(head -n 1 "$f")
  [[ $pid =~ ^[0-9]+$ && -r /proc/$pid/cmdline ]] || return 0
  tr '\0' ' ' <"/proc/$pid/cmdline" | grep -qF -- "$(datadir "$1")" || return 0
  echo "$pid"
}

fail_server() {
  say "error: $1: $2; last lines of $base_dir/$1.log:"
  tail -n 40 "$base_dir/$1.log" >&2 2>/dev/null || true
  exit 1
}

start_server() {
  local which=$1
  [[ -z $(server_pid "$which") ]] || return 0
  say "starting $which on port $(port "$which")"
  # pg_ctl -w waits until the server accepts connections (a hot standby: once it has
  # reached a consistent state), up to our timeout.
  as_user "$bin/pg_ctl" -D "$(datadir "$which")" -l "$base_dir/$which.log" -w -t "$timeout" start >/dev/null \
    || fail_server "$which" "did not start within ${timeout}s"
}

# "streaming" when the primary sees the standby's walreceiver streaming, else its state.
replication_state() {
  psql_on primary "SELECT state FROM pg_stat_replication WHERE application_name = '$standby_name'" 2>/dev/null || true
}

wait_streaming() {
  local deadline=$((SECONDS + timeout)) st
  while :; do
    [[ -n $(server_pid primary) ]] || fail_server primary "the server exited"
    [[ -n $(server_pid standby) ]] || fail_server standby "the server exited"
    st=$(replication_state)
    [[ $st == streaming ]] && return 0
    ((SECONDS < deadline)) || fail_server standby "not streaming after ${timeout}s (state: ${st:-none})"
    sleep 0.5
  done
}

init_primary() {
  local dir
  dir=$(datadir primary)
  # --no-sync: a throwaway cluster; initdb's fsyncs would only cost time and disk I/O.
  as_user "$bin/initdb" -D "$dir" -U postgres --auth=trust --encoding=UTF8 --locale=C.UTF-8 \
    --no-sync --no-instructions >"$base_dir/initdb.log" 2>&1 \
    || { tail -n 30 "$base_dir/initdb.log" >&2; die "initdb failed"; }
  # Included last, so these settings win over initdb's postgresql.conf; the standby's
  # base backup copies this file, and its own standby.conf overrides the port.
  cat >>"$dir/postgresql.conf" <<EOF

# diesel-occ test pair (tests/cluster/pg-replicas.sh)
listen_addresses = '127.0.0.1'
port = $primary_port
unix_socket_directories = '$base_dir/run'
# Small, so the pair sits beside the system server and the builds.
shared_buffers = 32MB
max_connections = 100
wal_level = replica
max_wal_senders = 4
max_replication_slots = 4
hot_standby = on
# Lets the primary see the standby's replay position (feedback) promptly.
wal_receiver_status_interval = 1s
hot_standby_feedback = on
include_if_exists = 'standby.conf'
EOF
}

init_standby() {
  local dir
  dir=$(datadir standby)
  # -R writes primary_conninfo and standby.signal; the slot keeps the WAL the standby
  # has not received yet on the primary, whatever happens to the standby.
  as_user "$bin/pg_basebackup" -h 127.0.0.1 -p "$primary_port" -U postgres -D "$dir" \
    -R -X stream -c fast --create-slot --slot="$standby_name" --no-sync >"$base_dir/basebackup.log" 2>&1 \
    || { tail -n 30 "$base_dir/basebackup.log" >&2; die "pg_basebackup failed"; }
  cat >"$dir/standby.conf" <<EOF
port = $standby_port
cluster_name = '$standby_name'
EOF
}

cmd_status() {
  local which pid healthy=0 st
  for which in primary standby; do
    pid=$(server_pid "$which")
    if [[ -z $pid ]]; then
      echo "$which  127.0.0.1:$(port "$which")  down"
      healthy=1
      continue
    fi
    if [[ $which == primary ]]; then
      st=$(psql_on primary "SELECT coalesce(string_agg(format('standby %s %s sent %s replayed %s',
             application_name, state, sent_lsn, replay_lsn), '; '), 'no standby connected')
             FROM pg_stat_replication" 2>/dev/null || echo "no answer")
      [[ $(replication_state) == streaming ]] || healthy=1
    else
      # A promoted standby (failover) has no replay state: say so.
      st=$(psql_on standby "SELECT CASE WHEN pg_is_in_recovery() THEN format('in_recovery t replay %s received %s',
             pg_get_wal_replay_pause_state(), pg_last_wal_receive_lsn()) ELSE 'promoted: takes writes' END" 2>/dev/null \
        || echo "no answer")
    fi
    echo "$which  127.0.0.1:$(port "$which")  pid $pid  $st"
  done
  return "$healthy"
}

cmd_urls() {
  url primary
  url standby
}

cmd_start() {
  local t0=$SECONDS
  if [[ -n $(server_pid primary) || -n $(server_pid standby) ]]; then
    # Running already: start only what is missing.
    start_server primary
    [[ -d $(datadir standby) ]] || init_standby
    start_server standby
  else
    say "new primary and standby in $base_dir"
    rm -rf "$base_dir"
    mkdir -p "$base_dir/run"
    ((EUID == 0)) && chown -R postgres:postgres "$base_dir"
    as_user test -w "$base_dir" \
      || die "user postgres cannot write $base_dir: choose OCC_PG_DIR/OCC_CLUSTER_DIR elsewhere (e.g. under /tmp)"
    init_primary
    start_server primary
    PSQL_DB=postgres psql_on primary "CREATE DATABASE test" >/dev/null
    init_standby
    start_server standby
  fi
  wait_streaming
  say "primary and standby ready in $((SECONDS - t0))s"
  cmd_status
  cmd_urls
}

cmd_stop() {
  local which pid
  # The standby first, so the primary's fast shutdown does not make it log reconnects.
  for which in standby primary; do
    pid=$(server_pid "$which")
    if [[ -n $pid ]]; then
      say "stopping $which"
      as_user "$bin/pg_ctl" -D "$(datadir "$which")" -m fast -w -t "$timeout" stop >/dev/null \
        || fail_server "$which" "did not stop within ${timeout}s"
      # pg_ctl returns once postmaster.pid is gone; wait for the process itself too, so
      # a pgrep right after stop sees nothing of ours (a zombie awaiting reaping is gone).
      while [[ -n $(ps -o stat= -p "$pid" 2>/dev/null | grep -v '^Z' || true) ]]; do sleep 0.1; done
    fi
  done
  say "stopped"
}

standby_running() {
  [[ -n $(server_pid standby) ]] || die "the standby is not running: run start first"
}

cmd_pause() {
  standby_running
  psql_on standby "SELECT pg_wal_replay_pause()" >/dev/null
  # The request is only a flag ("pause requested") until the startup process sees it;
  # wait for "paused" so a caller's next write on the primary surely stays unreplayed.
  local deadline=$((SECONDS + timeout)) st
  while st=$(psql_on standby "SELECT pg_get_wal_replay_pause_state()") && [[ $st != paused ]]; do
    ((SECONDS < deadline)) || die "standby replay not paused after ${timeout}s (state: $st)"
    sleep 0.2
  done
  say "standby replay: $st"
}

cmd_resume() {
  standby_running
  psql_on standby "SELECT pg_wal_replay_resume()" >/dev/null
  say "standby replay: $(psql_on standby "SELECT pg_get_wal_replay_pause_state()")"
}

cmd_sync() {
  local names deadline=$((SECONDS + timeout)) st
  case ${1:-} in
    on) names=$standby_name ;;
    off) names= ;;
    *) die "usage: sync on|off" ;;
  esac
  [[ -n $(server_pid primary) ]] || die "the primary is not running: run start first"
  psql_on primary "ALTER SYSTEM SET synchronous_standby_names = '$names'" >/dev/null
  psql_on primary "ALTER SYSTEM SET synchronous_commit = 'on'" >/dev/null
  psql_on primary "SELECT pg_reload_conf()" >/dev/null
  # The reload is asynchronous: wait until the walsender reports the new sync state.
  local want=async
  [[ $1 == on ]] && want=sync
  while st=$(psql_on primary "SELECT sync_state FROM pg_stat_replication WHERE application_name = '$standby_name'") \
    && [[ $st != "$want" ]]; do
    ((SECONDS < deadline)) || die "standby not $want after ${timeout}s (state: ${st:-not connected})"
    sleep 0.1
  done
  say "standby replication: $st (synchronous_standby_names = '$names')"
}

# The conninfo `release-wal` restores: what pg_basebackup -R wrote, minus what it does
# not need (the application_name comes from cluster_name).
primary_conninfo() {
  echo "host=127.0.0.1 port=$primary_port user=postgres"
}

cmd_hold_wal() {
  standby_running
  psql_on standby "ALTER SYSTEM SET primary_conninfo = ''" >/dev/null
  psql_on standby "SELECT pg_reload_conf()" >/dev/null
  # Both ends must be gone: the walreceiver on the standby, and its walsender on a
  # running primary (which would otherwise still ship what is in flight).
  local deadline=$((SECONDS + timeout))
  while [[ $(psql_on standby "SELECT count(*) FROM pg_stat_wal_receiver") != 0 ]] \
    || { [[ -n $(server_pid primary) ]] && [[ -n $(replication_state) ]]; }; do
    ((SECONDS < deadline)) || die "the standby still streams after ${timeout}s"
    sleep 0.1
  done
  say "standby WAL held at received $(psql_on standby "SELECT pg_last_wal_receive_lsn()")"
}

cmd_release_wal() {
  standby_running
  psql_on standby "ALTER SYSTEM SET primary_conninfo = '$(primary_conninfo)'" >/dev/null
  psql_on standby "SELECT pg_reload_conf()" >/dev/null
  [[ -z $(server_pid primary) ]] || wait_streaming
  say "standby WAL released"
}

cmd_kill_primary() {
  local pid children
  pid=$(server_pid primary)
  [[ -n $pid ]] || die "the primary is not running"
  # The postmaster is stopped first, so it forks no backend after its children are
  # listed: a backend forked in between would outlive the kill as an orphan, waiting
  # for ever on a lock a killed process held, with a client waiting on it. Then the
  # children, stopped, so none of them (a walsender, a backend finishing its commit)
  # runs on after the postmaster dies; then all of them at once.
  kill -STOP "$pid"
  until case $(ps -o stat= -p "$pid" 2>/dev/null) in T* | "") true ;; *) false ;; esac; do
    sleep 0.01
  done
  children=$(pgrep -P "$pid" || true)
  # shellcheck disable=SC2086 # one pid per word
  kill -STOP $children 2>/dev/null || true
  kill -KILL "$pid" $children 2>/dev/null || true
  while [[ -n $(ps -o stat= -p "$pid" 2>/dev/null | grep -v '^Z' || true) ]]; do sleep 0.05; done
  say "primary SIGKILLed (postmaster $pid and $(wc -w <<<"$children") children)"
}

cmd_promote() {
  standby_running
  as_user "$bin/pg_ctl" -D "$(datadir standby)" -w -t "$timeout" promote >/dev/null \
    || fail_server standby "not promoted within ${timeout}s"
  say "standby promoted: in_recovery $(psql_on standby "SELECT pg_is_in_recovery()")"
}

case ${1:-} in
  start) cmd_start ;;
  stop) cmd_stop ;;
  status) cmd_status ;;
  urls) cmd_urls ;;
  pause-replay) cmd_pause ;;
  resume-replay) cmd_resume ;;
  sync) cmd_sync "${2:-}" ;;
  hold-wal) cmd_hold_wal ;;
  release-wal) cmd_release_wal ;;
  kill-primary) cmd_kill_primary ;;
  promote) cmd_promote ;;
  *)
    echo "usage: $0 start|stop|status|urls|pause-replay|resume-replay|sync on|off|hold-wal|release-wal|kill-primary|promote" >&2
    exit 2
    ;;
esac
