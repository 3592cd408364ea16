//! The strategies: the ways the benchmark runs the same reservation, and the retry
//! settings they share.

use std::time::Duration;

use diesel_occ::retry::RetryPolicy;

use crate::cli;

/// A way to run the reservation, by the name the command line takes and the tables
/// print.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Strategy {
    /// Read, then `UPDATE SET available = <read - 1>` with no predicate: loses updates.
    Blind,
    /// The statements `save_checked` runs, written by hand with Diesel, same retry loop.
    /// Diesel prepares its `UpdateStatement` again for every execution.
    Handwritten,
    /// The same, with the UPDATE prepared once per connection and reused: built with
    /// `CachedUpdate` instead of `diesel::update(..).set(..)`, as every other strategy
    /// builds its UPDATE (printed as `handwritten-prepared`).
    HandwrittenPrepared,
    /// diesel-occ `save_checked` in the blocking retry helper, no escalation.
    Occ,
    /// The same with `escalate_hot_rows`: a row that met 3 conflicts in the last second
    /// is read with `SELECT ... FOR UPDATE` from the first attempt of every operation.
    OccEscalate,
    /// The same with `escalate_after`: an operation locks after its own conflict.
    OccEscalateOp,
    /// diesel-occ's `blocking::Combiner`: the reservations the workers make to one row at
    /// the same time are applied as a group, one read and one checked save per group
    /// (the change, `available > 0` then `available - 1`, depends on the row alone).
    /// Its conflicts happen inside the groups and are not counted per reservation.
    OccCombine,
    /// diesel-occ's asynchronous `save_checked` in `asynchronous::retry` on a deadpool
    /// pool (printed as `occ-async`), set up as `diesel_occ::guide::tuning` recommends.
    #[value(name = "occ-async")]
    OccAsynchronous,
    /// `handwritten-prepared` on diesel-async with `occ-async`'s setup: the async
    /// baseline that isolates the library (not run by default).
    #[value(name = "handwritten-async")]
    HandwrittenAsynchronous,
    /// `occ-combine` on the asynchronous setup of `occ-async`: `asynchronous::Combiner`
    /// with the deadpool pool as its source.
    #[value(name = "occ-combine-async")]
    OccCombineAsynchronous,
    /// `SELECT ... FOR UPDATE` in a transaction (SQLite: `BEGIN IMMEDIATE`).
    Pessimistic,
    /// A SERIALIZABLE transaction, retried on serialization failures and deadlocks.
    Serializable,
    /// `UPDATE SET available = available - 1 WHERE id = ? AND available > 0`.
    Atomic,
}

impl Strategy {
    /// The strategies `--strategies` defaults to, in the order the tables print them:
    /// all but `handwritten-async`, which the paired async rounds and `abba` run.
    pub fn default_set() -> Vec<Strategy> {
        use clap::ValueEnum;
        let all = Strategy::value_variants().iter().copied();
        all.filter(|s| *s != Strategy::HandwrittenAsynchronous)
            .collect()
    }

    /// The name the command line takes and the tables print.
    pub fn name(self) -> &'static str {
        match self {
            Strategy::Blind => "blind",
            Strategy::Handwritten => "handwritten",
            Strategy::HandwrittenPrepared => "handwritten-prepared",
            Strategy::Occ => "occ",
            Strategy::OccEscalate => "occ-escalate",
            Strategy::OccEscalateOp => "occ-escalate-op",
            Strategy::OccCombine => "occ-combine",
            Strategy::OccAsynchronous => "occ-async",
            Strategy::HandwrittenAsynchronous => "handwritten-async",
            Strategy::OccCombineAsynchronous => "occ-combine-async",
            Strategy::Pessimistic => "pessimistic",
            Strategy::Serializable => "serializable",
            Strategy::Atomic => "atomic",
        }
    }

    /// Whether the strategy runs on its own Tokio runtime rather than worker threads.
    pub fn is_asynchronous(self) -> bool {
        matches!(
            self,
            Strategy::OccAsynchronous
                | Strategy::HandwrittenAsynchronous
                | Strategy::OccCombineAsynchronous
        )
    }
}

/// The retry settings of the command line, shared by every strategy that retries.
#[derive(Debug, Clone, clap::Args)]
pub struct RetryOptions {
    /// Retry backoff: first ceiling, maximum
    #[arg(long, value_name = "FIRST,MAX", default_value = "1ms,50ms", value_parser = backoff)]
    pub backoff: (Duration, Duration),
    /// Retry attempts per operation
    #[arg(long, default_value_t = 100)]
    pub max_attempts: u32,
    /// Conflicts before occ-escalate-op locks
    #[arg(long, default_value_t = 1)]
    pub escalate_after: u32,
    /// occ-escalate locks a row after N conflicts within D, for D
    #[arg(long, value_name = "N,D", default_value = "3,1s", value_parser = hot_rows)]
    pub hot_rows: (u32, Duration),
}

/// `--backoff FIRST,MAX`.
fn backoff(text: &str) -> Result<(Duration, Duration), String> {
    let (first, max) = text
        .split_once(',')
        .ok_or("expected FIRST,MAX such as 1ms,50ms")?;
    Ok((cli::duration(first.trim())?, cli::duration(max.trim())?))
}

/// `--hot-rows N,D`.
fn hot_rows(text: &str) -> Result<(u32, Duration), String> {
    let (conflicts, window) = text.split_once(',').ok_or("expected N,D such as 3,1s")?;
    let conflicts = conflicts.trim().parse().map_err(|e| format!("{e}"))?;
    Ok((conflicts, cli::duration(window.trim())?))
}

impl RetryOptions {
    /// The policy `strategy` retries with: no escalation, but for `occ-escalate`
    /// (hot rows) and `occ-escalate-op` (after the operation's own conflicts).
    pub fn policy(&self, strategy: Strategy) -> RetryPolicy {
        let base = RetryPolicy::new()
            .max_attempts(self.max_attempts)
            .backoff(self.backoff.0, self.backoff.1)
            .never_escalate();
        match strategy {
            Strategy::OccEscalate => base.escalate_hot_rows(self.hot_rows.0, self.hot_rows.1),
            Strategy::OccEscalateOp => base.escalate_after(self.escalate_after),
            _ => base,
        }
    }
}
