//! The `counters` row of the async retry scenarios (cancellation, escalation,
//! observability, retry), with its seed, reads and writers. Included once per backend
//! beside a subject's `asynchronous.rs` (`on_every_backend!(asynchronous_counters, ...)`).

// Each subject uses a part of it.
#![allow(dead_code)]

use std::time::Duration;

use diesel::{ExpressionMethods, QueryDsl};
use diesel_async::RunQueryDsl;
use diesel_occ::Error;
use diesel_occ::asynchronous::prelude::*;
use diesel_occ::retry::RetryPolicy;
use diesel_occ_tests::{AsyncTestConnection, AsyncTestDb};

use super::{AsyncConn as Conn, schema};

pub(super) use diesel_occ_tests::entities::Counter;

/// The identity of the server connection (see `AsyncTestConnection::CONNECTION_ID`).
pub(super) async fn connection_id(conn: &mut Conn) -> i64 {
    let id = diesel::dsl::sql::<diesel::sql_types::BigInt>(Conn::CONNECTION_ID);
    let query = diesel::select(id);
    query.get_result(conn).await.expect("connection id")
}

pub(super) async fn seed(db: &AsyncTestDb<Conn>, id: i32) {
    let insert = diesel::insert_into(schema::counters::table).values(Counter::whole(id, 0));
    insert.execute(&mut db.conn().await).await.expect("seed");
}

pub(super) async fn load(conn: &mut Conn, id: i32) -> Counter {
    Counter::find(conn, id).await.expect("counter row")
}

/// A plain increment that only a lock can stop, from a connection that
/// waits for locks briefly.
pub(super) async fn try_plain_increment(conn: &mut Conn, key: i32) -> diesel::QueryResult<usize> {
    use schema::counters::dsl::*;
    let increment = (value.eq(value + 1), version.eq(version + 1));
    let update = diesel::update(counters.find(key)).set(increment);
    update.execute(conn).await
}

pub(super) fn quick() -> RetryPolicy {
    RetryPolicy::new().backoff(Duration::ZERO, Duration::from_millis(2))
}

/// Another writer's checked increment; returns the token it wrote.
pub(super) async fn bump(conn: &mut Conn, id: i32) -> i32 {
    let mut row = load(conn, id).await;
    row.increment();
    row.save_checked(conn).await.expect("the other writer");
    row.version
}

pub(super) fn exhausted<T: std::fmt::Debug>(
    result: Result<T, Error>,
) -> diesel_occ::RetriesExhausted {
    match result {
        Err(Error::RetriesExhausted(exhausted)) => exhausted,
        other => panic!("expected RetriesExhausted, got {other:?}"),
    }
}
