//! MySQL/MariaDB: `MysqlConnection` and `AsyncMysqlConnection` (feature `mysql`).

use diesel::mysql::MysqlConnection;

pub(crate) type Conn = MysqlConnection;
pub(crate) type AsyncConn = diesel_async::AsyncMysqlConnection;

crate::blocking::blocking_strategies!();
crate::asynchronous::asynchronous_strategy!();

/// The serializable strategy's connections run at SERIALIZABLE (InnoDB then reads with
/// shared locks, and concurrent writers deadlock; the loop retries error 1213).
pub(crate) fn connect(url: &str, strategy: Strategy) -> Result<Conn, String> {
    let mut conn = Conn::establish(url).map_err(|e| e.to_string())?;
    if strategy == Strategy::Serializable {
        diesel::sql_query("SET SESSION TRANSACTION ISOLATION LEVEL SERIALIZABLE")
            .execute(&mut conn)
            .map_err(|e| e.to_string())?;
    }
    Ok(conn)
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

/// A transaction at SERIALIZABLE (set on the connection): plain read, write.
fn serializable_once(conn: &mut Conn, key: i32) -> Once {
    conn.transaction(|conn| {
        let stock = read(conn, key)?;
        read_write(conn, stock)
    })
}
