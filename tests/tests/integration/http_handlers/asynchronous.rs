//! The routes on diesel-async connections from a deadpool pool, as an axum service
//! usually holds them.

use std::time::Duration;

use diesel_async::SimpleAsyncConnection;
use diesel_async::pooled_connection::AsyncDieselConnectionManager;
use diesel_occ::asynchronous::prelude::*;
use diesel_occ_tests::AsyncTestDb;

use super::super::SEED;
use super::AsyncConn as Conn;
use handlers::{app, busy};

type Db = AsyncTestDb<Conn>;
type Pool = diesel_async::pooled_connection::deadpool::Pool<Conn>;

/// `$body` (a `Result<_, Problem>`), `$conn` a connection from `$pool`: its value, or
/// the handler returns its problem.
macro_rules! with_conn {
    ($pool:ident, |$conn:ident| $body:expr) => {{
        let $conn = &mut *$pool.get().await?;
        let result: Result<_, diesel_occ_axum::Problem> = $body;
        result?
    }};
}

/// A diesel-async call's result, awaited.
macro_rules! done {
    ($call:expr) => {
        $call.await
    };
}

/// `Preconditions::write_async` with the default retry policy, on the `$entity` keyed
/// `$id` as each attempt reads it; the closure gets it (`None`: absent).
macro_rules! write_row {
    ($preconditions:ident, $pool:ident, $entity:ty, $id:ident, |$conn:ident, $current:ident| $body:expr) => {
        $preconditions
            .write_async(
                &$pool,
                &diesel_occ::retry::RetryPolicy::new(),
                async |conn, attempt| attempt.find::<$entity>(conn, $id).await,
                async |$conn, $current: Option<$entity>| $body,
            )
            .await?
    };
}

#[path = "handlers.rs"]
mod handlers;

/// A fresh database holding the seed, and a pool of `size` connections to it that waits
/// 100 ms for a free one.
async fn seeded(test: &str, size: usize) -> Option<(Db, Pool)> {
    crate::observe::interested_everywhere();
    let db = Db::create(test).await?;
    db.conn().await.batch_execute(SEED).await.expect("seed");
    let manager = AsyncDieselConnectionManager::<Conn>::new(db.url());
    let pool = Pool::builder(manager)
        .max_size(size)
        .wait_timeout(Some(Duration::from_millis(100)))
        .runtime(deadpool::Runtime::Tokio1)
        .build()
        .expect("a pool");
    Some((db, pool))
}

http_scenarios!(app, busy);
