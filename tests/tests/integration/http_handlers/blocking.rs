//! The routes on blocking connections from an r2d2 pool: each handler runs its
//! database work in `spawn_blocking`, the write through `Preconditions::write`.

use std::time::Duration;

use diesel::connection::SimpleConnection;
use diesel::r2d2::ConnectionManager;
use diesel_occ::prelude::*;
use diesel_occ_axum::Problem;
use diesel_occ_tests::TestDb;

use super::super::SEED;
use super::Conn;
use handlers::{app, busy};

type Db = TestDb<Conn>;
type Pool = diesel::r2d2::Pool<ConnectionManager<Conn>>;

/// Runs `work` where blocking is allowed.
async fn blocking<R: Send + 'static>(
    work: impl FnOnce() -> Result<R, Problem> + Send + 'static,
) -> Result<R, Problem> {
    tokio::task::spawn_blocking(work)
        .await
        .map_err(|_| Problem::internal())?
}

/// `$body` (a `Result<_, Problem>`) in `spawn_blocking`, `$conn` a connection from
/// `$pool`: its value, or the handler returns its problem.
macro_rules! with_conn {
    ($pool:ident, |$conn:ident| $body:expr) => {
        blocking(move || {
            let $conn = &mut *$pool.get()?;
            $body
        })
        .await?
    };
}

/// A blocking call's result, as it returns.
macro_rules! done {
    ($call:expr) => {
        $call
    };
}

/// `Preconditions::write` in `spawn_blocking`, with the default retry policy, on the
/// `$entity` keyed `$id` as each attempt reads it; the closure gets it (`None`: absent).
macro_rules! write_row {
    ($preconditions:ident, $pool:ident, $entity:ty, $id:ident, |$conn:ident, $current:ident| $body:expr) => {
        blocking(move || {
            $preconditions.write(
                &$pool,
                &diesel_occ::retry::RetryPolicy::new(),
                |conn, attempt| attempt.find::<$entity>(conn, $id),
                |$conn, $current: Option<$entity>| $body,
            )
        })
        .await?
    };
}

#[path = "handlers.rs"]
mod handlers;

/// A fresh database holding the seed, and a pool of `size` connections to it. r2d2 waits
/// as long to open them as to hand one out: 30 s, but only 100 ms for the busy test's
/// pool of one, whose checkout must fail fast.
async fn seeded(test: &str, size: u32) -> Option<(Db, Pool)> {
    crate::observe::interested_everywhere();
    let db = Db::create(test)?;
    db.conn().batch_execute(SEED).expect("seed");
    let wait = Duration::from_millis(if size == 1 { 100 } else { 30_000 });
    let pool = Pool::builder()
        .max_size(size)
        .connection_timeout(wait)
        .build(ConnectionManager::<Conn>::new(db.url()))
        .expect("a pool");
    Some((db, pool))
}

http_scenarios!(app, busy);
