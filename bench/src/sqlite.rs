//! SQLite: `SqliteConnection` and `SyncConnectionWrapper<SqliteConnection>`, on a
//! file in WAL mode with a busy timeout.

use diesel::sqlite::SqliteConnection;

pub(crate) type Conn = SqliteConnection;
/// Its blocking calls run in place or on the blocking pool, as the async setup says.
pub(crate) type AsyncConn = diesel_async::sync_connection_wrapper::SyncConnectionWrapper<
    SqliteConnection,
    crate::asynchronous::SqliteRuntime,
>;

crate::blocking::blocking_strategies!();
crate::asynchronous::asynchronous_strategy!();

/// Per-connection settings: wait for the write lock instead of failing at once.
pub(crate) const PRAGMAS: &str =
    "PRAGMA journal_mode = WAL; PRAGMA busy_timeout = 10000; PRAGMA synchronous = NORMAL;";

pub(crate) fn connect(url: &str, _strategy: Strategy) -> Result<Conn, String> {
    use diesel::connection::SimpleConnection;
    let mut conn = Conn::establish(url).map_err(|e| e.to_string())?;
    conn.batch_execute(PRAGMAS).map_err(|e| e.to_string())?;
    Ok(conn)
}

/// SQLite has no `FOR UPDATE`: `BEGIN IMMEDIATE` takes the write lock before the read.
fn pessimistic_once(conn: &mut Conn, key: i32) -> Once {
    conn.immediate_transaction(|conn| {
        let stock = read(conn, key)?;
        read_write(conn, stock)
    })
}

/// SQLite transactions are serializable: a deferred `BEGIN`, the read, then the write,
/// which fails with SQLITE_BUSY when another writer committed since the read.
fn serializable_once(conn: &mut Conn, key: i32) -> Once {
    conn.transaction(|conn| {
        let stock = read(conn, key)?;
        read_write(conn, stock)
    })
}
