//! What diesel-occ reports, in both flavours. A test's capture lasts while it holds the
//! guard; the async `#[tokio::test]` runs on a current-thread runtime, so every poll
//! sees it.

flavour_prelude!();

use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

use diesel::ExpressionMethods;
use diesel_occ::observe::CONFLICTS;
use diesel_occ::retry::{Attempt, RetryPolicy};
use diesel_occ::{Error, SaveOutcome, Tracked, Upserted};
use diesel_occ_tests::expect_conflict;
use opentelemetry::trace::{SpanKind, Status};
use tracing_subscriber::filter::LevelFilter;

use super::counters::{Counter, exhausted, quick};
use super::schema;
use crate::observe::{
    Captured, CapturedEvent, Exported, ExportedSpan, KeyValues, Totals, system_name,
};

/// Rows `ids` of `counters`, at value 0.
#[flavour]
async fn seed(db: &TestDb<Conn>, ids: std::ops::RangeInclusive<i32>) {
    for id in ids {
        let insert = format!("INSERT INTO counters (id, value, version) VALUES ({id}, 0, 1)");
        raw_sql(db, &insert).await;
    }
}

#[flavour]
async fn find(conn: &mut Conn, id: i32) -> Counter {
    Counter::find(conn, id).await.expect("counter row")
}

/// Another writer's checked increment of row `id`, on a connection of its own.
#[flavour]
async fn bump(db: &TestDb<Conn>, id: i32) {
    let mut conn = db.conn().await;
    let mut row = find(&mut conn, id).await;
    row.value += 1;
    row.save_checked(&mut conn).await.expect("the other writer");
}

/// Where the retry loops take their connections: a new one per attempt.
#[flavour(blocking)]
fn source(db: &TestDb<Conn>) -> impl Fn() -> diesel::ConnectionResult<Conn> + '_ {
    || Conn::establish(db.url())
}

/// Where the retry loops take their connections: a pool, opened before the capture.
#[flavour(asynchronous)]
async fn source(db: &TestDb<Conn>) -> diesel_async::pooled_connection::deadpool::Pool<Conn> {
    crate::pools::warm_pool(db, 2).await
}

/// Increments row 1 through `retry`, another writer committing inside each attempt
/// `overtaken` picks, between its read and its save; returns the value saved.
#[flavour]
async fn overtaken_increment<S: Source<Connection = Conn>>(
    db: &TestDb<Conn>,
    source: &S,
    policy: &RetryPolicy,
    overtaken: impl Fn(&Attempt) -> bool + Sync,
) -> Result<i32, Error> {
    retry(source, policy, async |conn, attempt| {
        let mut row: Counter = attempt.find(conn, 1).await?;
        if overtaken(&attempt) {
            bump(db, 1).await;
        }
        row.value += 1;
        row.save_checked(conn).await?;
        Ok(row.value)
    })
    .await
}

/// Every other checked write once, after a test's conflicting save: by key on row 2,
/// the entity's own on row 3, a batch of row 4 and the stale `mine` (a conflict), and
/// `save_merging` of row 4. Returns row 4, tracked.
#[flavour]
async fn write_every_way(conn: &mut Conn, mine: &Counter) -> Tracked<Counter> {
    use schema::counters::{label, value};
    let token = Counter::update_by_key(conn, 2, &1, value.eq(5)).await;
    let deleted = Counter::delete_by_key(conn, 2, &token.expect("update_by_key")).await;
    deleted.expect("delete_by_key");

    let mut third = find(conn, 3).await;
    let saved = third.save_checked_where(conn, value.ge(0)).await;
    saved.expect("save_checked_where");
    third.force_increment(conn).await.expect("force_increment");
    let soft_deleted = third.soft_delete_checked(conn, label.eq("gone")).await;
    soft_deleted.expect("soft_delete_checked");
    third.delete_checked(conn).await.expect("delete_checked");

    // The stale `mine` makes the batch conflict.
    let mut batch = [find(conn, 4).await, mine.clone()];
    let error = batch.save_all_checked(conn).await.unwrap_err();
    assert!(error.as_batch_conflict().is_some(), "{error:?}");

    let mut tracked = Tracked::new(find(conn, 4).await);
    tracked.edit().value = 7;
    let outcome = tracked.save_merging(conn).await.expect("save_merging");
    assert!(matches!(outcome, SaveOutcome::Saved), "{outcome:?}");
    tracked
}

/// The checked writes [`write_every_way`] makes that succeed, each once.
const EVERY_WAY: [&str; 6] = [
    "update_by_key",
    "delete_by_key",
    "save_checked_where",
    "force_increment",
    "soft_delete_checked",
    "delete_checked",
];

/// The key of the conflicts counter for `operation` on `counters`.
fn conflicts_key(system: &str, operation: &str) -> String {
    let labels = "db.collection.name=counters,db.operation.name";
    format!("{CONFLICTS}{{db.system.name={system},{labels}={operation}}}")
}

/// The key of histogram `name` for retry loops that ended with `outcome`.
fn with_outcome(name: &str, outcome: &str) -> String {
    format!("{name}{{outcome={outcome}}}")
}

/// The key of metric `name` under table `counters` alone.
fn on_counters(name: &str) -> String {
    format!("{name}{{db.collection.name=counters}}")
}

/// The one exported span with this name.
fn one(spans: &[ExportedSpan], name: &str) -> ExportedSpan {
    let found: Vec<_> = spans.iter().filter(|s| s.name == name).collect();
    assert_eq!(found.len(), 1, "one span {name} in {spans:#?}");
    found[0].clone()
}

/// A checked write's span as OpenTelemetry's database client conventions have it.
fn assert_client_span(span: &ExportedSpan, system: &str, operation: &str) {
    assert_eq!(span.kind, SpanKind::Client, "{span:#?}");
    for (attribute, value) in [
        ("db.system.name", system),
        ("db.collection.name", "counters"),
        ("db.operation.name", operation),
    ] {
        assert_eq!(span.attribute(attribute), value, "{attribute} of {span:#?}");
    }
}

fn assert_succeeded(span: &ExportedSpan) {
    assert_eq!(span.status, Status::Unset, "{span:#?}");
    assert!(!span.attributes.contains_key("error.type"), "{span:#?}");
}

fn assert_conflicted(span: &ExportedSpan) {
    assert!(span.failed(), "{span:#?}");
    assert_eq!(span.attribute("error.type"), "conflict");
}

/// Each checked write is a client span `<operation> counters` with backend, table and
/// operation; a conflict fails it with `error.type = conflict`, its event carrying the
/// tokens but no key value while those are off.
#[flavour(test)]
async fn every_checked_write_is_a_client_span_with_opentelemetry_attributes() {
    let db = db!();
    let system = system_name(Conn::BACKEND);
    let _keys = KeyValues::set(false);
    let mut conn = db.conn().await;
    seed(&db, 1..=4).await;
    let exported = Exported::new();
    {
        let _installed = exported.install(LevelFilter::TRACE);
        let mut mine = find(&mut conn, 1).await;
        let mut theirs = find(&mut conn, 1).await;
        theirs.value = 1;
        theirs.save_checked(&mut conn).await.expect("their save");
        mine.value = 2;
        expect_conflict(mine.save_checked(&mut conn).await);
        write_every_way(&mut conn, &mine).await;
    }

    let spans = exported.spans();
    let saves = exported.named("save_checked counters");
    // Theirs, mine (the conflict), and the tracked save inside save_merging.
    assert_eq!(saves.len(), 3, "{spans:#?}");
    for save in &saves {
        assert_client_span(save, system, "save_checked");
    }
    assert_succeeded(&saves[0]);
    let conflicted = &saves[1];
    assert_conflicted(conflicted);
    let events = conflicted.events_named("occ conflict");
    assert_eq!(events.len(), 1, "{conflicted:#?}");
    for (attribute, value) in [
        ("db.collection.name", "counters"),
        ("diesel_occ.operation", "update"),
        ("error.type", "conflict"),
        ("diesel_occ.conflict.state", "stale"),
        ("diesel_occ.token.expected", "1"),
        ("diesel_occ.token.current", "2"),
    ] {
        let found = events[0].get(attribute).map(String::as_str);
        assert_eq!(found, Some(value), "{attribute} of {conflicted:#?}");
    }
    let key_shown = events[0].contains_key("diesel_occ.key");
    assert!(!key_shown, "key values are off: {conflicted:#?}");

    for operation in EVERY_WAY {
        let span = one(&spans, &format!("{operation} counters"));
        assert_client_span(&span, system, operation);
        assert_succeeded(&span);
    }

    let batch = one(&spans, "save_all_checked counters");
    assert_client_span(&batch, system, "save_all_checked");
    assert_conflicted(&batch);
    let events = batch.events_named("occ conflict");
    assert_eq!(events.len(), 1, "the stale entity's conflict: {batch:#?}");
    assert_eq!(events[0]["diesel_occ.token.current"], "2");

    let merging = one(&spans, "save_merging counters");
    assert_client_span(&merging, system, "save_merging");
    assert_succeeded(&merging);
    assert_succeeded(&saves[2]);
    assert_eq!(saves[2].parent, merging.id, "inside save_merging");
}

/// With key values turned on, the conflict event names its row.
#[flavour(test)]
async fn the_conflict_event_names_the_key_only_when_key_values_are_on() {
    let db = db!();
    let _keys = KeyValues::set(true);
    let mut conn = db.conn().await;
    seed(&db, 1..=1).await;
    let exported = Exported::new();
    {
        let _installed = exported.install(LevelFilter::TRACE);
        let mut mine = find(&mut conn, 1).await;
        bump(&db, 1).await;
        mine.value = 9;
        expect_conflict(mine.save_checked(&mut conn).await);
    }
    let mut conflicted = exported.named("save_checked counters");
    conflicted.retain(ExportedSpan::failed);
    assert_eq!(conflicted.len(), 1, "{:#?}", exported.spans());
    let events = conflicted[0].events_named("occ conflict");
    let key = events[0].get("diesel_occ.key").map(String::as_str);
    assert_eq!(key, Some("(id=1)"));
}

/// A retry loop is an INFO span around its attempts' spans, which hold the writes'
/// client spans; it records its attempts, and fails with `retries_exhausted` when it
/// gives up. Another writer forces each conflict between an attempt's read and save.
#[flavour(test)]
async fn a_retry_loop_is_a_span_around_its_attempts_and_their_writes() {
    let db = db!();
    let system = system_name(Conn::BACKEND);
    seed(&db, 1..=1).await;
    let source = source(&db).await;
    let exported = Exported::new();
    {
        let _installed = exported.install(LevelFilter::TRACE);
        let value = overtaken_increment(&db, &source, &quick(), Attempt::is_first).await;
        assert_eq!(value.expect("the second attempt saves"), 2);
    }
    let retry_span = one(&exported.spans(), "diesel_occ retry");
    assert_succeeded(&retry_span);
    assert_eq!(retry_span.attribute("diesel_occ.retry.attempts"), "2");
    let attempts = exported.named("occ.attempt");
    assert_eq!(attempts.len(), 2);
    assert!(attempts.iter().all(|a| a.parent == retry_span.id));
    // The other writer's save runs inside the first attempt too.
    let saves = exported.named("save_checked counters");
    assert_eq!(saves.len(), 3, "theirs, conflict, retry: {saves:#?}");
    for save in &saves {
        assert_client_span(save, system, "save_checked");
    }
    let in_attempt = |save: &ExportedSpan, number: usize| save.parent == attempts[number].id;
    assert!(in_attempt(&saves[0], 0) && in_attempt(&saves[1], 0) && in_attempt(&saves[2], 1));
    assert_succeeded(&saves[0]);
    assert_conflicted(&saves[1]);
    assert_succeeded(&saves[2]);
    let conflict = saves[1].events_named("occ conflict");
    assert_eq!(conflict[0]["diesel_occ.token.expected"], "1");
    assert_eq!(conflict[0]["diesel_occ.token.current"], "2");

    let exported = Exported::new();
    {
        let _installed = exported.install(LevelFilter::TRACE);
        let policy = quick().max_attempts(2);
        let result = overtaken_increment(&db, &source, &policy, |_| true).await;
        assert_eq!(exhausted(result).attempts(), 2);
    }
    let retry_span = one(&exported.spans(), "diesel_occ retry");
    assert!(retry_span.failed(), "{retry_span:#?}");
    assert_eq!(retry_span.attribute("error.type"), "retries_exhausted");
    assert_eq!(retry_span.attribute("diesel_occ.retry.attempts"), "2");
}

/// At INFO, the usual default, the checked writes' DEBUG spans are skipped and only
/// the retry loop's span is exported.
#[flavour(test)]
async fn at_info_only_the_retry_loop_span_is_exported() {
    let (db, mut conn) = db_and_conn!();
    seed(&db, 1..=1).await;
    let source = source(&db).await;
    let exported = Exported::new();
    {
        let _installed = exported.install(LevelFilter::INFO);
        let value = overtaken_increment(&db, &source, &quick(), |_| false).await;
        value.expect("saved");
        let mut row = find(&mut conn, 1).await;
        row.value += 1;
        row.save_checked(&mut conn).await.expect("saved");
    }
    let names: Vec<_> = exported.spans().into_iter().map(|span| span.name).collect();
    assert_eq!(names, ["diesel_occ retry"]);
}

/// Conflicts, retries and their end are DEBUG, INFO and WARN events with the row's
/// table, key and outcome, each conflict inside its attempt's span; and counters and
/// histograms under the table (the conflicts under the backend and method too).
#[flavour(test)]
async fn conflicts_and_retries_are_traced_and_counted() {
    use diesel_occ::observe::{ATTEMPTS, RETRIES, RETRIES_EXHAUSTED};

    let db = db!();
    seed(&db, 1..=1).await;
    let system = system_name(Conn::BACKEND);
    let _keys = KeyValues::set(true);
    let source = source(&db).await;
    let captured = Captured::default();
    let totals = Totals::default();
    let five = Duration::from_millis(5);
    let policy = RetryPolicy::new().max_attempts(2).backoff(five, five);
    {
        let _installed = captured.install(&totals);
        // One conflict, then success on the second attempt.
        let value = overtaken_increment(&db, &source, &policy, Attempt::is_first).await;
        assert_eq!(value.expect("second attempt"), 2);
        // A perpetual conflict: exhausted after two attempts.
        let result = overtaken_increment(&db, &source, &policy, |_| true).await;
        assert_eq!(exhausted(result).attempts(), 2);
    }

    let events = captured.events();
    let conflicts = captured.named("occ conflict");
    assert_eq!(conflicts.len(), 3, "{events:#?}");
    for conflict in &conflicts {
        assert_eq!(conflict.field("db.collection.name"), "counters");
        assert_eq!(conflict.field("diesel_occ.key"), "(id=1)");
        assert_eq!(conflict.field("diesel_occ.operation"), "update");
        assert_eq!(conflict.field("diesel_occ.conflict.state"), "stale");
        assert_eq!(conflict.level, tracing::Level::DEBUG);
    }
    let in_attempt = |c: &CapturedEvent| c.span_field("occ.attempt", "attempt");
    let attempts: Vec<_> = conflicts.iter().map(in_attempt).collect();
    assert_eq!(attempts, ["1", "1", "2"], "each in its attempt's span");
    let retries = captured.named("occ retry");
    assert_eq!(retries.len(), 2, "{events:#?}");
    for retry in &retries {
        assert_eq!(retry.field("db.collection.name"), "counters");
        assert_eq!(retry.field("diesel_occ.key"), "(id=1)");
        assert_eq!(retry.field("diesel_occ.attempt"), "1");
        assert_eq!(retry.field("diesel_occ.outcome"), "stale");
        assert_eq!(retry.field("diesel_occ.escalate"), "false");
        let backoff: u64 = retry.field("diesel_occ.backoff_ms").parse().unwrap();
        assert!(backoff <= 5, "jitter within the 5 ms ceiling: {backoff}");
    }
    let succeeded = captured.named("occ retry succeeded");
    assert_eq!(succeeded.len(), 1);
    assert_eq!(succeeded[0].field("diesel_occ.retry.attempts"), "2");
    let gave_up = captured.named("occ retries exhausted");
    assert_eq!(gave_up.len(), 1);
    assert_eq!(gave_up[0].level, tracing::Level::WARN);
    for (field, value) in [
        ("db.collection.name", "counters"),
        ("diesel_occ.key", "(id=1)"),
        ("diesel_occ.retry.attempts", "2"),
        ("diesel_occ.outcome", "stale"),
        ("diesel_occ.deadline_reached", "false"),
    ] {
        assert_eq!(gave_up[0].field(field), value, "{field}");
    }
    // The writes inside attempts: the other writer's 3, and the winning save.
    let applied = captured.named("occ write applied");
    assert_eq!(applied.len(), 4, "{events:#?}");
    let on_table = |e: &CapturedEvent| e.field("db.collection.name") == "counters";
    assert!(applied.iter().all(on_table), "{applied:#?}");

    let counted = BTreeMap::from([
        (conflicts_key(system, "save_checked"), 3),
        (on_counters(RETRIES_EXHAUSTED), 1),
        (on_counters(RETRIES), 2),
    ]);
    assert_eq!(totals.snapshot(), counted);
    let histograms = totals.histograms();
    for outcome in ["success", "exhausted"] {
        let attempts = histograms.get(&with_outcome(ATTEMPTS, outcome));
        assert_eq!(attempts, Some(&vec![2.0]), "{histograms:?}");
    }
}

/// A batch conflict that a retry helper retries is counted under its table, not
/// `unknown`; the histograms get the attempts and the time of the call.
#[flavour(test)]
async fn a_retried_batch_conflict_is_counted_under_its_table() {
    use diesel_occ::observe::{ATTEMPTS, RETRIES, RETRY_DURATION};

    let db = db!();
    let system = system_name(Conn::BACKEND);
    seed(&db, 1..=2).await;
    let source = source(&db).await;
    let totals = Totals::default();
    {
        let _installed = Captured::default().install(&totals);
        retry(&source, &quick(), async |conn, attempt| {
            let mut batch = [
                attempt.find::<Counter>(conn, 1).await?,
                attempt.find(conn, 2).await?,
            ];
            if attempt.is_first() {
                bump(&db, 2).await;
            }
            batch.iter_mut().for_each(|row| row.value += 1);
            batch.save_all_checked(conn).await
        })
        .await
        .expect("the second attempt saves the batch");
    }
    let counters = totals.snapshot();
    let retries = counters.get(&on_counters(RETRIES));
    assert_eq!(retries, Some(&1), "{counters:?}");
    let conflicts = counters.get(&conflicts_key(system, "save_all_checked"));
    assert_eq!(conflicts, Some(&1), "{counters:?}");
    let unknown = counters.keys().any(|name| name.contains("unknown"));
    assert!(!unknown, "{counters:?}");
    let histograms = totals.histograms();
    let attempts = histograms.get(&with_outcome(ATTEMPTS, "success"));
    assert_eq!(attempts, Some(&vec![2.0]), "{histograms:?}");
    let durations = &histograms[&with_outcome(RETRY_DURATION, "success")];
    let one_duration = durations.len() == 1 && durations[0] >= 0.0;
    assert!(one_duration, "one duration in seconds: {durations:?}");
}

/// The metric key of a write span's attributes: `name{db.system.name=...,...}` in the
/// order diesel-occ gives its labels, `error.type` last when the span has it.
fn metric_key(name: &str, span: &ExportedSpan) -> String {
    let names = ["db.system.name", "db.collection.name", "db.operation.name"];
    let label = |attribute: &str| format!("{attribute}={}", span.attribute(attribute));
    let mut labels: Vec<String> = names.into_iter().map(label).collect();
    if let Some(error) = span.attributes.get("error.type") {
        labels.push(format!("error.type={error}"));
    }
    format!("{name}{{{}}}", labels.join(","))
}

/// Each checked write records one `db.client.operation.duration` (seconds) under exactly
/// its span's attributes (`error.type` when it failed); each conflict is counted under
/// its span's `db.operation.name`, and `find_checked`, which has no span, under its own.
/// Spans and metrics name a MariaDB server alike: `mysql`, Diesel's backend.
#[flavour(test)]
async fn every_checked_write_records_its_duration_under_its_span_attributes() {
    use diesel_occ::observe::OPERATION_DURATION;

    let db = db!();
    let system = system_name(Conn::BACKEND);
    let mut conn = db.conn().await;
    seed(&db, 1..=4).await;
    let exported = Exported::new();
    let totals = Totals::default();
    {
        let _installed = exported.install(LevelFilter::TRACE);
        let _recorder = metrics::set_default_local_recorder(&totals);
        let mut mine = find(&mut conn, 1).await;
        bump(&db, 1).await;
        expect_conflict(mine.save_checked(&mut conn).await);
        expect_conflict(Counter::find_checked(&mut conn, 1, &1).await);
        let six = schema::counters::value.eq(6);
        expect_conflict(Counter::update_by_key(&mut conn, 2, &0, six).await);
        let tracked = write_every_way(&mut conn, &mine).await;
        let deleted = tracked.delete_checked(&mut conn).await;
        deleted.expect("tracked delete");

        let mut new = Counter::new(5, 0);
        new.insert_checked(&mut conn).await.expect("insert_checked");
        let upserted = Counter::new(6, 0).upsert_checked(&mut conn, None).await;
        let upserted = upserted.expect("upsert_checked");
        assert!(matches!(upserted, Upserted::Inserted(_)), "{upserted:?}");
    }

    let mut spans = exported.spans();
    spans.retain(|span| span.attributes.contains_key("db.operation.name"));
    let name_of = |span: &ExportedSpan| span.attribute("db.operation.name").to_owned();
    let operations: BTreeSet<_> = spans.iter().map(name_of).collect();
    let others = ["save_all_checked", "save_merging", "insert_checked"];
    let others = others.into_iter().chain(["upsert_checked", "save_checked"]);
    for operation in EVERY_WAY.into_iter().chain(others) {
        let found = operations.contains(operation);
        assert!(found, "{operation} in {operations:?}");
    }
    for span in &spans {
        assert_eq!(span.attribute("db.system.name"), system, "{span:#?}");
    }

    // One duration per span, under the span's attributes, and no other.
    let mut expected: BTreeMap<String, usize> = BTreeMap::new();
    for span in &spans {
        let key = metric_key(OPERATION_DURATION, span);
        *expected.entry(key).or_default() += 1;
    }
    let histograms = totals.histograms();
    let recorded: BTreeMap<String, usize> = histograms
        .iter()
        .filter(|(key, _)| key.starts_with(OPERATION_DURATION))
        .map(|(key, values)| (key.clone(), values.len()))
        .collect();
    assert_eq!(recorded, expected, "{histograms:#?}");
    let in_seconds = |seconds: &f64| (0.0..60.0).contains(seconds);
    let all_seconds = histograms.values().flatten().all(in_seconds);
    assert!(all_seconds, "seconds: {histograms:?}");

    // The conflicts: under the method that returned each, with the span's labels.
    let mut conflicts = totals.snapshot();
    conflicts.retain(|key, _| key.starts_with(CONFLICTS));
    let expected = ["save_checked", "find_checked", "update_by_key"];
    let expected = expected.into_iter().chain(["save_all_checked"]);
    let expected = expected.map(|operation| (conflicts_key(system, operation), 1));
    assert_eq!(conflicts, expected.collect());
}
