//! [`BatchUpdates`]: the guarded UPDATEs of a batch sent to PostgreSQL as one statement.

use diesel::QueryResult;
use diesel::backend::Backend;
use diesel::query_builder::{AstPass, Query, QueryFragment, QueryId};
use diesel::sql_types::Integer;

use crate::dialect::Dialect;

/// At most this many UPDATEs go into one statement. PostgreSQL's planning time for a
/// statement of N data-modifying `WITH` queries grows about linearly up to 64 of them
/// (some 25 us each, measured on PostgreSQL 15) and much faster beyond (about 20 ms for
/// 100, 0.4 s for 500): past 64 entities a batch is several statements, still one
/// round trip per 64 entities. 64 UPDATEs also stay far below the 65 535 bind
/// parameters of a statement (an UPDATE binds at most 129: Diesel's widest table).
pub(crate) const MAX_UPDATES_PER_STATEMENT: usize = 64;

/// The guarded UPDATEs of a batch as ONE PostgreSQL statement, each a data-modifying
/// `WITH` query that returns its position for every row it wrote:
///
/// ```sql
/// WITH "occ_0" AS (UPDATE t SET ... WHERE <key 0> AND token = <expected 0> RETURNING 0),
///      "occ_1" AS (UPDATE t SET ... WHERE <key 1> AND token = <expected 1> RETURNING 1)
/// SELECT * FROM "occ_0" UNION ALL SELECT * FROM "occ_1"
/// ```
///
/// One round trip for up to `MAX_UPDATES_PER_STATEMENT` (64) entities, and still one
/// row count per entity: a position
/// missing from the result is an UPDATE that matched no row (stale or deleted), a
/// position returned twice an UPDATE that matched two rows. Each UPDATE is exactly the
/// statement a single `save_checked` runs (the same `SET`, the same guarded `WHERE`),
/// so it sees the row as that statement would: under READ COMMITTED an UPDATE that
/// waited for another writer's row lock re-checks its token against the committed row.
///
/// The statement holds all of its UPDATEs or none of them, but a batch needs more than
/// that: `save_all_checked` runs it inside its transaction and rolls back when any
/// position is missing, so that nothing is written. The data-modifying queries of one
/// statement all read the same snapshot, so a batch that holds one row twice is never
/// sent this way (the batch falls back to one statement per entity, in order).
///
/// The SQL text depends on the number of UPDATEs, so it is prepared for one execution
/// and never kept in the connection's statement cache. Built by the batch saves only;
/// it appears in the bounds of [`GuardedUpdate`](super::GuardedUpdate) for
/// [`CachedUpdate`](super::CachedUpdate), which every Diesel backend satisfies.
#[derive(Debug)]
pub struct BatchUpdates<S> {
    updates: Vec<S>,
}

impl<S> BatchUpdates<S> {
    pub(crate) fn new(updates: Vec<S>) -> Self {
        BatchUpdates { updates }
    }
}

/// Whether a batch of `len` UPDATEs on `DB` is sent as [`BatchUpdates`]: on PostgreSQL,
/// for two or more. MySQL/MariaDB and SQLite accept no UPDATE inside `WITH`.
pub(crate) fn one_statement<DB: 'static>(len: usize) -> bool {
    len > 1 && Dialect::of::<DB>() == Some(Dialect::Postgres)
}

/// The rows written by each UPDATE of a [`BatchUpdates`], counted from the positions
/// it returned.
pub(crate) fn count_written(written: &mut [usize], positions: &[i32]) {
    for &position in positions {
        let count = usize::try_from(position)
            .ok()
            .and_then(|p| written.get_mut(p));
        if let Some(count) = count {
            *count = count.saturating_add(1);
        }
    }
}

impl<S> Query for BatchUpdates<S> {
    type SqlType = Integer;
}

/// No static id: the text depends on the number of UPDATEs and on their own texts.
impl<S> QueryId for BatchUpdates<S> {
    type QueryId = ();
    const HAS_STATIC_QUERY_ID: bool = false;
}

impl<S, DB> QueryFragment<DB> for BatchUpdates<S>
where
    DB: Backend,
    S: QueryFragment<DB>,
{
    fn walk_ast<'b>(&'b self, mut out: AstPass<'_, 'b, DB>) -> QueryResult<()> {
        // One text per batch size: never worth a slot in the statement cache.
        out.unsafe_to_cache_prepared();
        out.push_sql("WITH ");
        for (position, update) in self.updates.iter().enumerate() {
            if position > 0 {
                out.push_sql(", ");
            }
            out.push_sql(&format!("\"occ_{position}\" AS ("));
            update.walk_ast(out.reborrow())?;
            out.push_sql(&format!(" RETURNING {position})"));
        }
        for position in 0..self.updates.len() {
            out.push_sql(if position == 0 { " " } else { " UNION ALL " });
            out.push_sql(&format!("SELECT * FROM \"occ_{position}\""));
        }
        Ok(())
    }
}

impl<S, Conn> diesel::RunQueryDsl<Conn> for BatchUpdates<S> {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn positions_count_the_rows_of_each_update() {
        let mut written = vec![0; 4];
        count_written(&mut written, &[0, 2, 2, 9, -1, 4]);
        assert_eq!(written, [1, 0, 2, 0]);
    }
}
