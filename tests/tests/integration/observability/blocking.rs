//! What OpenTelemetry receives from the blocking API, through `tracing-opentelemetry`
//! and the SDK's in-memory exporter: a client span per checked write and one per retry
//! loop, in OpenTelemetry's database attribute names, and the conflict event with its
//! tokens. And the metrics of a retried batch conflict.

use std::time::Duration;

use diesel::prelude::*;
use diesel_occ::prelude::*;
use diesel_occ::retry::RetryPolicy;
use diesel_occ::{Error, SaveOutcome, Tracked};
use diesel_occ_tests::TestConnection;
use opentelemetry::trace::{SpanKind, Status};
use tracing_subscriber::filter::LevelFilter;

use super::{Conn, schema};
use crate::observe::{Exported, ExportedSpan, KeyValues, system_name};

// The `counters` row, tracked so that the tracked saves can be traced too.
use diesel_occ_tests::entities::Counter;

fn seed(conn: &mut Conn, ids: std::ops::RangeInclusive<i32>) {
    let rows: Vec<_> = ids.map(|id| Counter::new(id, 0)).collect();
    diesel::insert_into(schema::counters::table)
        .values(&rows)
        .execute(conn)
        .expect("seed");
}

fn find(conn: &mut Conn, id: i32) -> Counter {
    Counter::find(conn, id).expect("counter row")
}

/// Another writer's checked increment of row `id`.
fn bump(conn: &mut Conn, id: i32) {
    let mut row = find(conn, id);
    row.value += 1;
    row.save_checked(conn).expect("the other writer");
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

/// Every checked write the blocking `CheckedDsl`, `BatchDsl` and `TrackedDsl` offer
/// ends up as its own client span named `<operation> counters`, with the backend,
/// table and operation; a conflict fails its span with `error.type = conflict` and
/// carries the tokens in its event, but no key value while those are off.
#[test]
fn every_checked_write_is_a_client_span_with_opentelemetry_attributes() {
    let db = test_db!();
    let system = system_name(Conn::BACKEND);
    let _keys = KeyValues::set(false);
    let mut conn = db.conn();
    seed(&mut conn, 1..=4);
    let exported = Exported::new();
    exported.run(LevelFilter::TRACE, || {
        let mut mine = find(&mut conn, 1);
        let mut theirs = find(&mut conn, 1);
        theirs.value = 1;
        theirs.save_checked(&mut conn).expect("their save");
        mine.value = 2;
        let conflict = mine.save_checked(&mut conn).unwrap_err();
        assert!(conflict.is_conflict(), "{conflict:?}");

        let token = Counter::update_by_key(&mut conn, 2, &1, schema::counters::value.eq(5))
            .expect("update_by_key");
        Counter::delete_by_key(&mut conn, 2, &token).expect("delete_by_key");

        let mut third = find(&mut conn, 3);
        third
            .save_checked_where(&mut conn, schema::counters::value.ge(0))
            .expect("save_checked_where");
        third.force_increment(&mut conn).expect("force_increment");
        third
            .soft_delete_checked(&mut conn, schema::counters::label.eq("gone"))
            .expect("soft_delete_checked");
        third.delete_checked(&mut conn).expect("delete_checked");

        // The stale `mine` makes the batch conflict.
        let mut batch = [find(&mut conn, 4), mine.clone()];
        let error = batch.save_all_checked(&mut conn).unwrap_err();
        assert!(error.as_batch_conflict().is_some(), "{error:?}");

        let mut tracked = Tracked::new(find(&mut conn, 4));
        tracked.edit().value = 7;
        let outcome = tracked.save_merging(&mut conn).expect("save_merging");
        assert!(matches!(outcome, SaveOutcome::Saved), "{outcome:?}");
    });

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
        assert_eq!(
            events[0].get(attribute).map(String::as_str),
            Some(value),
            "{attribute} of {conflicted:#?}"
        );
    }
    assert!(
        !events[0].contains_key("diesel_occ.key"),
        "key values are off: {conflicted:#?}"
    );

    for operation in [
        "update_by_key",
        "delete_by_key",
        "save_checked_where",
        "force_increment",
        "soft_delete_checked",
        "delete_checked",
    ] {
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
    assert_eq!(
        saves[2].parent, merging.id,
        "the tracked save inside save_merging"
    );
}

/// With key values turned on, the conflict event names its row.
#[test]
fn the_conflict_event_names_the_key_only_when_key_values_are_on() {
    let db = test_db!();
    let _keys = KeyValues::set(true);
    let mut conn = db.conn();
    seed(&mut conn, 1..=1);
    let exported = Exported::new();
    exported.run(LevelFilter::TRACE, || {
        let mut mine = find(&mut conn, 1);
        bump(&mut conn, 1);
        mine.value = 9;
        assert!(mine.save_checked(&mut conn).unwrap_err().is_conflict());
    });
    let conflicted: Vec<_> = exported
        .named("save_checked counters")
        .into_iter()
        .filter(ExportedSpan::failed)
        .collect();
    assert_eq!(conflicted.len(), 1, "{:#?}", exported.spans());
    let events = conflicted[0].events_named("occ conflict");
    assert_eq!(
        events[0].get("diesel_occ.key").map(String::as_str),
        Some("(id=1)")
    );
}

fn quick() -> RetryPolicy {
    RetryPolicy::new().backoff(Duration::ZERO, Duration::from_millis(2))
}

/// A retry loop is an INFO span around its attempts' spans, which hold the checked
/// writes' spans; it records how many attempts it ran, and fails with
/// `retries_exhausted` when it gives up. Each conflict is forced by another writer
/// that commits between the attempt's read and its save.
#[test]
fn a_retry_loop_is_a_span_around_its_attempts_and_their_writes() {
    let db = test_db!();
    let mut other = db.conn();
    seed(&mut other, 1..=1);
    let url = db.url().to_owned();
    let source = || Conn::establish(&url);
    let exported = Exported::new();
    exported.run(LevelFilter::TRACE, || {
        let value = diesel_occ::blocking::retry(&source, &quick(), |conn, attempt| {
            let mut row: Counter = attempt.find(conn, 1)?;
            if attempt.is_first() {
                bump(&mut other, 1);
            }
            row.value += 1;
            row.save_checked(conn)?;
            Ok(row.value)
        })
        .expect("the second attempt saves");
        assert_eq!(value, 2);
    });
    let retry = one(&exported.spans(), "diesel_occ retry");
    assert_succeeded(&retry);
    assert_eq!(retry.attribute("diesel_occ.retry.attempts"), "2");
    let attempts = exported.named("occ.attempt");
    assert_eq!(attempts.len(), 2);
    assert!(attempts.iter().all(|attempt| attempt.parent == retry.id));
    // The other writer's save runs inside the first attempt too.
    let saves = exported.named("save_checked counters");
    assert_eq!(saves.len(), 3, "{saves:#?}");
    let in_attempt = |save: &ExportedSpan, number: usize| save.parent == attempts[number].id;
    assert!(in_attempt(&saves[0], 0) && in_attempt(&saves[1], 0) && in_attempt(&saves[2], 1));
    assert_succeeded(&saves[0]);
    assert_conflicted(&saves[1]);
    assert_succeeded(&saves[2]);

    let exported = Exported::new();
    exported.run(LevelFilter::TRACE, || {
        let result: Result<(), Error> =
            diesel_occ::blocking::retry(&source, &quick().max_attempts(2), |conn, attempt| {
                let mut row: Counter = attempt.find(conn, 1)?;
                bump(&mut other, 1);
                row.value += 1;
                row.save_checked(conn)
            });
        assert!(
            matches!(result, Err(Error::RetriesExhausted(_))),
            "{result:?}"
        );
    });
    let retry = one(&exported.spans(), "diesel_occ retry");
    assert!(retry.failed(), "{retry:#?}");
    assert_eq!(retry.attribute("error.type"), "retries_exhausted");
    assert_eq!(retry.attribute("diesel_occ.retry.attempts"), "2");
}

/// At INFO, the usual default, the checked writes' DEBUG spans are skipped and only
/// the retry loop's span is exported.
#[test]
fn at_info_only_the_retry_loop_span_is_exported() {
    let db = test_db!();
    let mut conn = db.conn();
    seed(&mut conn, 1..=1);
    let url = db.url().to_owned();
    let source = || Conn::establish(&url);
    let exported = Exported::new();
    exported.run(LevelFilter::INFO, || {
        diesel_occ::blocking::retry(&source, &quick(), |conn, attempt| {
            let mut row: Counter = attempt.find(conn, 1)?;
            row.value += 1;
            row.save_checked(conn)
        })
        .expect("saved");
        let mut row = find(&mut conn, 1);
        row.value += 1;
        row.save_checked(&mut conn).expect("saved");
    });
    let names: Vec<_> = exported.spans().into_iter().map(|span| span.name).collect();
    assert_eq!(names, ["diesel_occ retry"]);
}

/// A batch conflict that a retry helper retries is counted under its table, not
/// `unknown`; the histograms get the attempts and the time of the call.
#[test]
fn a_retried_batch_conflict_is_counted_under_its_table() {
    use crate::observe::{Captured, Totals};
    use diesel_occ::observe::{ATTEMPTS, CONFLICTS, RETRIES, RETRY_DURATION};

    let db = test_db!();
    let system = system_name(Conn::BACKEND);
    let mut other = db.conn();
    seed(&mut other, 1..=2);
    let url = db.url().to_owned();
    let source = || Conn::establish(&url);
    let totals = Totals::default();
    Captured::default().run(&totals, || {
        diesel_occ::blocking::retry(&source, &quick(), |conn, attempt| {
            let mut batch = vec![attempt.find::<Counter>(conn, 1)?, attempt.find(conn, 2)?];
            if attempt.is_first() {
                bump(&mut other, 2);
            }
            for row in &mut batch {
                row.value += 1;
            }
            batch.save_all_checked(conn)
        })
        .expect("the second attempt saves the batch");
    });
    let counters = totals.snapshot();
    assert_eq!(
        counters.get(&format!("{RETRIES}{{db.collection.name=counters}}")),
        Some(&1),
        "{counters:?}"
    );
    let labels = format!(
        "db.system.name={system},db.collection.name=counters,db.operation.name=save_all_checked"
    );
    assert_eq!(
        counters.get(&format!("{CONFLICTS}{{{labels}}}")),
        Some(&1),
        "{counters:?}"
    );
    assert!(
        !counters.keys().any(|name| name.contains("unknown")),
        "{counters:?}"
    );
    let histograms = totals.histograms();
    assert_eq!(
        histograms.get(&format!("{ATTEMPTS}{{outcome=success}}")),
        Some(&vec![2.0]),
        "{histograms:?}"
    );
    let durations = &histograms[&format!("{RETRY_DURATION}{{outcome=success}}")];
    assert!(
        durations.len() == 1 && durations[0] >= 0.0,
        "one duration in seconds: {durations:?}"
    );
}

/// The metric key of a write span's attributes: `name{db.system.name=...,...}` in the
/// order diesel-occ gives its labels, `error.type` last when the span has it.
fn metric_key(name: &str, span: &ExportedSpan) -> String {
    let mut labels: Vec<String> = ["db.system.name", "db.collection.name", "db.operation.name"]
        .into_iter()
        .map(|attribute| format!("{attribute}={}", span.attribute(attribute)))
        .collect();
    if let Some(error) = span.attributes.get("error.type") {
        labels.push(format!("error.type={error}"));
    }
    format!("{name}{{{}}}", labels.join(","))
}

/// Each checked write records one `db.client.operation.duration` value (seconds),
/// labelled with exactly its span's attributes (`error.type` included when it failed),
/// and each conflict is counted under the `db.operation.name` its span has, the
/// method's name; `find_checked`, which has no span, counts its stale client token
/// under its own name. Spans and metrics name the backend alike (`mysql` for a MariaDB
/// server too: the name of the client, Diesel's `Mysql` backend).
#[test]
fn every_checked_write_records_its_duration_under_its_span_attributes() {
    use crate::observe::Totals;
    use diesel_occ::Upserted;
    use diesel_occ::observe::{CONFLICTS, OPERATION_DURATION};

    let db = test_db!();
    let system = system_name(Conn::BACKEND);
    let mut conn = db.conn();
    seed(&mut conn, 1..=4);
    let exported = Exported::new();
    let totals = Totals::default();
    exported.run(LevelFilter::TRACE, || {
        metrics::with_local_recorder(&totals, || {
            let mut mine = find(&mut conn, 1);
            bump(&mut conn, 1);
            assert!(mine.save_checked(&mut conn).unwrap_err().is_conflict());
            let stale = Counter::find_checked(&mut conn, 1, &1).unwrap_err();
            assert!(stale.is_conflict(), "{stale:?}");

            let token = Counter::update_by_key(&mut conn, 2, &1, schema::counters::value.eq(5))
                .expect("update_by_key");
            let error = Counter::update_by_key(&mut conn, 2, &1, schema::counters::value.eq(6))
                .unwrap_err();
            assert!(error.is_conflict(), "{error:?}");
            Counter::delete_by_key(&mut conn, 2, &token).expect("delete_by_key");

            let mut third = find(&mut conn, 3);
            third
                .save_checked_where(&mut conn, schema::counters::value.ge(0))
                .expect("save_checked_where");
            third.force_increment(&mut conn).expect("force_increment");
            third
                .soft_delete_checked(&mut conn, schema::counters::label.eq("gone"))
                .expect("soft_delete_checked");
            third.delete_checked(&mut conn).expect("delete_checked");

            let mut batch = [find(&mut conn, 4), mine.clone()];
            assert!(batch.save_all_checked(&mut conn).is_err());

            let mut tracked = Tracked::new(find(&mut conn, 4));
            tracked.edit().value = 7;
            let merged = tracked.save_merging(&mut conn).expect("save_merging");
            assert!(matches!(merged, SaveOutcome::Saved), "{merged:?}");
            tracked
                .delete_checked(&mut conn)
                .expect("tracked delete_checked");

            let mut new = Counter::new(5, 0);
            new.insert_checked(&mut conn).expect("insert_checked");
            let mut fresh = Counter {
                id: 6,
                ..new.clone()
            };
            let upserted = fresh
                .upsert_checked(&mut conn, None)
                .expect("upsert_checked");
            assert!(matches!(upserted, Upserted::Inserted(_)), "{upserted:?}");
        });
    });

    let spans: Vec<_> = exported
        .spans()
        .into_iter()
        .filter(|span| span.attributes.contains_key("db.operation.name"))
        .collect();
    let operations: std::collections::BTreeSet<_> = spans
        .iter()
        .map(|span| span.attribute("db.operation.name").to_owned())
        .collect();
    for operation in [
        "save_checked",
        "update_by_key",
        "delete_by_key",
        "save_checked_where",
        "force_increment",
        "soft_delete_checked",
        "delete_checked",
        "save_all_checked",
        "save_merging",
        "insert_checked",
        "upsert_checked",
    ] {
        assert!(
            operations.contains(operation),
            "{operation} in {operations:?}"
        );
    }
    for span in &spans {
        assert_eq!(span.attribute("db.system.name"), system, "{span:#?}");
    }

    // One duration per span, under the span's attributes, and no other.
    let mut expected: std::collections::BTreeMap<String, usize> = Default::default();
    for span in &spans {
        *expected
            .entry(metric_key(OPERATION_DURATION, span))
            .or_default() += 1;
    }
    let histograms = totals.histograms();
    let recorded: std::collections::BTreeMap<String, usize> = histograms
        .iter()
        .filter(|(key, _)| key.starts_with(OPERATION_DURATION))
        .map(|(key, values)| (key.clone(), values.len()))
        .collect();
    assert_eq!(recorded, expected, "{histograms:#?}");
    assert!(
        histograms
            .values()
            .flatten()
            .all(|seconds| *seconds >= 0.0 && *seconds < 60.0),
        "seconds: {histograms:?}"
    );

    // The conflicts: under the method that returned each, with the span's labels.
    let labels = |operation: &str| {
        format!(
            "{CONFLICTS}{{db.system.name={system},db.collection.name=counters,db.operation.name={operation}}}"
        )
    };
    let counters = totals.snapshot();
    let conflicts: std::collections::BTreeMap<_, _> = counters
        .into_iter()
        .filter(|(key, _)| key.starts_with(CONFLICTS))
        .collect();
    assert_eq!(
        conflicts,
        [
            (labels("save_checked"), 1),
            (labels("find_checked"), 1),
            (labels("update_by_key"), 1),
            (labels("save_all_checked"), 1),
        ]
        .into_iter()
        .collect(),
    );
}
