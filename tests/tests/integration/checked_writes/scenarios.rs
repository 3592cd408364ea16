//! Checked saves and deletes in both flavours; the token kinds and key shapes in the
//! blocking one. Ordered interleavings run step by step on two connections; symmetric
//! races run two writers that both read, meet at a barrier, then write.

flavour_prelude!();

#[flavour(blocking)]
use chrono::NaiveDateTime;
#[flavour(blocking)]
use diesel::prelude::{ExpressionMethods, Insertable, QueryDsl, Queryable, Selectable};
use diesel_occ::testing::Race;
use diesel_occ::{ConflictState, Error, Operation};
#[flavour(blocking)]
use diesel_occ::{InvalidTokenReason, UuidToken};
use diesel_occ_tests::entities::Counter;
use diesel_occ_tests::expect_conflict;
use diesel_occ_tests::statements::StatementCounter;

#[flavour(blocking)]
use super::schema;

#[flavour]
async fn counter(conn: &mut Conn, id: i32) -> Counter {
    Counter::find(conn, id).await.expect("counter row")
}

/// A writer's own connection and its read of counter 1.
#[flavour]
async fn read_counter(db: &TestDb<Conn>) -> (Conn, Counter) {
    let mut conn = db.conn().await;
    let row = counter(&mut conn, 1).await;
    (conn, row)
}

/// Counter 1 at value 0, token 1.
#[flavour]
async fn seed_counter(db: &TestDb<Conn>) {
    let insert = "INSERT INTO counters (id, value, version) VALUES (1, 0, 1)";
    raw_sql(db, insert).await;
}

/// Compiles only for a future that can move to another thread (`tokio::spawn`).
#[flavour(asynchronous)]
fn assert_send<F: Future + Send>(future: F) -> F {
    future
}

/// The blocking flavour's save has run by the time it is passed in: nothing to prove.
#[flavour(blocking)]
fn assert_send<T>(outcome: T) -> T {
    outcome
}

/// The race on threads (blocking) or on tasks (async, the checked save's future proved
/// `Send`).
#[flavour(test(flavor = "multi_thread", worker_threads = 4))]
async fn two_writers_from_one_version_exactly_one_wins() {
    let db = db!();
    seed_counter(&db).await;
    let report = Race::new(2)
        .run_in_flavour(
            async |_| read_counter(&db).await,
            async |writer, (mut conn, mut row): (Conn, Counter)| {
                row.value += 10 * (writer as i32 + 1);
                row.label = Some(format!("writer {writer}"));
                let result = assert_send(row.save_checked(&mut conn)).await;
                (result, row)
            },
        )
        .await;
    let outcomes = report.into_values().unwrap();
    let winners: Vec<_> = outcomes.iter().filter(|(r, _)| r.is_ok()).collect();
    assert_eq!(winners.len(), 1, "exactly one winner: {outcomes:?}");
    let (_, winner) = winners[0];
    let (loss, loser) = outcomes.iter().find(|(r, _)| r.is_err()).unwrap();

    let conflict = loss.as_ref().unwrap_err().as_conflict().unwrap();
    assert_eq!(conflict.operation(), Operation::Update);
    assert_eq!(conflict.table(), "counters");
    assert_eq!(conflict.expected::<i32>(), Some(1));
    let current = conflict.current::<i32>();
    assert_eq!(current, Some(winner.version), "names the winner's token");
    assert_eq!(loser.version, 1, "the loser's token is not advanced");

    let stored = counter(&mut db.conn().await, 1).await;
    assert_eq!(&stored, winner, "the winner's values and token");
    assert_eq!(stored.version, 2);
}

#[flavour(test(flavor = "multi_thread", worker_threads = 4))]
async fn save_runs_exactly_one_statement_and_advances_the_token() {
    let db = db!();
    seed_counter(&db).await;
    let mut conn = db.conn().await;
    let mut row = counter(&mut conn, 1).await;
    let statements = StatementCounter::install_in_flavour(&mut conn);

    row.value = 5;
    row.save_checked(&mut conn).await.expect("save");
    assert_eq!(statements.take(), 1, "one UPDATE on success");
    assert_eq!(row.version, 2);

    row.value = 6;
    row.save_checked(&mut conn).await.expect("second save");
    assert_eq!(statements.take(), 1);
    let cached = statements.take_cached();
    assert_eq!(cached.len(), 1, "prepared once, then reused: {cached:?}");
    assert!(cached[0].starts_with("UPDATE"), "{cached:?}");
    assert_eq!(counter(&mut conn, 1).await, row);
    statements.take();

    let mut stale = row.clone();
    stale.version = 1;
    expect_conflict(stale.save_checked(&mut conn).await);
    let taken = statements.take();
    assert_eq!(taken, 2, "the conflict path adds one classification query");

    row.delete_checked(&mut conn).await.expect("delete");
    assert_eq!(statements.take(), 1, "one DELETE on success");
}

#[flavour(test(flavor = "multi_thread", worker_threads = 4))]
async fn update_after_a_delete_is_a_deleted_conflict() {
    let db = db!();
    seed_counter(&db).await;
    let (mut a, mut b) = (db.conn().await, db.conn().await);
    let deleter = counter(&mut a, 1).await;
    let mut writer = counter(&mut b, 1).await;

    deleter.delete_checked(&mut a).await.expect("delete wins");
    writer.value = 7;
    let conflict = expect_conflict(writer.save_checked(&mut b).await);
    assert_eq!(conflict.state(), &ConflictState::Deleted);
    assert!(conflict.is_deleted());
    assert_eq!(writer.version, 1, "token untouched");
    assert_eq!(writer.value, 7, "edits kept for the caller");
    let found = Counter::find(&mut a, 1).await;
    assert!(matches!(found, Err(Error::NotFound(_))), "not resurrected");
}

#[flavour(test(flavor = "multi_thread", worker_threads = 4))]
async fn delete_after_an_update_is_a_stale_conflict() {
    let db = db!();
    seed_counter(&db).await;
    let (mut a, mut b) = (db.conn().await, db.conn().await);
    let mut writer = counter(&mut a, 1).await;
    let deleter = counter(&mut b, 1).await;

    writer.value = 3;
    writer.save_checked(&mut a).await.expect("update wins");
    let conflict = expect_conflict(deleter.delete_checked(&mut b).await);
    assert_eq!(conflict.operation(), Operation::Delete);
    assert_eq!(conflict.current::<i32>(), Some(writer.version));
    let stored = counter(&mut a, 1).await;
    assert_eq!(stored, writer, "the row survives with the update");
}

#[flavour(test(flavor = "multi_thread", worker_threads = 4))]
async fn stale_client_token_is_rejected_before_any_write() {
    let db = db!();
    seed_counter(&db).await;
    let mut conn = db.conn().await;
    let client_token = counter(&mut conn, 1).await.version;

    let mut other = counter(&mut conn, 1).await;
    other.value = 42;
    other.save_checked(&mut conn).await.expect("another writer");

    let statements = StatementCounter::install_in_flavour(&mut conn);
    let found = Counter::find_checked(&mut conn, 1, &client_token).await;
    let error = found.unwrap_err();
    assert_eq!(statements.take(), 1, "one SELECT, no write");
    let conflict = error.as_conflict().expect("stale client token");
    assert_eq!(conflict.operation(), Operation::ClientToken);
    let expected = conflict.expected::<i32>();
    assert_eq!(expected, Some(client_token), "the client's token is kept");
    assert_eq!(conflict.current::<i32>(), Some(other.version));
    assert_eq!(counter(&mut conn, 1).await, other, "nothing written");

    let fresh = Counter::find_checked(&mut conn, 1, &other.version).await;
    assert_eq!(fresh.expect("current token"), other);
}

#[flavour(blocking)]
#[derive(Debug, Clone, PartialEq, Queryable, Selectable, Insertable, Versioned)]
#[diesel(table_name = schema::small_counters)]
struct SmallCounter {
    id: i32,
    value: i32,
    #[occ(version)]
    version: i16,
}

#[flavour(blocking)]
#[derive(Debug, Clone, PartialEq, Queryable, Selectable, Insertable, Versioned)]
#[diesel(table_name = schema::big_counters)]
struct BigCounter {
    id: i32,
    value: i32,
    #[occ(version)]
    version: i64,
}

#[flavour(blocking)]
#[derive(Debug, Clone, PartialEq, Queryable, Selectable, Insertable, Versioned)]
#[diesel(table_name = schema::stock)]
struct Stock {
    id: i32,
    available: i32,
    #[occ(version)]
    version: UuidToken,
}

#[flavour(blocking)]
#[derive(Debug, Clone, PartialEq, Queryable, Selectable, Insertable, Versioned)]
#[diesel(table_name = schema::order_lines, primary_key(order_id, line_no))]
struct OrderLine {
    order_id: i32,
    line_no: i32,
    quantity: i32,
    #[occ(version)]
    version: i32,
}

#[flavour(blocking)]
#[derive(Debug, Clone, PartialEq, Queryable, Selectable, Insertable, Versioned)]
#[diesel(table_name = schema::notes, primary_key(note_id))]
struct Note {
    #[diesel(column_name = note_id)]
    id: i32,
    #[diesel(column_name = note_text)]
    body: String,
    #[occ(version)]
    #[diesel(column_name = rev)]
    version: i32,
}

#[flavour(blocking)]
use diesel_occ_tests::entities::Stamped;

/// Inserts stock row 1.
#[flavour(blocking)]
fn insert_stock(conn: &mut Conn, n: i32, token: UuidToken) {
    use schema::stock::dsl::*;
    insert_rows!(conn, stock, (id.eq(1), available.eq(n), version.eq(token)));
}

#[flavour(blocking, test)]
fn control_plain_load_mutate_save_loses_an_update() {
    // The same race without the token in the predicate: both writers succeed and one
    // increment vanishes, so the harness can observe what diesel-occ prevents.
    let db = db!();
    seed_counter(&db);
    let report = Race::new(2).run(
        |_| read_counter(&db),
        |_, (mut conn, row)| {
            diesel::update(schema::counters::table.find(row.id))
                .set(schema::counters::value.eq(row.value + 1))
                .execute(&mut conn)
        },
    );
    let outcomes = report.into_values().unwrap();
    let updated: usize = outcomes.iter().map(|r| *r.as_ref().unwrap()).sum();
    assert_eq!(updated, 2);
    let stored = counter(&mut db.conn(), 1).value;
    assert_eq!(stored, 1, "one of two increments was lost");
}

#[flavour(blocking, test)]
fn checked_increments_from_one_version_lose_nothing() {
    let db = db!();
    seed_counter(&db);
    let report = Race::new(4).run(
        |_| read_counter(&db),
        |_, (mut conn, mut row)| {
            row.value += 1;
            row.save_checked(&mut conn).is_ok()
        },
    );
    let outcomes = report.into_values().unwrap();
    let applied = outcomes.iter().filter(|ok| **ok).count() as i32;
    assert_eq!(applied, 1);
    let stored = counter(&mut db.conn(), 1).value;
    assert_eq!(stored, applied, "every acknowledged increment is stored");
}

#[flavour(blocking, test)]
fn racing_update_and_delete_leave_one_consistent_outcome() {
    let db = db!();
    seed_counter(&db);
    let report = Race::new(2).run(
        |_| read_counter(&db),
        |writer, (mut conn, mut row)| {
            if writer == 0 {
                row.value = 99;
                row.save_checked(&mut conn)
            } else {
                row.delete_checked(&mut conn)
            }
        },
    );
    let outcomes = report.into_values().unwrap();
    let stored = Counter::find(&mut db.conn(), 1);
    match (&outcomes[0], &outcomes[1]) {
        (Ok(()), Err(Error::Conflict(c))) => {
            assert_eq!(c.current::<i32>(), Some(2));
            assert_eq!(stored.unwrap().value, 99);
        }
        (Err(Error::Conflict(c)), Ok(())) => {
            assert!(c.is_deleted());
            assert!(matches!(stored, Err(Error::NotFound(_))));
        }
        other => panic!("exactly one of update and delete must win: {other:?}"),
    }
}

#[flavour(blocking, test)]
fn client_token_for_a_missing_row_or_nil_uuid_is_a_typed_error() {
    let db = db!();
    let mut conn = db.conn();
    let missing = Counter::find_checked(&mut conn, 404, &1).unwrap_err();
    let Error::NotFound(nf) = &missing else {
        panic!("expected NotFound, got {missing:?}");
    };
    assert_eq!(nf.to_string(), "no row in counters with key (id=404)");

    insert_stock(&mut conn, 5, UuidToken::initial());
    let statements = StatementCounter::install(&mut conn);
    let nil = Stock::find_checked(&mut conn, 1, &UuidToken(uuid::Uuid::nil())).unwrap_err();
    assert_eq!(statements.take(), 0, "refused without a query");
    let Error::InvalidToken(invalid) = &nil else {
        panic!("expected InvalidToken, got {nil:?}");
    };
    assert_eq!(invalid.reason, InvalidTokenReason::Nil);
}

#[flavour(blocking, test)]
fn i16_token_wraps_at_its_maximum() {
    let db = db!();
    let insert = "INSERT INTO small_counters (id, value, version) VALUES (1, 0, 32767)";
    raw_sql(&db, insert);
    let mut conn = db.conn();
    let mut row = SmallCounter::find(&mut conn, 1).unwrap();
    assert_eq!(row.version, i16::MAX);
    let stale = row.clone();

    row.value = 1;
    row.save_checked(&mut conn).expect("save at i16::MAX");
    assert_eq!(row.version, i16::MIN);
    assert_eq!(SmallCounter::find(&mut conn, 1).unwrap(), row);
    row.save_checked(&mut conn).expect("save after wrapping");
    assert_eq!(row.version, i16::MIN + 1);

    let conflict = expect_conflict(stale.clone().save_checked(&mut conn));
    assert_eq!(conflict.current::<i16>(), Some(i16::MIN + 1));
    assert_eq!(conflict.expected::<i16>(), Some(i16::MAX));
}

#[flavour(blocking, test)]
fn i64_token_wraps_at_its_maximum() {
    let db = db!();
    let max = i64::MAX;
    let insert = format!("INSERT INTO big_counters (id, value, version) VALUES (1, 0, {max})");
    raw_sql(&db, &insert);
    let mut conn = db.conn();
    let mut row = BigCounter::find(&mut conn, 1).unwrap();
    row.save_checked(&mut conn).expect("save at i64::MAX");
    assert_eq!(BigCounter::find(&mut conn, 1).unwrap().version, i64::MIN);
}

#[flavour(blocking, test)]
fn composite_key_guards_only_its_own_row() {
    let db = db!();
    let columns = "order_lines (order_id, line_no, quantity, version)";
    let insert = format!("INSERT INTO {columns} VALUES (7, 1, 1, 1), (7, 2, 1, 1)");
    raw_sql(&db, &insert);
    let mut conn = db.conn();
    let mut line = OrderLine::find(&mut conn, (7, 2)).unwrap();
    let stale = line.clone();
    line.quantity = 5;
    line.save_checked(&mut conn).expect("save line 2");

    let one = OrderLine::find(&mut conn, (7, 1)).unwrap();
    assert_eq!((one.quantity, one.version), (1, 1), "line 1 untouched");

    let conflict = expect_conflict(stale.delete_checked(&mut conn));
    assert_eq!(conflict.key().to_string(), "(order_id=7, line_no=2)");
    assert_eq!(conflict.current::<i32>(), Some(2));
    line.delete_checked(&mut conn).expect("current token");
    assert!(OrderLine::find(&mut conn, (7, 1)).is_ok());
}

#[flavour(blocking, test)]
fn renamed_columns_are_honoured() {
    let db = db!();
    let insert = "INSERT INTO notes (note_id, note_text, rev) VALUES (1, 'draft', 1)";
    raw_sql(&db, insert);
    let mut conn = db.conn();
    let mut note = Note::find(&mut conn, 1).unwrap();
    let stale = note.clone();
    note.body = "final".into();
    note.save_checked(&mut conn).expect("save");
    let query = schema::notes::table.select((schema::notes::note_text, schema::notes::rev));
    let stored: (String, i32) = query.first(&mut conn).unwrap();
    assert_eq!(stored, ("final".to_owned(), 2));
    let conflict = expect_conflict(stale.delete_checked(&mut conn));
    assert_eq!(conflict.key().to_string(), "(note_id=1)");
}

#[flavour(blocking, test)]
fn uuid_tokens_are_fresh_stored_and_checked() {
    let db = db!();
    let mut conn = db.conn();
    let first = UuidToken::initial();
    insert_stock(&mut conn, 5, first);
    let mut stock = Stock::find_checked(&mut conn, 1, &first).unwrap();
    stock.available -= 1;
    stock.save_checked(&mut conn).expect("save");
    assert_ne!(stock.version, first);
    assert!(!stock.version.0.is_nil());
    let stored = Stock::find(&mut conn, 1).unwrap();
    assert_eq!(stored, stock, "entity token equals the stored one");

    let conflict = expect_conflict(Stock::find_checked(&mut conn, 1, &first));
    assert_eq!(conflict.current::<UuidToken>(), Some(stock.version));
}

#[flavour(blocking, test)]
fn timestamp_tokens_advance_at_stored_precision() {
    let db = db!();
    let mut conn = db.conn();
    let start = NaiveDateTime::initial();
    let row = {
        use schema::stamped::dsl::*;
        (id.eq(1), value.eq(0), updated_at.eq(start))
    };
    insert_rows!(&mut conn, schema::stamped::table, row);
    let mut row = Stamped::find(&mut conn, 1).unwrap();
    assert_eq!(row.updated_at, start, "stored without loss");
    let stale = row.clone();

    // Back-to-back saves inside one clock tick must still change the token.
    let mut seen = vec![row.updated_at];
    for value in 1..=5 {
        row.value = value;
        row.save_checked(&mut conn).expect("save");
        assert!(row.updated_at > *seen.last().unwrap());
        seen.push(row.updated_at);
        let stored = Stamped::find(&mut conn, 1).unwrap();
        assert_eq!(stored, row, "entity token equals the stored one");
    }
    let conflict = expect_conflict(stale.clone().save_checked(&mut conn));
    assert_eq!(conflict.current::<NaiveDateTime>(), Some(row.updated_at));
}

#[flavour(blocking, test)]
fn a_failed_statement_is_a_database_error_without_sql_or_values() {
    let db = db!();
    let mut conn = db.conn();
    insert_stock(&mut conn, 1, UuidToken::initial());
    let mut stock = Stock::find(&mut conn, 1).unwrap();
    let before = stock.clone();
    stock.available = -3; // violates CHECK (available >= 0)
    let error = stock.save_checked(&mut conn).unwrap_err();
    assert!(matches!(error, Error::Database(_)), "got {error:?}");
    let shown = format!("{error} {error:?}");
    let leaks = ["UPDATE", "available", "-3", "stock", "CHECK"];
    for leak in leaks.into_iter().chain(["constraint \""]) {
        assert!(!shown.contains(leak), "{shown:?} leaks {leak:?}");
    }
    assert_eq!(stock.version, before.version, "token untouched");
    let stored = Stock::find(&mut conn, 1).unwrap();
    assert_eq!(stored, before, "nothing written");
}
