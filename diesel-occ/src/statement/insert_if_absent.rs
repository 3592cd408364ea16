//! [`InsertIfAbsent`]: `INSERT ... ON CONFLICT (<key>) DO NOTHING RETURNING token`, the
//! statement of a checked upsert that expects no row, on PostgreSQL and SQLite.
//!
//! Diesel builds this statement too, but its upsert types live in private modules, so
//! generic code cannot name them in the bounds a checked write needs; this one renders
//! the same SQL from parts that can be named: Diesel's `INSERT`, the key's SQL names and
//! the token column.

use std::marker::PhantomData;

use diesel::backend::Backend;
use diesel::query_builder::{AstPass, Query, QueryFragment, QueryId};
use diesel::{Expression, QueryResult, RunQueryDsl};

/// `<insert> ON CONFLICT (<key columns>) DO NOTHING RETURNING <token column>`: loads the
/// token of the row it inserted, or nothing when a row with the key exists.
///
/// Its text varies with the `Option` fields of the row (SQLite leaves the unset ones
/// out), so it is kept in Diesel's statement cache only when the caller says its text
/// is one of few (the row's `Option` fields all `Some` or all `None`); any other text
/// is prepared for one execution.
#[derive(Debug)]
pub struct InsertIfAbsent<Insert, TokenColumn> {
    insert: Insert,
    key_columns: &'static [&'static str],
    /// Whether Diesel's statement cache keeps the text.
    cached: bool,
    token_column: PhantomData<TokenColumn>,
}

impl<Insert, TokenColumn> InsertIfAbsent<Insert, TokenColumn> {
    /// The statement, kept in the statement cache when `cached`.
    pub(crate) fn new(insert: Insert, key_columns: &'static [&'static str], cached: bool) -> Self {
        InsertIfAbsent {
            insert,
            key_columns,
            cached,
            token_column: PhantomData,
        }
    }
}

impl<Insert, TokenColumn> Query for InsertIfAbsent<Insert, TokenColumn>
where
    TokenColumn: Expression,
{
    type SqlType = TokenColumn::SqlType;
}

impl<Insert, TokenColumn, DB> QueryFragment<DB> for InsertIfAbsent<Insert, TokenColumn>
where
    DB: Backend,
    Insert: QueryFragment<DB>,
    TokenColumn: diesel::Column,
{
    fn walk_ast<'b>(&'b self, mut pass: AstPass<'_, 'b, DB>) -> QueryResult<()> {
        if !self.cached {
            pass.unsafe_to_cache_prepared();
        }
        self.insert.walk_ast(pass.reborrow())?;
        pass.push_sql(" ON CONFLICT (");
        for (i, column) in self.key_columns.iter().enumerate() {
            if i > 0 {
                pass.push_sql(", ");
            }
            pass.push_identifier(column)?;
        }
        pass.push_sql(") DO NOTHING RETURNING ");
        pass.push_identifier(TokenColumn::NAME)
    }
}

impl<Insert, TokenColumn> QueryId for InsertIfAbsent<Insert, TokenColumn> {
    // The text depends on which `Option` fields are set: cached by its text, if at all.
    type QueryId = ();
    const HAS_STATIC_QUERY_ID: bool = false;
}

impl<Insert, TokenColumn, Conn> RunQueryDsl<Conn> for InsertIfAbsent<Insert, TokenColumn> {}

#[cfg(test)]
mod tests {
    use diesel::pg::Pg;
    use diesel::prelude::*;
    use diesel::sqlite::Sqlite;
    use diesel::{debug_query, insert_into};

    use super::InsertIfAbsent;

    diesel::table! { stock (id) { id -> Integer, available -> Integer, version -> Integer } }

    #[test]
    fn renders_the_insert_that_leaves_a_taken_key_alone() {
        let insert = || insert_into(stock::table).values((stock::id.eq(1), stock::version.eq(1)));
        let statement = InsertIfAbsent::<_, stock::version>::new(insert(), &["id"], true);
        assert_eq!(
            debug_query::<Pg, _>(&statement).to_string(),
            r#"INSERT INTO "stock" ("id", "version") VALUES ($1, $2) ON CONFLICT ("id") DO NOTHING RETURNING "version" -- binds: [1, 1]"#
        );
        let statement = InsertIfAbsent::<_, stock::version>::new(insert(), &["id"], true);
        assert_eq!(
            debug_query::<Sqlite, _>(&statement).to_string(),
            "INSERT INTO `stock` (`id`, `version`) VALUES (?, ?) ON CONFLICT (`id`) DO NOTHING RETURNING `version` -- binds: [1, 1]"
        );
    }
}
