//! The strategies: the ways the benchmark runs the same reservation, and the retry
//! settings they share.

use std::time::Duration;

use diesel_occ::retry::RetryPolicy;

use crate::cli;

/// A way to run the reservation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
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
    /// pool (printed as `occ-async`).
    OccAsynchronous,
    /// `occ-combine` on the asynchronous setup of `occ-async`: `asynchronous::Combiner`
    /// with the deadpool pool as its source.
    OccCombineAsynchronous,
    /// `SELECT ... FOR UPDATE` in a transaction (SQLite: `BEGIN IMMEDIATE`).
    Pessimistic,
    /// A SERIALIZABLE transaction, retried on serialization failures and deadlocks.
    Serializable,
    /// `UPDATE SET available = available - 1 WHERE id = ? AND available > 0`.
    Atomic,
}

impl Strategy {
    /// Every strategy, in the order the tables print them.
    pub const ALL: [Strategy; 12] = [
        Strategy::Blind,
        Strategy::Handwritten,
        Strategy::HandwrittenPrepared,
        Strategy::Occ,
        Strategy::OccEscalate,
        Strategy::OccEscalateOp,
        Strategy::OccCombine,
        Strategy::OccAsynchronous,
        Strategy::OccCombineAsynchronous,
        Strategy::Pessimistic,
        Strategy::Serializable,
        Strategy::Atomic,
    ];

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
            Strategy::OccCombineAsynchronous => "occ-combine-async",
            Strategy::Pessimistic => "pessimistic",
            Strategy::Serializable => "serializable",
            Strategy::Atomic => "atomic",
        }
    }

    /// Reads a strategy's name.
    pub fn parse(name: &str) -> Result<Strategy, String> {
        Strategy::ALL
            .into_iter()
            .find(|s| s.name() == name)
            .ok_or_else(|| format!("unknown strategy {name:?}"))
    }

    /// Whether the strategy runs on its own Tokio runtime rather than worker threads.
    pub fn is_asynchronous(self) -> bool {
        matches!(
            self,
            Strategy::OccAsynchronous | Strategy::OccCombineAsynchronous
        )
    }
}

/// The retry settings of the command line, shared by every strategy that retries.
#[derive(Debug, Clone)]
pub struct RetryOptions {
    /// `--backoff A,B`: the first backoff ceiling.
    pub initial_backoff: Duration,
    /// `--backoff A,B`: the largest.
    pub max_backoff: Duration,
    /// `--max-attempts`.
    pub max_attempts: u32,
    /// `--escalate-after`: conflicts before `occ-escalate-op` locks.
    pub escalate_after: u32,
    /// `--hot-rows N,D`: `occ-escalate` locks a row after N conflicts within D.
    pub hot_rows: (u32, Duration),
}

impl Default for RetryOptions {
    fn default() -> Self {
        RetryOptions {
            initial_backoff: Duration::from_millis(1),
            max_backoff: Duration::from_millis(50),
            max_attempts: 100,
            escalate_after: 1,
            hot_rows: (3, Duration::from_secs(1)),
        }
    }
}

/// The usage lines of [`RetryOptions`].
pub const RETRY_USAGE: &str =
    "  --backoff A,B         retry backoff: first ceiling, maximum (default 1ms,50ms)
  --max-attempts N      retry attempts per operation (default 100)
  --hot-rows N,D        occ-escalate locks a row after N conflicts within D, for D
                        (default 3,1s)
  --escalate-after N    conflicts before occ-escalate-op locks (default 1)";

impl RetryOptions {
    /// Applies `flag` if it is one of these options; `false` when it is not.
    pub fn accept(&mut self, flag: &str, parser: &mut lexopt::Parser) -> Result<bool, String> {
        match flag {
            "--backoff" => {
                let parts = cli::list(&cli::value(parser, flag)?);
                let [a, b] = parts.as_slice() else {
                    return Err("--backoff takes FIRST,MAX".into());
                };
                self.initial_backoff = cli::duration(a)?;
                self.max_backoff = cli::duration(b)?;
            }
            "--max-attempts" => self.max_attempts = cli::parsed(parser, flag)?,
            "--escalate-after" => self.escalate_after = cli::parsed(parser, flag)?,
            "--hot-rows" => {
                let text = cli::value(parser, flag)?;
                let (conflicts, window) = text
                    .split_once(',')
                    .ok_or_else(|| format!("--hot-rows {text:?}: expected N,D such as 3,1s"))?;
                self.hot_rows = (
                    cli::number(flag, conflicts.trim())?,
                    cli::duration(window.trim())?,
                );
            }
            _ => return Ok(false),
        }
        Ok(true)
    }

    /// The policy `strategy` retries with: no escalation, but for `occ-escalate`
    /// (hot rows) and `occ-escalate-op` (after the operation's own conflicts).
    pub fn policy(&self, strategy: Strategy) -> RetryPolicy {
        let base = RetryPolicy::new()
            .max_attempts(self.max_attempts)
            .backoff(self.initial_backoff, self.max_backoff)
            .never_escalate();
        match strategy {
            Strategy::OccEscalate => base.escalate_hot_rows(self.hot_rows.0, self.hot_rows.1),
            Strategy::OccEscalateOp => base.escalate_after(self.escalate_after),
            _ => base,
        }
    }
}
