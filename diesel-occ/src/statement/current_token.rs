//! [`CurrentToken`]: the read that classifies a zero-row write.

use diesel::backend::Backend;
use diesel::query_builder::{AstPass, Query, QueryFragment, QueryId};
use diesel::{QueryResult, RunQueryDsl};

use crate::dialect::Dialect;

/// The classifying read of a zero-row write: `SELECT token FROM t WHERE <key>`, with a
/// shared row lock on PostgreSQL (`FOR SHARE`) and MySQL (`LOCK IN SHARE MODE`) when
/// `lock` is set.
///
/// Inside a REPEATABLE READ transaction a plain SELECT reads the transaction's snapshot,
/// while the UPDATE that matched nothing read the latest committed row: the snapshot's
/// token can be the very token the caller expected. A locking read returns the latest
/// committed row on MySQL, and on PostgreSQL fails with a serialization failure when
/// the row changed after the snapshot (transient: a retry restarts the transaction).
/// SQLite has no row locks and needs none: its writer sees the latest row.
///
/// It appears in the bounds of the checked operations
/// (`CurrentToken<T::TokenQuery>: LoadQuery<..>`), which code generic over the
/// connection or the entity repeats; it is never built outside this crate.
#[derive(Debug, Clone, Copy)]
pub struct CurrentToken<Q> {
    query: Q,
    lock: bool,
}

impl<Q> CurrentToken<Q> {
    pub(crate) fn new(query: Q, lock: bool) -> Self {
        CurrentToken { query, lock }
    }
}

/// The locking clause `CurrentToken` appends on `DB`: empty where there is none.
fn locking_clause<DB: 'static>() -> &'static str {
    match Dialect::of::<DB>() {
        Some(Dialect::Postgres) => " FOR SHARE",
        // MariaDB does not accept MySQL 8's `FOR SHARE`; both accept this.
        Some(Dialect::Mysql) => " LOCK IN SHARE MODE",
        Some(Dialect::Sqlite) | None => "",
    }
}

impl<Q: Query> Query for CurrentToken<Q> {
    type SqlType = Q::SqlType;
}

impl<Q, DB> QueryFragment<DB> for CurrentToken<Q>
where
    DB: Backend + 'static,
    Q: QueryFragment<DB>,
{
    fn walk_ast<'b>(&'b self, mut pass: AstPass<'_, 'b, DB>) -> QueryResult<()> {
        self.query.walk_ast(pass.reborrow())?;
        if self.lock {
            pass.push_sql(locking_clause::<DB>());
        }
        Ok(())
    }
}

impl<Q> QueryId for CurrentToken<Q> {
    // The SQL depends on `lock`: cached by its text, not by type.
    type QueryId = ();
    const HAS_STATIC_QUERY_ID: bool = false;
}

impl<Q, Conn> RunQueryDsl<Conn> for CurrentToken<Q> {}
