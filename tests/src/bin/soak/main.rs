//! Soak: many workers, a random mix of checked writes, injected faults, then a check
//! that nothing acknowledged was lost.
//!
//! ```text
//! cargo run --release -p diesel-occ-tests --features mysql --bin soak -- \
//!     --backend all --duration 30s --workers 8
//! ```
//!
//! Options: `--backend postgres,mysql,sqlite|all` (default `all`), `--duration 30s`
//! (per backend; `ms`, `s` or `m`), `--workers 8`, `--fault-every 200ms` (`0` turns
//! faults off, and then the run fails unless `--min-faults 0`), `--seed N`,
//! `--min-acknowledged 100` and `--min-faults 1` (a backend that acknowledged fewer
//! writes or injected fewer faults proves too little: the run fails), and
//! `--sabotage`, which turns the checked updates into plain read-modify-writes without
//! the token in the predicate and adds two writers that read the same row, meet at a
//! barrier and both write it blindly (past the duration if need be, until three rounds
//! have landed): the check must report lost updates and the run must exit with 1 (CI
//! asserts both). Servers come from `OCC_POSTGRES_URL` / `OCC_MYSQL_URL` as for the
//! tests; each backend runs in a fresh database that is dropped afterwards.
//!
//! `--backend galera` (not part of `all`) runs the same workload on the 3-node MariaDB
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
//!
//! The workload (`workload/`) is written once for one connection type and compiled for
//! each backend by `postgres.rs`, `mysql.rs` and `sqlite.rs`, on the example apps of
//! that backend (`diesel_occ_examples::<backend>`). Workers run on the example schemas
//! until the duration is up:
//!
//! - checked updates and deletes of `inventory` rows through the retry helper (a new
//!   connection per attempt, escalation after 3 conflicts);
//! - client-token edits: a reservation with a token the worker read earlier (often
//!   stale by then), checked before the edit and by the save's predicate, plus hostile
//!   tokens that must be refused with a typed error;
//! - inserts of new `inventory` rows;
//! - work-item claims with short leases, some completed after the lease ran out (the
//!   fencing token must refuse them when the item was claimed again), some replayed;
//! - seat bookings on concerts of 20 seats, through `seat::book` (the retry helper on
//!   an r2d2 pool).
//!
//! Faults: a fault thread kills a random session of the soak database every
//! `--fault-every` (PostgreSQL `pg_terminate_backend`, MariaDB `KILL`); on SQLite it holds
//! the database's write lock for 50 ms instead. Workers reconnect after a failure.
//!
//! Every acknowledged write is logged (the token the ack says the row holds), and so is
//! every write whose outcome is unknown (its connection died after the statement may
//! have been sent). The check afterwards (`check.rs`) rebuilds each `inventory` row's
//! chain of tokens: every acknowledged write must be on it, each unknown write at most
//! once, and the row must end where the chain ends with the value its last write wrote.
//! It counts a violation for: two acknowledged writes from the same token (a lost
//! update); a final state (token and value, or no row) that the acknowledged writes
//! plus at most the unknown ones do not explain; a row holding a value other than its
//! last acknowledged write's; a deleted row that exists; an acknowledged row that
//! vanished; an acknowledgement that did not change the token; a hostile token that was
//! not refused; a broken invariant (stock below zero, a nil token, seats sold plus seats
//! left not equal to capacity, an acknowledged seat or effect missing, an item
//! processed twice, a done item without its effect or with a stale fence).
//!
//! The last lines give one verdict per backend (`soak: postgres: passed`, or
//! `soak: postgres: FAILED: ...` with the number of violations and lost updates, or the
//! evidence that was missing). Exit code 1 when any backend has a violation, 3 when one
//! proved too little (too few acknowledged writes or faults), 2 when a backend could not
//! run.

mod check;
mod faults;
#[cfg(feature = "mysql")]
mod galera;
#[cfg(feature = "mysql")]
mod mysql;
mod options;
mod postgres;
mod record;
mod report;
mod run;
mod sqlite;

use std::process::ExitCode;
use std::time::Instant;

use crate::options::Target;
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
            // The cluster runs the retried path only (`galera.rs`).
            if backend == Target::Galera && path != "retried" {
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
