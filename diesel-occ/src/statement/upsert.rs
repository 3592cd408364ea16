//! [`ConditionalUpsert`]: `INSERT ... ON CONFLICT (<key>) DO UPDATE SET ... WHERE
//! token = <expected> RETURNING token`, the one statement of a checked upsert on
//! PostgreSQL and SQLite.
//!
//! Diesel builds this statement too, but its upsert types live in private modules, so
//! generic code cannot name them in the bounds a checked write needs; this one renders
//! the same SQL from parts that can be named: Diesel's `INSERT`, the key's SQL names,
//! the entity's changeset and the token predicate.

use std::marker::PhantomData;

use diesel::backend::Backend;
use diesel::query_builder::{AstPass, Query, QueryFragment, QueryId};
use diesel::{Expression, QueryResult, RunQueryDsl};

/// What a conditional upsert does when the key is taken.
#[derive(Debug, Clone)]
pub enum OnTaken<Changeset, Predicate> {
    /// `DO NOTHING`: the caller expected no row.
    Nothing,
    /// `DO UPDATE SET <changeset> WHERE <predicate>`: the caller expected the row to
    /// hold a token, which the predicate compares.
    Update(Changeset, Predicate),
}

/// `<insert> ON CONFLICT (<key columns>) <action> RETURNING <token column>`: loads the
/// token the row holds after the statement, or nothing when the row was left alone.
#[derive(Debug, Clone)]
pub struct ConditionalUpsert<Insert, Changeset, Predicate, TokenColumn> {
    insert: Insert,
    key_columns: &'static [&'static str],
    action: OnTaken<Changeset, Predicate>,
    token_column: PhantomData<TokenColumn>,
}

impl<Insert, Changeset, Predicate, TokenColumn>
    ConditionalUpsert<Insert, Changeset, Predicate, TokenColumn>
{
    pub(crate) fn new(
        insert: Insert,
        key_columns: &'static [&'static str],
        action: OnTaken<Changeset, Predicate>,
        token_column: TokenColumn,
    ) -> Self {
        let _ = token_column;
        ConditionalUpsert {
            insert,
            key_columns,
            action,
            token_column: PhantomData,
        }
    }
}

impl<Insert, Changeset, Predicate, TokenColumn> Query
    for ConditionalUpsert<Insert, Changeset, Predicate, TokenColumn>
where
    TokenColumn: Expression,
{
    type SqlType = TokenColumn::SqlType;
}

impl<Insert, Changeset, Predicate, TokenColumn, DB> QueryFragment<DB>
    for ConditionalUpsert<Insert, Changeset, Predicate, TokenColumn>
where
    DB: Backend,
    Insert: QueryFragment<DB>,
    Changeset: QueryFragment<DB>,
    Predicate: QueryFragment<DB>,
    TokenColumn: diesel::Column,
{
    fn walk_ast<'b>(&'b self, mut pass: AstPass<'_, 'b, DB>) -> QueryResult<()> {
        self.insert.walk_ast(pass.reborrow())?;
        pass.push_sql(" ON CONFLICT (");
        for (i, column) in self.key_columns.iter().enumerate() {
            if i > 0 {
                pass.push_sql(", ");
            }
            pass.push_identifier(column)?;
        }
        pass.push_sql(")");
        match &self.action {
            OnTaken::Nothing => pass.push_sql(" DO NOTHING"),
            OnTaken::Update(changeset, predicate) => {
                pass.push_sql(" DO UPDATE SET ");
                changeset.walk_ast(pass.reborrow())?;
                pass.push_sql(" WHERE ");
                predicate.walk_ast(pass.reborrow())?;
            }
        }
        pass.push_sql(" RETURNING ");
        pass.push_identifier(TokenColumn::NAME)
    }
}

impl<Insert, Changeset, Predicate, TokenColumn> QueryId
    for ConditionalUpsert<Insert, Changeset, Predicate, TokenColumn>
{
    // The text depends on the action and on which `Option` fields are set: cached by
    // its text.
    type QueryId = ();
    const HAS_STATIC_QUERY_ID: bool = false;
}

impl<Insert, Changeset, Predicate, TokenColumn, Conn> RunQueryDsl<Conn>
    for ConditionalUpsert<Insert, Changeset, Predicate, TokenColumn>
{
}

#[cfg(test)]
mod tests {
    use diesel::pg::Pg;
    use diesel::prelude::*;
    use diesel::query_builder::AsChangeset;
    use diesel::sqlite::Sqlite;
    use diesel::{debug_query, insert_into};

    use super::{ConditionalUpsert, OnTaken};

    diesel::table! { stock (id) { id -> Integer, available -> Integer, version -> Integer } }

    #[test]
    fn renders_the_conditional_update_and_the_do_nothing() {
        let insert = || insert_into(stock::table).values((stock::id.eq(1), stock::version.eq(1)));
        let update = ConditionalUpsert::new(
            insert(),
            &["id"],
            OnTaken::Update(
                (stock::available.eq(3), stock::version.eq(8)).as_changeset(),
                stock::version.eq(7),
            ),
            stock::version,
        );
        assert_eq!(
            debug_query::<Pg, _>(&update).to_string(),
            r#"INSERT INTO "stock" ("id", "version") VALUES ($1, $2) ON CONFLICT ("id") DO UPDATE SET "available" = $3, "version" = $4 WHERE ("stock"."version" = $5) RETURNING "version" -- binds: [1, 1, 3, 8, 7]"#
        );
        let nothing = ConditionalUpsert::<_, (), (), _>::new(
            insert(),
            &["id"],
            OnTaken::Nothing,
            stock::version,
        );
        assert_eq!(
            debug_query::<Sqlite, _>(&nothing).to_string(),
            "INSERT INTO `stock` (`id`, `version`) VALUES (?, ?) ON CONFLICT (`id`) DO NOTHING RETURNING `version` -- binds: [1, 1]"
        );
    }
}
