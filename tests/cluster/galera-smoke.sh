#!/usr/bin/env bash
# Smoke check of a running tests/cluster/galera.sh cluster with the mariadb client:
#  1. for OCC_SMOKE_SECONDS (default 10): write on node 2, read on node 3 with
#     wsrep_sync_wait=1; every read must see the write just made (causal reads).
#  2. a stale checked write: a client read version V (on node 3), node 2 then saves
#     V+1; the client's `UPDATE ... WHERE version = V` on node 3 must match 0 rows.
#  3. the same without causal waits (wsrep_sync_wait=0): node 3 may not have applied
#     node 2's write yet, so the stale UPDATE may match 0 rows or fail certification
#     (1213); either way node 2's write must survive (no lost update).
# Exit 0 when every check holds. Honours OCC_GALERA_PORT like galera.sh.
set -euo pipefail

port0=${OCC_GALERA_PORT:-13306}
seconds=${OCC_SMOKE_SECONDS:-10}
port() { echo $((port0 + $1 - 1)); }

# Runs SQL on node N over TCP as the tests do; prints rows without headers.
m() {
  local n=$1
  shift
  mariadb --no-defaults --protocol=tcp -h 127.0.0.1 -P "$(port "$n")" -u root -D test \
    --batch --skip-column-names -e "$*"
}
fail() { echo "smoke: FAIL: $*" >&2; exit 1; }

m 1 "CREATE TABLE IF NOT EXISTS smoke (id INT PRIMARY KEY, version BIGINT NOT NULL, note VARCHAR(64));
     REPLACE INTO smoke VALUES (1, 1, 'start')"

# 1. causal reads across nodes.
rounds=0
end=$((SECONDS + seconds))
while ((SECONDS < end)); do
  want=$(m 2 "UPDATE smoke SET version = version + 1, note = 'node2' WHERE id = 1;
              SELECT version FROM smoke WHERE id = 1")
  got=$(m 3 "SET SESSION wsrep_sync_wait = 1; SELECT version FROM smoke WHERE id = 1")
  [[ $got == "$want" ]] || fail "round $rounds: node 3 read version $got after node 2 wrote $want"
  rounds=$((rounds + 1))
done
echo "smoke: $rounds rounds in ${seconds}s: write on node 2, read on node 3 (wsrep_sync_wait=1) saw it every time"

# 2. stale checked write, causal.
old=$(m 3 "SET SESSION wsrep_sync_wait = 1; SELECT version FROM smoke WHERE id = 1")
m 2 "UPDATE smoke SET version = version + 1, note = 'node2 wins' WHERE id = 1 AND version = $old"
rows=$(m 3 "SET SESSION wsrep_sync_wait = 1; SELECT version FROM smoke WHERE id = 1 INTO @seen;
            UPDATE smoke SET version = version + 1, note = 'stale node3' WHERE id = 1 AND version = $old;
            SELECT ROW_COUNT()")
final=$(m 1 "SET SESSION wsrep_sync_wait = 1; SELECT CONCAT(version, ' ', note) FROM smoke WHERE id = 1")
echo "smoke: read version $old on node 3; node 2 saved $((old + 1)); on node 3 'UPDATE ... WHERE version = $old' matched $rows rows; row now: $final"
[[ $rows == 0 && $final == "$((old + 1)) node2 wins" ]] || fail "the stale write was not refused"

# 3. stale checked write, no causal wait: 0 rows or a certification failure, never a lost update.
old=$(m 3 "SET SESSION wsrep_sync_wait = 1; SELECT version FROM smoke WHERE id = 1")
m 2 "UPDATE smoke SET version = version + 1, note = 'node2 wins again' WHERE id = 1 AND version = $old"
if out=$(m 3 "SET SESSION wsrep_sync_wait = 0;
              UPDATE smoke SET version = version + 1, note = 'stale node3' WHERE id = 1 AND version = $old;
              SELECT ROW_COUNT()" 2>&1); then
  outcome="matched $out rows"
else
  outcome="failed: $out"
fi
final=$(m 1 "SET SESSION wsrep_sync_wait = 1; SELECT CONCAT(version, ' ', note) FROM smoke WHERE id = 1")
echo "smoke: wsrep_sync_wait=0: the stale UPDATE on node 3 $outcome; row now: $final"
[[ $final == "$((old + 1)) node2 wins again" ]] || fail "lost update: node 2's write was overwritten"
echo "smoke: OK"
