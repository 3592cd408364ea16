#!/usr/bin/env bash
# pgbench running the SQL that one diesel-occ reservation runs when it succeeds: the
# read of the row and the conditional UPDATE carrying the token that was read
# (`save_checked`'s one statement), with prepared statements as Diesel uses them.
#
#   bench/pgbench.sh [CLIENTS] [SECONDS] [KEYS]      (defaults: 4 5 10000)
#   PGBENCH_URL=postgresql://postgres@127.0.0.1:5432/occ_bench
#
# The benchmark (`cargo run --release -p diesel-occ-bench`) runs it between its own
# rounds, on the same table. Run alone, it creates the table when it is missing
# (PGBENCH_NO_INIT=1 skips that). Exits 3 when pgbench is not installed.
set -euo pipefail

clients=${1:-4}
seconds=${2:-5}
keys=${3:-10000}
url=${PGBENCH_URL:-postgresql://postgres@127.0.0.1:5432/occ_bench}

pgbench=$(command -v pgbench || ls /usr/lib/postgresql/*/bin/pgbench 2>/dev/null | tail -n 1 || true)
if [ -z "$pgbench" ]; then
    echo "pgbench not found" >&2
    exit 3
fi

if [ "${PGBENCH_NO_INIT:-0}" != 1 ]; then
    psql -q -v ON_ERROR_STOP=1 "$url" <<SQL
DROP TABLE IF EXISTS bench_stock;
CREATE TABLE bench_stock (id INTEGER PRIMARY KEY, available INTEGER NOT NULL, version INTEGER NOT NULL);
INSERT INTO bench_stock SELECT id, 1000000000, 1 FROM generate_series(1, $keys) AS id;
SQL
fi

script=$(mktemp)
trap 'rm -f "$script"' EXIT
cat >"$script" <<SQL
\set id random(1, $keys)
SELECT available, version FROM bench_stock WHERE id = :id \gset
UPDATE bench_stock SET available = :available - 1, version = :version + 1 WHERE id = :id AND version = :version;
SQL

"$pgbench" -n -M prepared -c "$clients" -j "$clients" -T "$seconds" -f "$script" "$url"
