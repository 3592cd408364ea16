//! Soak: every public write path of diesel-occ driven by many threads under injected
//! faults, then a check that nothing acknowledged was lost or applied twice.
//!
//! ```text
//! cargo run --release -p diesel-occ-tests --features mysql --bin soak -- \
//!     --backend all --path all --duration 30s --workers 8
//! ```
//!
//! Options: `--backend postgres,mysql,sqlite|all` (default `all`), `--path NAME,...|all`
//! (default `all`, see below), `--duration 30s` (per path and backend; `ms`, `s` or
//! `m`), `--workers 8`, `--fault-every 200ms` (`0` turns faults off, and then the run
//! fails unless `--min-faults 0`), `--seed N`, `--min-acknowledged 100` and
//! `--min-faults 1` (a path that acknowledged fewer writes or injected fewer faults
//! proves too little: the run fails), and `--sabotage`, which runs each path's
//! sabotage twin: the same write without its token check (or with the defect the path
//! must not have), which the check must catch (CI asserts it, path by path). Servers
//! come from `OCC_POSTGRES_URL` / `OCC_MYSQL_URL` as for the tests; each path runs in
//! a fresh database that is dropped afterwards.
//!
//! The paths (`workload/`, one file per path or family, written once for a connection
//! type and compiled for each backend by `postgres.rs`, `mysql.rs` and `sqlite.rs`):
//!
//! - `retried`: the example apps' mix (`workload/retried/`): checked updates and
//!   deletes through `blocking::retry` (escalated after 3 conflicts), client-token
//!   edits with hostile tokens, inserts, work-item claims with fencing tokens, seat
//!   bookings. Its check (`check.rs`) rebuilds each row's chain of tokens. Its twin
//!   writes without the token predicate, plus two writers that both write one row
//!   blindly from one read.
//! - on the `counters` test table (`workload/runner.rs`): `save_checked`,
//!   `save_checked_where`, `update_by_key`, `upsert` (with two faults: a taken key, or
//!   the caller's own failed statement, caught inside `diesel_occ::transaction`, and a
//!   row deleted since it was read upserted from its stale token), `delete_checked`,
//!   `delete_by_key` (each with a re-insert), `tracked`, `save_merging`, `save_all_checked`, `bulk_update`,
//!   `force_increment`, `soft_delete_checked`, `transaction` (rollbacks and caught
//!   panics, then the same entities again), `bypass_guard` (hand-written writes under
//!   the guard's trigger), `timestamp_now` (a writer that sets a timestamp token to
//!   the database's clock, on the `stamped` table), `combiner` (`blocking::Combiner`),
//!   `retry_escalated` (`blocking::retry`, escalated from the first attempt or after one
//!   conflict), `retry_with_standby` (reads from a standby: a second connection to the
//!   database here, the streaming standby on `--backend pg-replicas`), `versionless`
//!   (`Tracked` saves of an entity without a version column, guarded by its check
//!   column `value`), and the async flavour of every one of them that has an async API
//!   (`workload/asynchronous/`): `async_save_checked`, `async_save_checked_where`,
//!   `async_update_by_key`, `async_upsert`, `async_delete_checked`, `async_delete_by_key`,
//!   `async_tracked`, `async_save_merging`, `async_save_all_checked`,
//!   `async_bulk_update`, `async_force_increment`, `async_soft_delete_checked`,
//!   `async_transaction` (rollbacks and caught panics, as `transaction`),
//!   `async_versionless`, each with
//!   one write in eight dropped after 0 to 3 pending polls, and `async_combiner`
//!   (`asynchronous::Combiner`). Each acknowledged change adds 1 to a row's
//!   counter and is recorded with the token it was read at (the combiners' changes
//!   and the upsert path's caught-error transactions also leave a tag in the row); `check/counters.rs` fails a row below its
//!   acknowledged changes (lost update), above them plus its unknown-outcome ones
//!   (applied twice), with two acknowledged writes from one token, with a tag
//!   missing or twice (or there though its transaction was reported not committed), or
//!   present at the end though its delete was acknowledged (resurrected). Besides the
//!   workers, two racers read one row and write it one after the other every round,
//!   so each twin loses a change every round, not by luck. The combiners' twins apply
//!   a change twice and count it once (the defect of re-running a write whose outcome
//!   is unknown); the bypass guard's runs without the guard; the "now" writer's
//!   writes back the token it read.
//!
//! Faults: a fault thread kills a random session of the soak database every
//! `--fault-every` (PostgreSQL `pg_terminate_backend`, MariaDB `KILL`), including
//! sessions whose COMMIT was sent (an unknown outcome: applied once or not at all); on
//! SQLite it holds the database's write lock for 50 ms instead. Threads reconnect after
//! a failure. The paths add their own: rollbacks and panics inside transactions,
//! dropped futures, the bypass writer.
//!
//! `--backend galera` (not part of `all`) runs the `retried` path on the 3-node MariaDB
//! Galera cluster of `tests/cluster/galera.sh` (`OCC_GALERA_URLS`, a comma list, else
//! three URLs from `OCC_GALERA_PORT`, default 13306..13308), every worker's connection
//! and every retry attempt taken round-robin from the nodes through
//! `diesel_occ::multi_host::MultiHost` (`galera.rs`). `--kill-node N` SIGKILLs node N
//! at `--kill-at` (default a quarter of the duration) and restarts it at `--restart-at`
//! (default half), with `galera.sh kill N` / `restart N` (`--galera-script`, default
//! the crate's `cluster/galera.sh`; it reads the same `OCC_GALERA_*` ports); the run
//! then goes on past the duration until the node has rejoined and served again, and
//! fails for too little evidence unless the node served nothing while down and served
//! again after its restart.
//! `--partition-node N` is the network-partition twin of `--kill-node`: node N's group
//! traffic is cut off from the other two at `--partition-at` (default a quarter) with
//! `galera.sh partition N` (iptables, so run as root; clients still reach the node,
//! which refuses their statements with 1047 once it is non-primary) and healed at
//! `--heal-at` (default half) with `galera.sh heal`; the same evidence is required.
//!
//! `--backend pg-replicas` (not part of `all`) runs `retry_with_standby` and
//! `async_retry_with_standby` on the
//! PostgreSQL primary and streaming standby of `tests/cluster/pg-replicas.sh`
//! (`OCC_PG_PRIMARY_URL`, `OCC_PG_STANDBY_URL`): the database is made on the primary
//! and replayed by the standby, the threads' first reads and the helper's reads go to
//! the standby (which lags: a stale read meets a conflict and the retry re-reads from
//! the primary), the faults kill sessions on the primary.
//!
//! `--failover sync|async-held` (with `--backend pg-replicas` alone; `--failover-at`,
//! default a third of the duration) SIGKILLs the pair's primary and promotes its
//! standby during each run, the workers on multi-host URLs over both servers, then makes
//! a new pair (`pg_failover.rs`): `sync` with a synchronous standby, which must pass;
//! `async-held`, the twin, with an asynchronous standby whose WAL is held until the
//! primary acknowledged writes it will never have, which the check must catch.
//!
//! Output: per path and backend, a figures line, up to 50 `VIOLATION` lines, and a
//! `table: | path | backend | flavour | ... |` row for RELIABILITY.md; then one verdict
//! per path and backend (`soak: postgres: update_by_key: passed`, or `... FAILED: N
//! violations (L lost updates[, D applied twice])`, or the evidence that was missing).
//! Exit code 1 when any path has a violation, 3 when one proved too little, 2 when a
//! backend could not run.

mod check;
mod counters;
mod faults;
#[cfg(feature = "mysql")]
mod galera;
#[cfg(feature = "mysql")]
mod mysql;
mod options;
mod pg_failover;
mod postgres;
mod record;
mod report;
mod run;
mod sqlite;

use std::process::ExitCode;
use std::time::Instant;

use crate::report::Verdicts;

fn main() -> ExitCode {
    let args = match options::parse_args() {
        Ok(args) => args,
        Err(message) => {
            if !message.is_empty() {
                eprintln!("error: {message}");
            }
            eprintln!("{}", options::usage());
            return ExitCode::from(2);
        }
    };
    // The transaction path's injected panics are caught and counted: keep them off
    // stderr, and every other panic on it.
    let report_panic = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        let message = info.payload().downcast_ref::<String>().map(String::as_str);
        if message != Some(run::INJECTED_PANIC) {
            report_panic(info);
        }
    }));
    let mut verdicts = Verdicts::default();
    for &backend in &args.backends {
        for &path in &args.paths {
            // A cluster runs the path it exists for only.
            if !backend.runs(path) {
                continue;
            }
            let started = Instant::now();
            match run::run(&args, backend, path) {
                Some(report) => verdicts.add(&report, &args, started.elapsed()),
                None => verdicts.unavailable(),
            }
        }
    }
    verdicts.finish()
}
