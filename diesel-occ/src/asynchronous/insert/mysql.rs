//! MySQL and MariaDB have no conditional upsert: the `INSERT`, then on a duplicate key
//! the checked `UPDATE`.

use diesel::query_builder::{AsChangeset, InsertStatement, IntoUpdateTarget};
use diesel::query_dsl::methods::FilterDsl;
use diesel::{Insertable, OptionalExtension, Table};
use diesel_async::methods::{ExecuteDsl, LoadQuery};
use diesel_async::{AsyncConnection, RunQueryDsl};

use super::AsyncUpsertBackend;
use crate::error::{Error, insert_error};
use crate::statement::{CachedUpdate, CurrentToken};
use crate::versioned::{KeyGuarded, TokenIs, VersionedParts, key_guarded};

/// MySQL and MariaDB: the `INSERT`, and on a duplicate key the checked `UPDATE`, as
/// the blocking upsert runs them.
impl<T, Conn> AsyncUpsertBackend<T, Conn> for diesel::mysql::Mysql
where
    T: VersionedParts + Insertable<T::Table> + Clone + Send,
    T::Table: Table + Default,
    Conn: AsyncConnection,
    InsertStatement<T::Table, <T as Insertable<T::Table>>::Values>: ExecuteDsl<Conn> + Send,
    T::FindQuery: FilterDsl<TokenIs<T>>,
    KeyGuarded<T>: IntoUpdateTarget + Clone,
    T::Changes: AsChangeset<Target = <KeyGuarded<T> as diesel::associations::HasTable>::Table>,
    CachedUpdate<KeyGuarded<T>, T::Changes>: ExecuteDsl<Conn> + Send,
    CurrentToken<T::TokenQuery>: LoadQuery<'static, Conn, T::Token> + Send,
    T::TokenQuery: Send + 'static,
{
    async fn upsert(
        conn: &mut Conn,
        row: T,
        expected: Option<T::Token>,
        fresh: T::Token,
    ) -> Result<Option<T::Token>, Error> {
        let key = row.key();
        // Twice at most, as the blocking upsert does.
        for _ in 0..2 {
            let insert = diesel::insert_into(T::Table::default()).values(row.clone());
            let taken = match ExecuteDsl::execute(insert, conn).await {
                Ok(_) => return Ok(Some(row.token().clone())),
                Err(error) => insert_error(error, T::sql_table_name(), Some(T::entity_key(&key))),
            };
            if !matches!(taken, Error::UniqueViolation(_)) {
                return Err(taken);
            }
            // The checked UPDATE first: on success, no read.
            if let Some(expected) = expected.as_ref() {
                let update =
                    CachedUpdate::new(key_guarded::<T>(key.clone(), expected), row.changes(&fresh))
                        .bounded();
                if ExecuteDsl::execute(update, conn).await? > 0 {
                    return Ok(Some(fresh.clone()));
                }
            }
            let query = CurrentToken::new(T::token_query(key.clone()), false);
            let current = RunQueryDsl::get_result::<T::Token>(query, &mut *conn)
                .await
                .optional()?;
            match (current, expected.as_ref()) {
                // A row holding another token, or any row when none was expected.
                (Some(_), _) => return Ok(None),
                // Deleted since the duplicate key: insert again.
                (None, Some(_)) => continue,
                // No row of this key: the duplicate was another unique value's.
                (None, None) => return Err(taken),
            }
        }
        Ok(None)
    }
}
