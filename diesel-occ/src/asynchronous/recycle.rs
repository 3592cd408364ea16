//! [`verify_when_idle`]: a deadpool hook that tests a pooled connection with a query
//! only when it has been idle for a while.

use std::time::Duration;

use deadpool::managed::{Hook, HookError};
use diesel::IntoSql;
use diesel::sql_types::Integer;
use diesel_async::RunQueryDsl;
use diesel_async::methods::LoadQuery;
use diesel_async::pooled_connection::{
    AsyncDieselConnectionManager, PoolError, PoolableConnection,
};

/// A deadpool `pre_recycle` hook that runs `SELECT 1` on a pooled connection before
/// handing it out only when the connection has not been used for `idle` or longer; a
/// connection that fails it is dropped and the pool hands out (or opens) another.
///
/// diesel-async's `RecyclingMethod::Verified` runs that query at every checkout, and
/// the retry helpers check a connection out for every attempt: one more round trip
/// per attempt (three statements for a read and a save instead of two; what that costs:
/// [`guide::tuning`](crate::guide::tuning)). `RecyclingMethod::Fast` runs no query, which is safe where the driver notices a
/// connection the server closed (PostgreSQL) but not on MySQL/MariaDB, where a pooled
/// `AsyncMysqlConnection` whose session was killed (a `wait_timeout`, a failover, a
/// `KILL`) is handed out again. With `Fast` and this hook, a connection back from
/// work less than `idle` ago is handed out at once, and one that sat idle is tested
/// first, which is where a server-side close happens (HikariCP skips its alive check
/// for 500 ms after use on the same reasoning).
///
/// What is left: a session closed within `idle` of its last use is still handed out;
/// its attempt then fails with a connection error, and the retry helper discards the
/// connection instead of returning it to the pool.
///
/// ```
/// use std::time::Duration;
/// use diesel::sqlite::SqliteConnection;
/// use diesel_async::pooled_connection::{AsyncDieselConnectionManager, ManagerConfig, RecyclingMethod};
/// use diesel_async::pooled_connection::deadpool::Pool;
/// use diesel_async::sync_connection_wrapper::SyncConnectionWrapper;
/// use diesel_occ::asynchronous::verify_when_idle;
///
/// type Conn = SyncConnectionWrapper<SqliteConnection>;
///
/// let mut config = ManagerConfig::<Conn>::default();
/// config.recycling_method = RecyclingMethod::Fast;
/// let manager = AsyncDieselConnectionManager::<Conn>::new_with_config(":memory:", config);
/// let pool = Pool::builder(manager)
///     .max_size(4)
///     .pre_recycle(verify_when_idle(Duration::from_millis(500)))
///     .build()
///     .expect("a pool");
/// # drop(pool);
/// ```
pub fn verify_when_idle<C>(idle: Duration) -> Hook<AsyncDieselConnectionManager<C>>
where
    C: PoolableConnection + Send + 'static,
    AsyncDieselConnectionManager<C>: deadpool::managed::Manager<Type = C, Error = PoolError>,
    for<'a> diesel::dsl::select<diesel::dsl::AsExprOf<i32, Integer>>: LoadQuery<'a, C, i32>,
{
    Hook::async_fn(move |conn: &mut C, metrics| {
        let recently_used = metrics.last_used() < idle;
        Box::pin(async move {
            if recently_used {
                return Ok(());
            }
            diesel::select(1_i32.into_sql::<Integer>())
                .get_result::<i32>(conn)
                .await
                .map(drop)
                .map_err(|error| HookError::Backend(PoolError::QueryError(error)))
        })
    })
}
