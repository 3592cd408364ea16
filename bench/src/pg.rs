//! PostgreSQL: `PgConnection` and `AsyncPgConnection`.

use diesel::pg::PgConnection;

pub(crate) type Conn = PgConnection;
pub(crate) type AsyncConn = diesel_async::AsyncPgConnection;

crate::blocking::blocking_strategies!();
crate::asynchronous::asynchronous_strategy!();

pub(crate) fn connect(url: &str, _strategy: Strategy) -> Result<Conn, String> {
    Conn::establish(url).map_err(|e| e.to_string())
}

/// `SELECT ... FOR UPDATE` in a transaction, then the write.
fn pessimistic_once(conn: &mut Conn, key: i32) -> Once {
    conn.transaction(|conn| {
        let stock: Stock = bench_stock::table
            .find(key)
            .select(Stock::as_select())
            .for_update()
            .get_result(conn)?;
        read_write(conn, stock)
    })
}

/// A SERIALIZABLE transaction: plain read, write; a concurrent writer makes one of them
/// fail with 40001, which the loop retries.
fn serializable_once(conn: &mut Conn, key: i32) -> Once {
    conn.build_transaction().serializable().run(|conn| {
        let stock = read(conn, key)?;
        read_write(conn, stock)
    })
}
