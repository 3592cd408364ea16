//! MySQL and MariaDB have no conditional upsert: the `INSERT`, then on a duplicate key
//! the checked `UPDATE`.

use diesel::connection::Connection;
use diesel::query_builder::{AsChangeset, InsertStatement, IntoUpdateTarget};
use diesel::query_dsl::methods::{ExecuteDsl, FilterDsl};
use diesel::query_dsl::{LoadQuery, RunQueryDsl};
use diesel::{Insertable, OptionalExtension, Table};

use super::UpsertBackend;
use crate::error::{Error, insert_error};
use crate::statement::{CachedUpdate, CurrentToken};
use crate::versioned::{KeyGuarded, TokenIs, VersionedParts, key_guarded};

/// MySQL and MariaDB: the `INSERT`, and on a duplicate key the checked `UPDATE`.
impl<T, Conn> UpsertBackend<T, Conn> for diesel::mysql::Mysql
where
    T: VersionedParts + Insertable<T::Table> + Clone,
    T::Table: Table + Default,
    Conn: Connection,
    InsertStatement<T::Table, <T as Insertable<T::Table>>::Values>: ExecuteDsl<Conn>,
    T::FindQuery: FilterDsl<TokenIs<T>>,
    KeyGuarded<T>: IntoUpdateTarget + Clone,
    T::Changes: AsChangeset<Target = <KeyGuarded<T> as diesel::associations::HasTable>::Table>,
    CachedUpdate<KeyGuarded<T>, T::Changes>: ExecuteDsl<Conn>,
    CurrentToken<T::TokenQuery>: LoadQuery<'static, Conn, T::Token>,
{
    fn upsert(
        conn: &mut Conn,
        row: T,
        expected: Option<&T::Token>,
        fresh: &T::Token,
    ) -> Result<Option<T::Token>, Error> {
        let key = row.key();
        // Twice at most: a row deleted between the duplicate key and the UPDATE is
        // inserted again; a duplicate key with no row of this key is another unique
        // value's, returned as such.
        for _ in 0..2 {
            let taken = match ExecuteDsl::execute(
                diesel::insert_into(T::Table::default()).values(row.clone()),
                conn,
            ) {
                Ok(_) => return Ok(Some(row.token().clone())),
                Err(error) => insert_error(error, T::sql_table_name(), Some(T::entity_key(&key))),
            };
            if !matches!(taken, Error::UniqueViolation(_)) {
                return Err(taken);
            }
            // The checked UPDATE first: on success, no read.
            if let Some(expected) = expected {
                let update =
                    CachedUpdate::new(key_guarded::<T>(key.clone(), expected), row.changes(fresh))
                        .bounded();
                if ExecuteDsl::execute(update, conn)? > 0 {
                    return Ok(Some(fresh.clone()));
                }
            }
            let current = CurrentToken::new(T::token_query(key.clone()), false)
                .get_result::<T::Token>(conn)
                .optional()?;
            match (current, expected) {
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
