//! What diesel-occ reports: `tracing` spans and events in OpenTelemetry's naming, and
//! counters and histograms through the [`metrics`](https://docs.rs/metrics) facade
//! (feature `metrics`).
//!
//! Everything has the target `diesel_occ`, so a filter such as
//! `RUST_LOG=info,diesel_occ=debug` turns it on alone. Whether the events name their
//! rows by key value is decided by the filter too, on a target of its own (see
//! [Key values](#key-values)). Nothing here is a setting of the process: two libraries
//! that use diesel-occ in one program report the same way, and the subscriber the
//! application installs decides what is kept.
//!
//! # Spans
//!
//! Their fields are OpenTelemetry's attributes for a database client span, so that
//! [`tracing-opentelemetry`](https://docs.rs/tracing-opentelemetry) exports them as they
//! are (its `otel.*` fields set the exported span's name, kind and status).
//!
//! | span | level | one per | fields |
//! |---|---|---|---|
//! | `diesel_occ.write` | DEBUG | checked write | `db.system.name`, `db.collection.name`, `db.operation.name`, `otel.name` (`"<operation> <table>"`), `otel.kind` (`client`); on failure `error.type` and `otel.status_code` = `ERROR` |
//! | `diesel_occ.retry` | INFO | call of a retry helper | `diesel_occ.retry.attempts` when it ends, `otel.name` (`diesel_occ retry`); on failure `error.type` and `otel.status_code` = `ERROR` |
//! | `occ.attempt` | DEBUG | attempt of a retry helper, inside its `diesel_occ.retry` | `attempt` (from 1), `escalated` |
//!
//! - `db.system.name` is `postgresql`, `mysql`, `sqlite`, and `other_sql` for a backend
//!   diesel-occ has no SQL for: the client's name for the server, as OpenTelemetry
//!   defines the attribute ("as identified by the client instrumentation"; a
//!   PostgreSQL client talking to CockroachDB reports `postgresql`). Diesel's one
//!   `Mysql` backend serves MySQL and MariaDB alike, and a connection does not say which
//!   server answers without a query, so a write through it is `mysql` on both. A
//!   deployment on MariaDB that wants `mariadb` in its telemetry renames the value
//!   where it exports (an OpenTelemetry Collector `transform` processor, a Prometheus
//!   relabelling rule), where the whole deployment is known.
//! - `db.collection.name` is the table's SQL name.
//! - `db.operation.name` is the checked write's name as you call it, the one
//!   vocabulary of the spans and the metrics:
//!
//!   | `db.operation.name` | the write |
//!   |---|---|
//!   | `save_checked` | [`CheckedDsl::save_checked`](crate::CheckedDsl::save_checked), and a tracked entity's |
//!   | `save_checked_where` | [`CheckedDsl::save_checked_where`](crate::CheckedDsl::save_checked_where) |
//!   | `delete_checked` | [`EntityDsl::delete_checked`](crate::EntityDsl::delete_checked), and a tracked entity's |
//!   | `update_by_key` | [`VersionColumnDsl::update_by_key`](crate::VersionColumnDsl::update_by_key) |
//!   | `delete_by_key` | [`VersionColumnDsl::delete_by_key`](crate::VersionColumnDsl::delete_by_key) |
//!   | `force_increment` | [`VersionColumnDsl::force_increment`](crate::VersionColumnDsl::force_increment) |
//!   | `soft_delete_checked` | [`VersionColumnDsl::soft_delete_checked`](crate::VersionColumnDsl::soft_delete_checked) |
//!   | `insert_checked` | [`InsertDsl::insert_checked`](crate::InsertDsl::insert_checked) |
//!   | `insert_checked_from` | [`InsertDsl::insert_checked_from`](crate::InsertDsl::insert_checked_from) |
//!   | `upsert_checked` | [`InsertDsl::upsert_checked`](crate::InsertDsl::upsert_checked) |
//!   | `save_all_checked` | [`BatchDsl::save_all_checked`](crate::BatchDsl::save_all_checked): one span for the whole batch |
//!   | `save_merging` | [`TrackedDsl::save_merging`](crate::TrackedDsl::save_merging): its saves are `save_checked` spans inside it |
//!
//!   Not the SQL verb: `save_checked` and `soft_delete_checked` are both an `UPDATE`,
//!   and what a trace reader needs is which of them ran. OpenTelemetry asks for the
//!   name the application gives an operation where it has one; these names are few,
//!   so they are fit for aggregation.
//! - `error.type` is `conflict` (a [`ConcurrencyConflict`] or a batch's
//!   [`BatchConflict`](crate::BatchConflict)), `not_found`, `invalid_token`,
//!   `key_not_unique`, `database`, `pool`, `retries_exhausted`, `schema` or
//!   `outcome_unknown`: one per [`Error`] variant.
//! - A successful span leaves the status unset, as OpenTelemetry asks of client spans.
//!
//! **Why these levels.** A checked write is hot: its span is DEBUG, so that an
//! application logging at INFO (the usual default) pays for it only the check that the
//! level is off, one atomic load, and no allocation. A retry helper's call is one per
//! unit of work (a request, a job) and is the span an operator wants by default, with
//! the number of attempts it took: INFO. Turn the write spans on for diesel-occ alone
//! with a target filter (`diesel_occ=debug`).
//!
//! # Events
//!
//! | event | level | fields |
//! |---|---|---|
//! | `occ write applied` | DEBUG | `db.collection.name`, `diesel_occ.operation`, `diesel_occ.key` |
//! | `occ conflict` | DEBUG | `db.collection.name`, `diesel_occ.operation`, `diesel_occ.key`, `error.type` (`conflict`), `diesel_occ.conflict.state` (`stale`, `deleted` or `unmatched`), `diesel_occ.token.expected`, `diesel_occ.token.current` (when the row still exists) |
//! | `occ retry` | DEBUG | `db.collection.name` and `diesel_occ.key` (of the conflict, when it was one), `diesel_occ.attempt`, `diesel_occ.outcome`, `diesel_occ.backoff_ms`, `diesel_occ.escalate` |
//! | `occ retry succeeded` | DEBUG | `diesel_occ.retry.attempts` |
//! | `occ hot row locked` | DEBUG | `db.collection.name`, `diesel_occ.key` (an attempt locks a hot row it reads) |
//! | `occ retries exhausted` | WARN | `db.collection.name`, `diesel_occ.key`, `diesel_occ.retry.attempts`, `diesel_occ.outcome`, `diesel_occ.deadline_reached` |
//!
//! `diesel_occ.operation` is the statement's kind as a conflict names it
//! ([`Operation`]: `update`, `delete`, `client_token`, ...), a detail of the conflict
//! inside the write's span, whose `db.operation.name` names the method. Tokens are recorded as they
//! are: a version number, a UUID or a timestamp says nothing about anyone.
//!
//! # Key values
//!
//! **Key values are personal data more often than not** (a user id, an e-mail address
//! as a key), so `diesel_occ.key` is left out unless the subscriber enables the target
//! [`KEY_VALUES_TARGET`] (`diesel_occ::key_values`) at TRACE, the way sqlx puts its
//! statements and tower-http its request details on targets of their own:
//!
//! ```text
//! RUST_LOG=info,diesel_occ=debug                               # events without keys
//! RUST_LOG=info,diesel_occ=debug,diesel_occ::key_values=trace  # events with keys
//! ```
//!
//! Each event asks the subscriber in scope, as it is recorded, whether that target is
//! enabled (`tracing::enabled!`), so the decision follows the application's filter,
//! can differ between threads with scoped subscribers, and changes at run time with a
//! reloadable filter. `diesel_occ=debug` does not turn it on, since the keys sit at
//! TRACE; a filter that lets every TRACE event through (`RUST_LOG=trace`) does, as it
//! lets through every other library's most detailed output. No event is emitted on
//! that target: it only carries the decision, for the subscriber as a whole, so with
//! per-layer filters one layer that enables it puts the keys in the events every layer
//! receives.
//!
//! # Metrics
//!
//! | name | kind | unit | labels | counts |
//! |---|---|---|---|---|
//! | [`OPERATION_DURATION`] (`db.client.operation.duration`) | histogram | `s` | `db.system.name`, `db.collection.name`, `db.operation.name`; `error.type` on failure | seconds each checked write took: one value per `diesel_occ.write` span, with its attributes |
//! | [`CONFLICTS`] | counter | | `db.system.name`, `db.collection.name`, `db.operation.name` | every [`ConcurrencyConflict`] a checked write or `find_checked` returns, each entity's in a batch |
//! | [`RETRIES`] | counter | | `db.collection.name` | every retry a helper schedules |
//! | [`RETRIES_EXHAUSTED`] | counter | | `db.collection.name` | every time a helper gives up |
//! | [`HOT_ROW_LOCKS`] | counter | | `db.collection.name` | every read of a hot row that locked it |
//! | [`ATTEMPTS`] | histogram | count | `outcome` | attempts per call of a retry helper |
//! | [`RETRY_DURATION`] | histogram | `s` | `outcome` | seconds a call of a retry helper took, from its start to its result |
//!
//! The labels are the spans' attributes, under the same names and with the same
//! values: a dashboard groups the duration of writes and their conflicts by the
//! `db.operation.name` a trace shows. `db.operation.name` of a conflict is the method
//! that returned it (`find_checked` for a client token found stale on reading); a
//! `save_merging` counts no conflict of its own, its `save_checked` spans do.
//! `db.collection.name` of a retry is the table the conflict or error names (a
//! batch's: that of its entities), `unknown` for an error that names none (a
//! deadlock). `outcome` is `success`, `exhausted` (the helper gave up) or `error` (an
//! error it does not retry).
//!
//! The names carry no unit suffix: each exporter adds its own. With
//! `metrics-exporter-prometheus` the dots become underscores (`diesel_occ_conflicts`,
//! and `diesel_occ_attempts_bucket` for a histogram given buckets); an OpenTelemetry
//! pipeline exported to Prometheus adds `_total` to counters and the unit to
//! histograms (`diesel_occ_conflicts_total`, `diesel_occ_retry_duration_seconds`). Call
//! `describe_metrics` once after installing the recorder to give them descriptions
//! and units.

use std::time::{Duration, Instant};

use tracing::Span;
use tracing::field::{DebugValue, DisplayValue, Empty};

use crate::dialect::Dialect;
use crate::error::{ConcurrencyConflict, ConflictState, EntityKey, Error, Operation};

/// Histogram: seconds each checked write took, labelled as its span is
/// (`db.system.name`, `db.collection.name`, `db.operation.name`, and `error.type`
/// when it failed): OpenTelemetry's database client metric.
pub const OPERATION_DURATION: &str = "db.client.operation.duration";
/// Counter: concurrency conflicts, labelled `db.system.name`, `db.collection.name`
/// and `db.operation.name` (the checked write's or `find_checked`'s name).
pub const CONFLICTS: &str = "diesel_occ.conflicts";
/// Counter: retries scheduled by the retry helpers, labelled `db.collection.name`.
pub const RETRIES: &str = "diesel_occ.retries";
/// Counter: retry helpers that gave up, labelled `db.collection.name`.
pub const RETRIES_EXHAUSTED: &str = "diesel_occ.retries_exhausted";
/// Counter: reads of a hot row that locked it, labelled `db.collection.name`.
pub const HOT_ROW_LOCKS: &str = "diesel_occ.hot_row_locks";
/// Histogram: attempts per call of a retry helper, labelled `outcome`.
pub const ATTEMPTS: &str = "diesel_occ.attempts";
/// Histogram: seconds a call of a retry helper took, labelled `outcome`.
pub const RETRY_DURATION: &str = "diesel_occ.retry.duration";

/// The `tracing` target whose TRACE level decides whether the events name their rows
/// by key value (`diesel_occ.key`, such as `(id=42)`); see [Key values](self#key-values).
/// Off unless the subscriber's filter enables it.
///
/// ```
/// // With tracing-subscriber: `Targets::new().with_target(KEY_VALUES_TARGET, Level::TRACE)`,
/// // or `diesel_occ::key_values=trace` in an `EnvFilter`.
/// assert_eq!(diesel_occ::observe::KEY_VALUES_TARGET, "diesel_occ::key_values");
/// ```
pub const KEY_VALUES_TARGET: &str = "diesel_occ::key_values";

/// The `db.collection.name` label for an error that names no table.
const UNKNOWN_TABLE: &str = "unknown";

/// The attribute names the spans and the metrics share (OpenTelemetry's).
#[cfg(feature = "metrics")]
const SYSTEM: &str = "db.system.name";
#[cfg(feature = "metrics")]
const COLLECTION: &str = "db.collection.name";
#[cfg(feature = "metrics")]
const OPERATION: &str = "db.operation.name";
#[cfg(feature = "metrics")]
const ERROR_TYPE: &str = "error.type";

/// Whether the subscriber in scope wants key values: [`KEY_VALUES_TARGET`] enabled at
/// TRACE.
fn key_values_enabled() -> bool {
    tracing::enabled!(target: KEY_VALUES_TARGET, tracing::Level::TRACE)
}

/// A key for the `diesel_occ.key` field: `None` (no field) unless key values are on.
fn key_field<K: std::fmt::Display + ?Sized>(key: &K) -> Option<DisplayValue<&K>> {
    key_values_enabled().then(|| tracing::field::display(key))
}

/// [`key_field`] for a key known only by its `Debug` form.
fn debug_key_field(key: &dyn std::fmt::Debug) -> Option<DebugValue<&dyn std::fmt::Debug>> {
    key_values_enabled().then(|| tracing::field::debug(key))
}

/// Registers the descriptions and units of the counters and histograms with the
/// installed `metrics` recorder. Optional: the metrics work without it.
///
/// ```
/// // After installing a recorder (an exporter's builder does):
/// diesel_occ::observe::describe_metrics();
/// ```
#[cfg(feature = "metrics")]
#[cfg_attr(docsrs, doc(cfg(feature = "metrics")))]
pub fn describe_metrics() {
    metrics::describe_histogram!(
        OPERATION_DURATION,
        metrics::Unit::Seconds,
        "Duration of a checked write, from its first statement to its result"
    );
    metrics::describe_counter!(
        CONFLICTS,
        metrics::Unit::Count,
        "Optimistic concurrency conflicts: a checked write or client token met a changed or deleted row"
    );
    metrics::describe_counter!(
        RETRIES,
        metrics::Unit::Count,
        "Attempts retried after a conflict or a transient database error"
    );
    metrics::describe_counter!(
        RETRIES_EXHAUSTED,
        metrics::Unit::Count,
        "Retry loops that gave up"
    );
    metrics::describe_counter!(
        HOT_ROW_LOCKS,
        metrics::Unit::Count,
        "Retry attempts that locked a row because it met a conflict recently"
    );
    metrics::describe_histogram!(
        ATTEMPTS,
        metrics::Unit::Count,
        "Attempts a retry helper ran for one call"
    );
    metrics::describe_histogram!(
        RETRY_DURATION,
        metrics::Unit::Seconds,
        "Time a retry helper took for one call, backoff included"
    );
}

/// OpenTelemetry's `db.system.name` for a Diesel backend type. By the type's path,
/// which needs no `'static` bound (the checked writes have none on the backend).
fn system_name<B: ?Sized>() -> &'static str {
    match Dialect::by_name(std::any::type_name::<B>()) {
        Some(Dialect::Postgres) => "postgresql",
        Some(Dialect::Mysql) => "mysql",
        Some(Dialect::Sqlite) => "sqlite",
        None => "other_sql",
    }
}

/// One checked write's span, and the attributes its metrics carry.
#[derive(Debug)]
#[cfg_attr(not(feature = "metrics"), allow(dead_code))]
pub(crate) struct WriteSpan {
    span: Span,
    system: &'static str,
    table: &'static str,
    operation: &'static str,
    /// Whether the write's own conflicts are counted here: not for a write made of
    /// other checked writes (`save_merging`), whose spans count them.
    counts_conflicts: bool,
}

impl WriteSpan {
    /// This span is around other checked writes, which count their own conflicts.
    pub(crate) fn around_writes(mut self) -> Self {
        self.counts_conflicts = false;
        self
    }

    /// Marks the span failed when `result` is an error, and records the metrics of the
    /// write that took `elapsed`.
    #[cfg_attr(not(feature = "metrics"), allow(unused_variables))]
    fn ended<T>(&self, elapsed: Option<Duration>, result: &Result<T, Error>) {
        failed(&self.span, result);
        #[cfg(feature = "metrics")]
        if let Some(elapsed) = elapsed {
            self.record(elapsed.as_secs_f64(), result.as_ref().err());
        }
    }

    /// [`OPERATION_DURATION`] and, for a conflict, [`CONFLICTS`], with the span's
    /// attributes.
    #[cfg(feature = "metrics")]
    fn record(&self, seconds: f64, error: Option<&Error>) {
        let (system, table, operation) = (self.system, self.table, self.operation);
        match error {
            None => metrics::histogram!(
                OPERATION_DURATION,
                SYSTEM => system,
                COLLECTION => table,
                OPERATION => operation,
            )
            .record(seconds),
            Some(error) => metrics::histogram!(
                OPERATION_DURATION,
                SYSTEM => system,
                COLLECTION => table,
                OPERATION => operation,
                ERROR_TYPE => error_type(error),
            )
            .record(seconds),
        }
        let conflicts = match error {
            _ if !self.counts_conflicts => 0,
            Some(Error::Conflict(_)) => 1,
            Some(Error::Batch(batch)) => batch.conflicts().len(),
            _ => 0,
        };
        if conflicts > 0 {
            metrics::counter!(
                CONFLICTS,
                SYSTEM => system,
                COLLECTION => table,
                OPERATION => operation,
            )
            .increment(u64::try_from(conflicts).unwrap_or(u64::MAX));
        }
    }
}

/// The clock a write's duration is measured with: none without the `metrics` feature.
fn started() -> Option<Instant> {
    cfg!(feature = "metrics").then(Instant::now)
}

/// The span of one checked write named `operation` (its method's name) on `table`,
/// through a connection of backend `B`. The field values are only computed when the
/// span is enabled.
pub(crate) fn write_span<B: ?Sized>(table: &'static str, operation: &'static str) -> WriteSpan {
    let system = system_name::<B>();
    let span = tracing::debug_span!(
        target: "diesel_occ",
        "diesel_occ.write",
        "otel.name" = %format_args!("{operation} {table}"),
        "otel.kind" = "client",
        "otel.status_code" = Empty,
        "db.system.name" = system,
        "db.collection.name" = table,
        "db.operation.name" = operation,
        "error.type" = Empty,
    );
    WriteSpan {
        span,
        system,
        table,
        operation,
        counts_conflicts: true,
    }
}

/// Runs a blocking checked write in its span and records how it ended.
pub(crate) fn in_write_span<T>(
    write: WriteSpan,
    run: impl FnOnce() -> Result<T, Error>,
) -> Result<T, Error> {
    let start = started();
    let result = write.span.in_scope(run);
    write.ended(start.map(|start| start.elapsed()), &result);
    result
}

/// [`in_write_span`] for an async checked write: the future runs in the span.
#[cfg(feature = "async")]
pub(crate) async fn in_write_span_async<T>(
    write: WriteSpan,
    run: impl std::future::Future<Output = Result<T, Error>>,
) -> Result<T, Error> {
    let start = started();
    let result = tracing::Instrument::instrument(run, write.span.clone()).await;
    write.ended(start.map(|start| start.elapsed()), &result);
    result
}

/// A checked read (`find_checked`, through backend `B`) that found a client's token
/// stale: counted in [`CONFLICTS`] under its method's name, as a write's conflict is.
#[cfg_attr(not(feature = "metrics"), allow(unused_variables))]
pub(crate) fn read_checked<B: ?Sized, T>(
    table: &'static str,
    operation: &'static str,
    result: &Result<T, Error>,
) {
    #[cfg(feature = "metrics")]
    if let Err(Error::Conflict(_)) = result {
        metrics::counter!(
            CONFLICTS,
            SYSTEM => system_name::<B>(),
            COLLECTION => table,
            OPERATION => operation,
        )
        .increment(1);
    }
}

/// Marks `span` failed, with the error's type, when `result` is an error.
fn failed<T>(span: &Span, result: &Result<T, Error>) {
    if let Err(error) = result {
        span.record("otel.status_code", "ERROR");
        span.record("error.type", error_type(error));
    }
}

/// OpenTelemetry's `error.type`: one low-cardinality name per kind of error.
fn error_type(error: &Error) -> &'static str {
    match error {
        Error::Conflict(_) | Error::Batch(_) => "conflict",
        Error::NotFound(_) => "not_found",
        Error::InvalidToken(_) => "invalid_token",
        Error::KeyNotUnique { .. } => "key_not_unique",
        Error::UniqueViolation(_) => "unique_violation",
        Error::Database(_) => "database",
        Error::Pool(_) => "pool",
        Error::RetriesExhausted(_) => "retries_exhausted",
        Error::Schema(_) => "schema",
        #[cfg(feature = "combine")]
        Error::OutcomeUnknown => "outcome_unknown",
    }
}

/// The span of one call of a retry helper; its attempts' spans are inside it.
pub(crate) fn retry_span() -> Span {
    tracing::info_span!(
        target: "diesel_occ",
        "diesel_occ.retry",
        "otel.name" = "diesel_occ retry",
        "otel.status_code" = Empty,
        "diesel_occ.retry.attempts" = Empty,
        "error.type" = Empty,
    )
}

/// Records on a retry helper's span how many attempts it ran and how it ended.
pub(crate) fn retry_ended<T>(span: &Span, attempts: u32, result: &Result<T, Error>) {
    span.record("diesel_occ.retry.attempts", attempts);
    failed(span, result);
}

/// An attempt locks a row that conflicted recently as it reads it.
pub(crate) fn hot_row_locked(table: &'static str, key: &dyn std::fmt::Debug) {
    tracing::debug!(
        target: "diesel_occ",
        {
            "db.collection.name" = table,
            "diesel_occ.key" = debug_key_field(key),
        },
        "occ hot row locked"
    );
    #[cfg(feature = "metrics")]
    metrics::counter!(HOT_ROW_LOCKS, COLLECTION => table).increment(1);
}

/// A checked write matched its row.
pub(crate) fn written(table: &'static str, key: &dyn std::fmt::Debug, operation: Operation) {
    tracing::debug!(
        target: "diesel_occ",
        {
            "db.collection.name" = table,
            "diesel_occ.operation" = operation_label(operation),
            "diesel_occ.key" = debug_key_field(key),
        },
        "occ write applied"
    );
}

/// A conflict was classified.
pub(crate) fn conflict(conflict: &ConcurrencyConflict) {
    let (state, current) = match conflict.state() {
        ConflictState::Stale { current } => ("stale", Some(current)),
        ConflictState::Deleted => ("deleted", None),
        ConflictState::Unmatched => ("unmatched", Some(conflict.expected_value())),
    };
    tracing::debug!(
        target: "diesel_occ",
        {
            "db.collection.name" = conflict.table(),
            "diesel_occ.operation" = operation_label(conflict.operation()),
            "diesel_occ.key" = key_field(conflict.key()),
            "error.type" = "conflict",
            "diesel_occ.conflict.state" = state,
            "diesel_occ.token.expected" = %conflict.expected_value(),
            "diesel_occ.token.current" = current.map(tracing::field::display),
        },
        "occ conflict"
    );
}

/// The label of an [`Operation`] (its `Display` form, as a `&'static str`).
fn operation_label(operation: Operation) -> &'static str {
    match operation {
        Operation::Update => "update",
        Operation::Delete => "delete",
        Operation::ClientToken => "client_token",
        Operation::ForceIncrement => "force_increment",
        Operation::SoftDelete => "soft_delete",
        Operation::Insert => "insert",
        Operation::Upsert => "upsert",
    }
}

/// The span one retry attempt runs in: its number, from 1, and whether it is escalated.
pub(crate) fn attempt_span(number: u32, escalated: bool) -> Span {
    tracing::debug_span!(
        target: "diesel_occ",
        "occ.attempt",
        attempt = number,
        escalated
    )
}

/// What an error says for the table, key and outcome fields: a batch's conflicts
/// name their table (all of a batch's entities are of one type) and the first one's
/// key; an error that names no row, no table.
fn describe(error: &Error) -> (&'static str, Option<&EntityKey>, &'static str) {
    let conflict = error.as_conflict().or_else(|| {
        error
            .as_batch_conflict()
            .and_then(|batch| batch.conflicts().first())
            .map(|(_, conflict)| conflict)
    });
    match conflict {
        Some(conflict) => (
            conflict.table(),
            Some(conflict.key()),
            if conflict.is_deleted() {
                "deleted"
            } else {
                "stale"
            },
        ),
        None => match error {
            Error::KeyNotUnique { table, key, .. } => (table, Some(key), "key_not_unique"),
            Error::NotFound(not_found) => (not_found.table, Some(&not_found.key), "not_found"),
            error => (
                UNKNOWN_TABLE,
                None,
                error
                    .transient_kind()
                    .map_or("error", crate::TransientKind::description),
            ),
        },
    }
}

/// A retry helper will run another attempt after `backoff`.
pub(crate) fn retrying(error: &Error, attempt: u32, backoff: Duration, escalate: bool) {
    let (table, key, outcome) = describe(error);
    tracing::debug!(
        target: "diesel_occ",
        {
            "db.collection.name" = table,
            "diesel_occ.key" = key.and_then(key_field),
            "diesel_occ.attempt" = attempt,
            "diesel_occ.outcome" = outcome,
            "diesel_occ.backoff_ms" = u64::try_from(backoff.as_millis()).unwrap_or(u64::MAX),
            "diesel_occ.escalate" = escalate,
        },
        "occ retry"
    );
    #[cfg(feature = "metrics")]
    metrics::counter!(RETRIES, COLLECTION => table).increment(1);
}

/// A retry helper's attempt succeeded.
pub(crate) fn succeeded(attempts: u32) {
    if attempts > 1 {
        tracing::debug!(
            target: "diesel_occ",
            {
                "diesel_occ.retry.attempts" = attempts,
            },
            "occ retry succeeded"
        );
    }
}

/// A retry helper gave up.
pub(crate) fn exhausted(error: &Error, attempts: u32, deadline_reached: bool) {
    let (table, key, outcome) = describe(error);
    tracing::warn!(
        target: "diesel_occ",
        {
            "db.collection.name" = table,
            "diesel_occ.key" = key.and_then(key_field),
            "diesel_occ.retry.attempts" = attempts,
            "diesel_occ.outcome" = outcome,
            "diesel_occ.deadline_reached" = deadline_reached,
        },
        "occ retries exhausted"
    );
    #[cfg(feature = "metrics")]
    metrics::counter!(RETRIES_EXHAUSTED, COLLECTION => table).increment(1);
}

/// A retry helper's call ended after `attempts` attempts and `elapsed`: the
/// histograms of attempts and time.
#[cfg_attr(not(feature = "metrics"), allow(unused_variables))]
pub(crate) fn retry_finished<T>(attempts: u32, elapsed: Duration, result: &Result<T, Error>) {
    #[cfg(feature = "metrics")]
    {
        let outcome = match result {
            Ok(_) => "success",
            Err(Error::RetriesExhausted(_)) => "exhausted",
            Err(_) => "error",
        };
        metrics::histogram!(ATTEMPTS, "outcome" => outcome).record(f64::from(attempts));
        metrics::histogram!(RETRY_DURATION, "outcome" => outcome).record(elapsed.as_secs_f64());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_backend_has_its_opentelemetry_system_name() {
        assert_eq!(system_name::<diesel::pg::Pg>(), "postgresql");
        assert_eq!(system_name::<diesel::mysql::Mysql>(), "mysql");
        assert_eq!(system_name::<diesel::sqlite::Sqlite>(), "sqlite");
        assert_eq!(system_name::<i32>(), "other_sql");
    }

    /// A subscriber that enables every callsite but the key-values target, which it
    /// enables or not, and keeps nothing.
    struct KeysFilter(bool);

    impl tracing::Subscriber for KeysFilter {
        fn register_callsite(
            &self,
            _: &'static tracing::Metadata<'static>,
        ) -> tracing::subscriber::Interest {
            // Asked again at every call, whatever another test's subscriber said.
            tracing::subscriber::Interest::sometimes()
        }

        fn enabled(&self, metadata: &tracing::Metadata<'_>) -> bool {
            metadata.target() != KEY_VALUES_TARGET || self.0
        }

        fn new_span(&self, _: &tracing::span::Attributes<'_>) -> tracing::span::Id {
            tracing::span::Id::from_u64(1)
        }

        fn record(&self, _: &tracing::span::Id, _: &tracing::span::Record<'_>) {}

        fn record_follows_from(&self, _: &tracing::span::Id, _: &tracing::span::Id) {}

        fn event(&self, _: &tracing::Event<'_>) {}

        fn enter(&self, _: &tracing::span::Id) {}

        fn exit(&self, _: &tracing::span::Id) {}
    }

    #[test]
    fn key_values_are_recorded_when_the_subscriber_enables_their_target() {
        let key = EntityKey::new(&["id"], vec!["42".into()]);
        let field = || key_field(&key).map(|value| format!("{value:?}"));
        tracing::subscriber::with_default(KeysFilter(false), || assert_eq!(field(), None));
        tracing::subscriber::with_default(KeysFilter(true), || {
            assert_eq!(field().as_deref(), Some("(id=42)"));
        });
        // Each thread's subscriber decides for that thread alone.
        tracing::subscriber::with_default(KeysFilter(true), || {
            std::thread::scope(|scope| {
                scope.spawn(|| {
                    tracing::subscriber::with_default(KeysFilter(false), || {
                        assert_eq!(field(), None);
                    });
                });
            });
            assert_eq!(field().as_deref(), Some("(id=42)"));
        });
    }

    #[test]
    fn a_batch_conflict_names_its_table() {
        let conflict = ConcurrencyConflict::new(
            "stock",
            EntityKey::new(&["id"], vec!["2".into()]),
            Operation::Update,
            crate::VersionToken::to_value(&1_i32),
            ConflictState::Deleted,
        );
        let batch = crate::BatchConflict::new(2, vec![(1, conflict)]);
        let error = Error::Batch(batch);
        let (table, key, outcome) = describe(&error);
        assert_eq!((table, outcome), ("stock", "deleted"));
        assert_eq!(key.map(ToString::to_string).as_deref(), Some("(id=2)"));
    }
}
