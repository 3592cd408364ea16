//! [`SchemaCheck::run_async`]: the start-up check of token columns and keys on an
//! async connection, the twin of [`SchemaCheck::run`].

use diesel::query_builder::{BoxedSqlQuery, SqlQuery};
use diesel_async::AsyncConnection;
use diesel_async::RunQueryDsl;
use diesel_async::methods::LoadQuery;

use crate::error::Error;
use crate::schema_check::{ColumnRow, KeyIndexRow, SchemaBackend, SchemaCheck};

impl SchemaCheck {
    /// [`run`](Self::run) on an async connection: reads each token column's type and
    /// each table's unique indexes and reports every problem at once, as
    /// [`Error::Schema`]. One query per token column and one per table.
    ///
    /// ```
    /// # include!(concat!(env!("CARGO_MANIFEST_DIR"), "/src/doctest_setup.rs"));
    /// use diesel_async::sync_connection_wrapper::SyncConnectionWrapper;
    /// use diesel_occ::schema_check::SchemaCheck;
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), diesel_occ::Error> {
    /// let mut conn: SyncConnectionWrapper<SqliteConnection> = SyncConnectionWrapper::new(connection());
    /// SchemaCheck::new().entity::<Stock>().run_async(&mut conn).await?;
    /// # Ok(())
    /// # }
    /// ```
    pub async fn run_async<Conn>(&self, conn: &mut Conn) -> Result<(), Error>
    where
        Conn: AsyncConnection,
        Conn::Backend: SchemaBackend,
        BoxedSqlQuery<'static, Conn::Backend, SqlQuery>:
            LoadQuery<'static, Conn, ColumnRow> + LoadQuery<'static, Conn, KeyIndexRow>,
    {
        let mut columns = Vec::new();
        for query in self.column_queries::<Conn::Backend>() {
            let rows: Vec<ColumnRow> = query.load(conn).await?;
            columns.push(rows.into_iter().next());
        }
        let mut keys = Vec::new();
        for query in self.key_queries::<Conn::Backend>() {
            keys.push(query.load(conn).await?);
        }
        self.judge(<Conn::Backend as SchemaBackend>::DIALECT, columns, keys)
    }
}
