//! The `counters` row of the server fault scenarios (killed sessions, timeouts), its
//! seed and read-back, and the connections and policy both flavours retry with.
//! Included once per server beside a subject's scenario files
//! (`on_every_server!(server_counters, ...)`).

// Each scenario file uses a part of it.
#![allow(dead_code)]

use std::time::Duration;

use diesel::prelude::*;
use diesel_async::pooled_connection::AsyncDieselConnectionManager;
use diesel_async::pooled_connection::deadpool::Pool;
use diesel_occ::retry::RetryPolicy;
use diesel_occ_tests::{TestConnection, TestDb};

use super::{AsyncConn, Conn, schema};

pub(super) use diesel_occ_tests::entities::Counter;

/// The test's database. Both flavours reach it through blocking connections too: the
/// seed, the other writer, the kills, the lock holder and the read-backs run on them.
pub(super) type ServerDb = TestDb<Conn>;

/// Row 1 holds value 10 at token 1.
pub(super) fn seed(db: &ServerDb) {
    let insert = diesel::insert_into(schema::counters::table).values(Counter::new(1, 10));
    insert.execute(&mut db.conn()).expect("seed");
}

/// `(value, token)` of row 1, read on a new blocking connection.
pub(super) fn row(db: &ServerDb) -> (i32, i32) {
    use schema::counters::{table, value, version};
    let query = table.find(1).select((value, version));
    query.get_result(&mut db.conn()).expect("row 1")
}

/// Another writer adds `by` to row 1 with a checked save, on a blocking connection of
/// its own.
pub(super) fn their_save(db: &ServerDb, by: i32) {
    use diesel_occ::{CheckedDsl, EntityDsl};
    let mut conn = db.conn();
    let mut theirs: Counter = EntityDsl::find(&mut conn, 1).expect("row 1");
    theirs.value += by;
    theirs.save_checked(&mut conn).expect("their save");
}

/// A source that opens a new, configured connection per attempt.
pub(super) fn connector(db: &ServerDb) -> impl Fn() -> Result<Conn, diesel::ConnectionError> + '_ {
    move || {
        let mut conn = Conn::establish(db.url())?;
        conn.configure();
        Ok(conn)
    }
}

/// A deadpool pool of one async connection that waits `wait` for it.
pub(super) fn pool(db: &ServerDb, wait: Option<Duration>) -> Pool<AsyncConn> {
    let manager = AsyncDieselConnectionManager::<AsyncConn>::new(db.url());
    let pool = Pool::builder(manager).max_size(1).wait_timeout(wait);
    let pool = pool.runtime(deadpool::Runtime::Tokio1).build();
    pool.expect("pool")
}

/// The same pool set up for speed on a server: no test query at checkout
/// (`RecyclingMethod::Fast`) except for a connection idle for `idle`
/// (`diesel_occ::asynchronous::verify_when_idle`).
pub(super) fn fast_pool(db: &ServerDb, wait: Option<Duration>, idle: Duration) -> Pool<AsyncConn> {
    use diesel_async::pooled_connection::{ManagerConfig, RecyclingMethod};
    let mut config = ManagerConfig::<AsyncConn>::default();
    config.recycling_method = RecyclingMethod::Fast;
    let manager = AsyncDieselConnectionManager::<AsyncConn>::new_with_config(db.url(), config);
    let pool = Pool::builder(manager).max_size(1).wait_timeout(wait);
    let pool = pool.runtime(deadpool::Runtime::Tokio1);
    let verify = diesel_occ::asynchronous::verify_when_idle(idle);
    pool.pre_recycle(verify).build().expect("pool")
}

/// Three attempts, no backoff.
pub(super) fn quick() -> RetryPolicy {
    RetryPolicy::new()
        .max_attempts(3)
        .backoff(Duration::ZERO, Duration::ZERO)
}
