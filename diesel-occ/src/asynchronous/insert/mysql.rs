//! MySQL and MariaDB have no conditional insert that says what it did: the `INSERT`,
//! then on a duplicate key a locking read of the row's token. The twin of the blocking
//! one.

use diesel::associations::HasTable;
use diesel::query_builder::{AsChangeset, InsertStatement, IntoUpdateTarget};
use diesel::query_dsl::methods::FilterDsl;
use diesel::{Insertable, OptionalExtension, Table};
use diesel_async::methods::{ExecuteDsl, LoadQuery};
use diesel_async::{AsyncConnection, RunQueryDsl};

use super::{AsyncUpsertBackend, run_upsert_update};
use crate::error::{Error, unique_error};
use crate::insert::UpsertUpdate;
use crate::statement::CurrentToken;
use crate::versioned::{KeyGuarded, TokenIs, VersionedParts};

impl<T, Conn> AsyncUpsertBackend<T, Conn> for diesel::mysql::Mysql
where
    T: VersionedParts + Insertable<T::Table> + Clone + Send,
    T::Table: Table + Default,
    Conn: AsyncConnection,
    InsertStatement<T::Table, <T as Insertable<T::Table>>::Values>: ExecuteDsl<Conn> + Send,
    T::FindQuery: FilterDsl<TokenIs<T>>,
    KeyGuarded<T>: IntoUpdateTarget + Clone,
    T::Changes: AsChangeset<Target = <KeyGuarded<T> as HasTable>::Table>,
    UpsertUpdate<T>: ExecuteDsl<Conn> + Send,
    CurrentToken<T::TokenQuery>: LoadQuery<'static, Conn, T::Token> + Send,
    T::TokenQuery: Send + 'static,
{
    async fn upsert(
        conn: &mut Conn,
        row: T,
        expected: Option<T::Token>,
        fresh: T::Token,
    ) -> Result<Option<T::Token>, Error> {
        if let Some(expected) = expected {
            return run_upsert_update(conn, row, expected, fresh).await;
        }
        let key = row.key();
        // Twice at most, as the blocking upsert does.
        let mut inserted_again = false;
        loop {
            let insert = diesel::insert_into(T::Table::default()).values(row.clone());
            let taken = match ExecuteDsl::execute(insert, conn).await {
                Ok(_) => return Ok(Some(row.token().clone())),
                Err(error) => unique_error(error, T::sql_table_name(), Some(T::entity_key(&key))),
            };
            if !matches!(taken, Error::UniqueViolation(_)) || inserted_again {
                return Err(taken);
            }
            // Locking: inside a REPEATABLE READ transaction a plain read sees the
            // snapshot, which may predate the row the INSERT met.
            let query = CurrentToken::new(T::token_query(key.clone()), true);
            let current = RunQueryDsl::get_result::<T::Token>(query, &mut *conn)
                .await
                .optional()?;
            if current.is_some() {
                return Ok(None);
            }
            inserted_again = true;
        }
    }
}
