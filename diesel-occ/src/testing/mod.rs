//! Deterministic race tests for your own repository code (feature `testing`).
//!
//! A test of "two requests reserve the last seat" that starts two threads and hopes
//! they overlap proves nothing: most runs, one request finishes before the other
//! starts, and the test passes whether or not the code is safe. A [`Race`] forces the
//! interleaving that loses updates: every writer first *reads* (opens its connection,
//! loads the row), the writers meet at a barrier, and only then does any of them
//! *write*. The [`RaceReport`] holds each writer's outcome, in writer order.
//!
//! ```
//! use diesel::prelude::*;
//! use diesel_occ::prelude::*;
//! use diesel_occ::testing::Race;
//!
//! diesel::table! {
//!     concerts (id) {
//!         id -> Integer,
//!         seats_left -> Integer,
//!         version -> Integer,
//!     }
//! }
//!
//! #[derive(Debug, Queryable, Selectable, Identifiable, Versioned)]
//! #[diesel(table_name = concerts)]
//! struct Concert {
//!     id: i32,
//!     seats_left: i32,
//!     #[occ(version)]
//!     version: i32,
//! }
//!
//! // Each writer needs its own connection to the same database. Two connections to
//! // SQLite's `:memory:` are two databases, so the race uses a file.
//! let dir = tempfile::tempdir()?;
//! let url = dir.path().join("concerts.db").display().to_string();
//! let connect = || {
//!     let mut conn = SqliteConnection::establish(&url).expect("open the file");
//!     // Wait for the other writer's lock instead of failing with "database is locked".
//!     diesel::sql_query("PRAGMA busy_timeout = 5000")
//!         .execute(&mut conn)
//!         .expect("set the busy timeout");
//!     conn
//! };
//! let mut conn = connect();
//! diesel::sql_query(
//!     "CREATE TABLE concerts (id INTEGER PRIMARY KEY, \
//!      seats_left INTEGER NOT NULL CHECK (seats_left >= 0), version INTEGER NOT NULL)",
//! )
//! .execute(&mut conn)?;
//! diesel::sql_query("INSERT INTO concerts VALUES (1, 1, 1)").execute(&mut conn)?;
//!
//! // Two requests for the last seat: each reads on its own connection...
//! let report = Race::new(2).run(
//!     |_| {
//!         let mut conn = connect();
//!         let concert = Concert::find(&mut conn, 1).expect("the concert");
//!         (conn, concert)
//!     },
//!     // ...and both have read "1 seat left" before either reserves it.
//!     |_, (mut conn, mut concert)| {
//!         concert.seats_left -= 1;
//!         concert.save_checked(&mut conn).map(|()| concert)
//!     },
//! );
//!
//! // Exactly one reservation; the other request gets a typed conflict, not a
//! // second seat and not a CHECK violation.
//! assert_eq!(report.winners().count(), 1, "{report:?}");
//! assert_eq!(report.conflicts().count(), 1, "{report:?}");
//! let (_, conflict) = report.conflicts().next().unwrap();
//! assert_eq!(conflict.current::<i32>(), Some(2), "the winner's token");
//! assert_eq!(Concert::find(&mut conn, 1)?.seats_left, 0);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! Write the control beside it: the same race through a plain `UPDATE concerts SET
//! seats_left = 0 WHERE id = 1` (no token) lets both writes succeed, so two buyers hold
//! one seat. That test passing proves the race really overlaps the writers.
//!
//! # What a race runs
//!
//! - [`Race::run`] (blocking): one thread per writer. `read(i)` and then
//!   `write(i, state)` run on writer `i`'s thread, so the state (a connection, a loaded
//!   row) never moves between threads and need not be `Send`.
//! - [`Race::run_asynchronous`]: the writers are futures polled together by the
//!   returned future, on whatever runtime awaits it (Tokio's `#[tokio::test]` is
//!   fine), for diesel-async connections. Nothing is spawned, so the closures may
//!   borrow from the test.
//! - [`Race::in_order`]: instead of writing all at once, the writers write one at a
//!   time in writer order, each after the previous write returned. This is the
//!   interleaving "both read, writer 0 commits, then writer 1 saves from its stale
//!   read", with a known winner and no timing.
//!
//! # Panics
//!
//! A panic in a writer's `read` or `write` does not reach the caller: the report holds
//! [`WriterError::Panicked`] for that writer, with the panic's message. If a writer
//! panics while reading, the barrier never opens: the other writers do not write, and
//! their outcome is [`WriterError::Abandoned`], so a test fails on the real cause
//! instead of hanging at a barrier. The panic's message is still printed by the panic
//! hook, as in any test. (Under `panic = "abort"` there is nothing to catch.)
//!
//! [`RaceReport::into_values`] turns the report into the writers' values, or the first
//! writer's failure, for a test that expects every writer to finish.

mod asynchronous;
mod blocking;

use std::any::Any;
use std::fmt;

use crate::{ConcurrencyConflict, Error};

/// A forced interleaving of `writers` writers: all of them read, then all of them
/// write. See the [module documentation](self).
///
/// `Race` is a small value; build it, then [`run`](Race::run) it (blocking) or
/// [`run_asynchronous`](Race::run_asynchronous) it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Race {
    writers: usize,
    in_order: bool,
}

impl Race {
    /// A race of `writers` writers that all write at once after the barrier.
    ///
    /// With zero writers, a run calls nothing and returns an empty report.
    #[must_use]
    pub fn new(writers: usize) -> Self {
        Race {
            writers,
            in_order: false,
        }
    }

    /// After every writer has read, the writers write one at a time in writer order:
    /// writer `i + 1` starts its write when writer `i`'s write has returned (or
    /// panicked).
    ///
    /// This is the "both read, one commits first" interleaving with a known winner:
    /// writer 0 saves, writer 1 saves from the state it read before writer 0's commit.
    ///
    /// ```
    /// use std::sync::Mutex;
    /// use diesel_occ::testing::Race;
    ///
    /// let log = Mutex::new(Vec::new());
    /// let report = Race::new(3).in_order().run(
    ///     |i| log.lock().unwrap().push(format!("read {i}")),
    ///     |i, ()| log.lock().unwrap().push(format!("write {i}")),
    /// );
    /// assert!(report.failures().next().is_none());
    /// let log = log.into_inner().unwrap();
    /// // The reads come first in any order, then the writes in writer order.
    /// assert_eq!(log[3..], ["write 0", "write 1", "write 2"]);
    /// ```
    #[must_use]
    pub fn in_order(self) -> Self {
        Race {
            in_order: true,
            ..self
        }
    }

    /// How many writers the race runs.
    #[must_use]
    pub fn writers(&self) -> usize {
        self.writers
    }

    /// Whether the writers write one at a time in writer order ([`Race::in_order`]).
    #[must_use]
    pub fn is_in_order(&self) -> bool {
        self.in_order
    }
}

/// Why a writer of a [`Race`] has no value in the [`RaceReport`].
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum WriterError {
    /// The writer's `read` or `write` panicked. The panic was caught; the other
    /// writers' outcomes are unaffected, except that a panic while reading abandons
    /// the race ([`WriterError::Abandoned`]).
    #[error("writer {writer} panicked while {phase}: {message}")]
    Panicked {
        /// The writer's index, from 0.
        writer: usize,
        /// Whether it was reading or writing.
        phase: Phase,
        /// The panic's message, or a placeholder when the payload is not a string.
        message: String,
    },
    /// The writer did not write because another writer failed before the barrier (it
    /// panicked while reading, or its thread could not start): the race did not
    /// happen, so no write ran.
    #[error("writer {writer} did not write: writer {by} failed before the barrier")]
    Abandoned {
        /// The writer's index, from 0.
        writer: usize,
        /// The writer that failed before the barrier.
        by: usize,
    },
    /// [`Race::run`] could not start the writer's thread (the operating system refused
    /// one). The other writers do not write ([`WriterError::Abandoned`]).
    #[error("writer {writer} did not run: its thread could not start: {reason}")]
    ThreadNotStarted {
        /// The writer's index, from 0.
        writer: usize,
        /// The operating system's error.
        reason: String,
    },
}

impl WriterError {
    /// The index of the writer this error is about.
    #[must_use]
    pub fn writer(&self) -> usize {
        match self {
            WriterError::Panicked { writer, .. }
            | WriterError::Abandoned { writer, .. }
            | WriterError::ThreadNotStarted { writer, .. } => *writer,
        }
    }
}

/// Where a writer was when it panicked: see [`WriterError::Panicked`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Phase {
    /// In `read`, before the barrier.
    Read,
    /// In `write`, after the barrier.
    Write,
}

impl fmt::Display for Phase {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Phase::Read => "reading",
            Phase::Write => "writing",
        })
    }
}

/// What each writer of a [`Race`] returned, in writer order.
///
/// Writer `i`'s outcome is `Ok(value)` with the value its `write` returned, or a
/// [`WriterError`] when it panicked or did not write. When `write` returns a `Result`,
/// [`winners`](RaceReport::winners) and [`losers`](RaceReport::losers) split the
/// writers, and with diesel-occ's [`Error`], [`conflicts`](RaceReport::conflicts) picks
/// out the [`ConcurrencyConflict`]s.
///
/// Its `Debug` output lists every outcome: put it in an assertion's message.
#[derive(Debug, Clone, PartialEq, Eq)]
#[must_use = "a race test asserts on its writers' outcomes"]
pub struct RaceReport<T> {
    outcomes: Vec<Result<T, WriterError>>,
}

impl<T> RaceReport<T> {
    /// How many writers ran.
    #[must_use]
    pub fn writers(&self) -> usize {
        self.outcomes.len()
    }

    /// Writer `writer`'s outcome, or `None` past the last writer.
    #[must_use]
    pub fn outcome(&self, writer: usize) -> Option<&Result<T, WriterError>> {
        self.outcomes.get(writer)
    }

    /// Every writer's outcome, in writer order.
    pub fn outcomes(&self) -> &[Result<T, WriterError>] {
        &self.outcomes
    }

    /// Every writer's outcome, in writer order, by value.
    #[must_use]
    pub fn into_outcomes(self) -> Vec<Result<T, WriterError>> {
        self.outcomes
    }

    /// The writers that panicked or did not write, in writer order.
    pub fn failures(&self) -> impl Iterator<Item = &WriterError> {
        self.outcomes.iter().filter_map(|o| o.as_ref().err())
    }

    /// The value every writer's `write` returned, in writer order, or the first
    /// writer's failure (by writer order).
    ///
    /// For a test that expects every writer to finish:
    /// `race.run(read, write).into_values().unwrap()` fails the test with the writer's
    /// panic message.
    pub fn into_values(self) -> Result<Vec<T>, WriterError> {
        self.outcomes.into_iter().collect()
    }
}

impl<R, E> RaceReport<Result<R, E>> {
    /// The writers whose `write` returned `Ok`, with their index, in writer order.
    pub fn winners(&self) -> impl Iterator<Item = (usize, &R)> {
        self.outcomes
            .iter()
            .enumerate()
            .filter_map(|(writer, o)| match o {
                Ok(Ok(value)) => Some((writer, value)),
                _ => None,
            })
    }

    /// The writers whose `write` returned `Err`, with their index, in writer order.
    /// Writers that panicked or did not write are not here: see
    /// [`failures`](RaceReport::failures).
    pub fn losers(&self) -> impl Iterator<Item = (usize, &E)> {
        self.outcomes
            .iter()
            .enumerate()
            .filter_map(|(writer, o)| match o {
                Ok(Err(error)) => Some((writer, error)),
                _ => None,
            })
    }
}

impl<R> RaceReport<Result<R, Error>> {
    /// The writers whose `write` returned [`Error::Conflict`], with their index and the
    /// conflict, in writer order.
    pub fn conflicts(&self) -> impl Iterator<Item = (usize, &ConcurrencyConflict)> {
        self.losers()
            .filter_map(|(writer, error)| error.as_conflict().map(|c| (writer, c)))
    }
}

impl<T> IntoIterator for RaceReport<T> {
    type Item = Result<T, WriterError>;
    type IntoIter = std::vec::IntoIter<Result<T, WriterError>>;

    /// Every writer's outcome, in writer order.
    fn into_iter(self) -> Self::IntoIter {
        self.outcomes.into_iter()
    }
}

/// The message of a caught panic.
fn panic_message(payload: &(dyn Any + Send)) -> String {
    if let Some(message) = payload.downcast_ref::<&str>() {
        (*message).to_owned()
    } else if let Some(message) = payload.downcast_ref::<String>() {
        message.clone()
    } else {
        "(a panic payload that is not a string)".to_owned()
    }
}

#[cfg(test)]
mod tests;
