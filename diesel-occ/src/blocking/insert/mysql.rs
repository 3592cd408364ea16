//! MySQL and MariaDB have no conditional insert that says what it did: the `INSERT`,
//! then on a duplicate key a locking read of the row's token.

use diesel::associations::HasTable;
use diesel::connection::Connection;
use diesel::query_builder::{AsChangeset, InsertStatement, IntoUpdateTarget};
use diesel::query_dsl::methods::{ExecuteDsl, FilterDsl};
use diesel::query_dsl::{LoadQuery, RunQueryDsl};
use diesel::{Insertable, OptionalExtension, Table};

use super::{UpsertBackend, run_upsert_update};
use crate::error::{Error, unique_error};
use crate::insert::UpsertUpdate;
use crate::statement::CurrentToken;
use crate::versioned::{KeyGuarded, TokenIs, VersionedParts};

/// MySQL and MariaDB: the checked `UPDATE` when a token is expected; else the `INSERT`
/// and, on a duplicate key, a locking read of the row's token.
impl<T, Conn> UpsertBackend<T, Conn> for diesel::mysql::Mysql
where
    T: VersionedParts + Insertable<T::Table> + Clone,
    T::Table: Table + Default,
    Conn: Connection,
    InsertStatement<T::Table, <T as Insertable<T::Table>>::Values>: ExecuteDsl<Conn>,
    T::FindQuery: FilterDsl<TokenIs<T>>,
    KeyGuarded<T>: IntoUpdateTarget + Clone,
    T::Changes: AsChangeset<Target = <KeyGuarded<T> as HasTable>::Table>,
    UpsertUpdate<T>: ExecuteDsl<Conn>,
    CurrentToken<T::TokenQuery>: LoadQuery<'static, Conn, T::Token>,
{
    fn upsert(
        conn: &mut Conn,
        row: T,
        expected: Option<&T::Token>,
        fresh: &T::Token,
    ) -> Result<Option<T::Token>, Error> {
        if let Some(expected) = expected {
            return run_upsert_update(conn, &row, expected, fresh);
        }
        let key = row.key();
        // Twice at most: a row deleted between the duplicate key and the read is
        // inserted again; a duplicate key with no row of this key is another unique
        // value's, returned as such.
        let mut inserted_again = false;
        loop {
            let insert = diesel::insert_into(T::Table::default()).values(row.clone());
            let taken = match ExecuteDsl::execute(insert, conn) {
                Ok(_) => return Ok(Some(row.token().clone())),
                Err(error) => unique_error(error, T::sql_table_name(), Some(T::entity_key(&key))),
            };
            if !matches!(taken, Error::UniqueViolation(_)) || inserted_again {
                return Err(taken);
            }
            // Locking: inside a REPEATABLE READ transaction a plain read sees the
            // snapshot, which may predate the row the INSERT met.
            let current = CurrentToken::new(T::token_query(key.clone()), true)
                .get_result::<T::Token>(conn)
                .optional()?;
            if current.is_some() {
                return Ok(None);
            }
            inserted_again = true;
        }
    }
}
