//! [`ValuesUpdate`]: the guarded UPDATEs of a batch sent to PostgreSQL as ONE statement
//! over a `VALUES` list.

use std::fmt;

use diesel::QueryResult;
use diesel::backend::Backend;
use diesel::query_builder::{AstPass, Query, QueryFragment, QueryId};
use diesel::sql_types::Integer;

use super::Versioned;
use crate::dialect::Dialect;
use crate::statement::batch::{MAX_BINDS_PER_STATEMENT, ValuesColumns};

/// The guarded UPDATEs of a batch as ONE PostgreSQL statement: one `UPDATE ... FROM`
/// over a `VALUES` list holding a row per entity, returning the position of every
/// entity whose row it wrote.
///
/// ```sql
/// UPDATE "accounts"
/// SET "balance" = "occ_v"."occ_c0", "version" = "occ_v"."occ_new"
/// FROM (VALUES (0, $1, $2, $3, $4), (1, $5, $6, $7, $8), ...)
///   AS "occ_v" ("occ_pos", "occ_k0", "occ_c0", "occ_old", "occ_new")
/// WHERE "accounts"."id" = "occ_v"."occ_k0" AND "accounts"."version" = "occ_v"."occ_old"
/// RETURNING "occ_v"."occ_pos"
/// ```
///
/// Each row is what the entity's single `save_checked` binds (its key, the columns it
/// writes, the token it read and the fresh one), bound with the columns' SQL types, so
/// the join compares keys and tokens exactly as the single save's `WHERE` does, and a
/// `NULL` in the first row still has its column's type. An `Option` field whose `None`
/// leaves the column alone adds a presence flag to the row, and its column is set with
/// `CASE WHEN <flag> THEN <value> ELSE <the column> END`: a `NULL` never overwrites a
/// column the single save would have skipped.
///
/// One round trip for the whole batch (a new statement only past PostgreSQL's 65 535
/// bind parameters), planned in time linear in its rows, and still one row count per
/// entity: a position missing from the result is an entity whose row was stale or
/// deleted, a position returned twice a key that matched two rows. Under READ
/// COMMITTED, an entity whose row another writer holds waits for it, then PostgreSQL
/// checks the join again against the committed row (EvalPlanQual): a row whose token
/// changed meanwhile is not written, and its position is missing.
///
/// The statement holds all of its row writes or none of them, but a batch needs more:
/// `save_all_checked` runs it inside its transaction and rolls back when a position is
/// missing, so that nothing is written. A row joined with two `VALUES` rows is written
/// once, so a batch that holds one row twice is never sent this way: it falls back to
/// one statement per entity, in order. So does a batch on MySQL/MariaDB or SQLite, a
/// batch of one entity, and an entity that has no `VALUES` row: one whose token the
/// database generates (read back with `RETURNING`, one UPDATE each) or whose
/// `Versioned` impl is written by hand.
///
/// The SQL text depends on the number of rows, so it is prepared for one execution and
/// never kept in the connection's statement cache. Built by the batch saves only; it
/// appears in the bounds of their impls, which every Diesel backend satisfies.
///
/// ```
/// # include!(concat!(env!("CARGO_MANIFEST_DIR"), "/src/doctest_setup.rs"));
/// use diesel_occ::Versioned;
///
/// # fn main() {
/// // `#[derive(Versioned)]` describes each entity's row of the `VALUES` list: its key,
/// // the columns it writes, the token it read and the fresh one.
/// assert!(<Stock as Versioned>::VALUES_COLUMNS.is_some());
/// let stock = Stock { id: 1, available: 9, deleted: false, version: 1 };
/// assert!(stock.values_row(&2).is_some());
/// # }
/// ```
pub struct ValuesUpdate<T: Versioned> {
    table: T::Table,
    columns: ValuesColumns,
    /// Each entity's position in the batch and its row.
    rows: Vec<(usize, T::ValuesRow)>,
}

impl<T: Versioned> fmt::Debug for ValuesUpdate<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // No binds: they are the entities' values.
        f.debug_struct("ValuesUpdate")
            .field("table", &T::sql_table_name())
            .field("rows", &self.rows.len())
            .finish_non_exhaustive()
    }
}

impl<T> ValuesUpdate<T>
where
    T: Versioned,
    T::Table: Default,
{
    /// The statements that save `entities` with their `fresh` tokens on `DB`, or `None`
    /// when the batch is not sent this way: another backend than PostgreSQL, fewer
    /// than two entities, a row held twice, or an entity without a `VALUES` row.
    pub(crate) fn plan<DB: 'static>(entities: &[T], fresh: &[T::Token]) -> Option<Vec<Self>> {
        let columns = T::VALUES_COLUMNS?;
        if entities.len() < 2 || Dialect::of::<DB>() != Some(Dialect::Postgres) {
            return None;
        }
        if !distinct_keys(entities) {
            return None;
        }
        let rows = entities
            .iter()
            .zip(fresh)
            .map(|(entity, fresh)| entity.values_row(fresh))
            .collect::<Option<Vec<_>>>()?;
        let per_statement = rows_per_statement(columns.binds_per_row());
        let mut statements = Vec::with_capacity(rows.len().div_ceil(per_statement));
        let mut rows = rows.into_iter().enumerate().peekable();
        while rows.peek().is_some() {
            statements.push(ValuesUpdate {
                table: T::Table::default(),
                columns,
                rows: rows.by_ref().take(per_statement).collect(),
            });
        }
        Some(statements)
    }
}

/// How many rows of `binds_per_row` parameters one statement holds.
fn rows_per_statement(binds_per_row: usize) -> usize {
    MAX_BINDS_PER_STATEMENT
        .checked_div(binds_per_row)
        .unwrap_or(MAX_BINDS_PER_STATEMENT)
        .max(1)
}

/// The rows written for each entity of a batch, counted from the positions its
/// statements returned.
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

impl<T: Versioned> Query for ValuesUpdate<T> {
    type SqlType = Integer;
}

/// No static id: the text depends on the number of rows.
impl<T: Versioned> QueryId for ValuesUpdate<T> {
    type QueryId = ();
    const HAS_STATIC_QUERY_ID: bool = false;
}

/// The alias of the `VALUES` list and the prefix of its columns: the list's columns are
/// named by position, so no name of the table's can clash with them.
const VALUES: &str = "\"occ_v\"";

impl<T, DB> QueryFragment<DB> for ValuesUpdate<T>
where
    DB: Backend,
    T: Versioned,
    T::Table: QueryFragment<DB>,
    T::ValuesRow: QueryFragment<DB>,
{
    fn walk_ast<'b>(&'b self, mut out: AstPass<'_, 'b, DB>) -> QueryResult<()> {
        // One text per batch size: never worth a slot in the statement cache.
        out.unsafe_to_cache_prepared();
        let columns = &self.columns;
        out.push_sql("UPDATE ");
        self.table.walk_ast(out.reborrow())?;
        out.push_sql(" SET ");
        for (i, column) in columns.written.iter().enumerate() {
            out.push_identifier(column.name)?;
            if column.skippable {
                out.push_sql(&format!(" = CASE WHEN {VALUES}.\"occ_p{i}\" THEN "));
                out.push_sql(&format!("{VALUES}.\"occ_c{i}\" ELSE "));
                self.qualified(column.name, out.reborrow())?;
                out.push_sql(" END, ");
            } else {
                out.push_sql(&format!(" = {VALUES}.\"occ_c{i}\", "));
            }
        }
        out.push_identifier(columns.token)?;
        out.push_sql(&format!(" = {VALUES}.\"occ_new\" FROM (VALUES "));
        for (n, (position, row)) in self.rows.iter().enumerate() {
            out.push_sql(&format!("{}({position}, ", if n == 0 { "" } else { ", " }));
            row.walk_ast(out.reborrow())?;
            out.push_sql(")");
        }
        out.push_sql(&format!(") AS {VALUES} (\"occ_pos\""));
        for i in 0..columns.keys.len() {
            out.push_sql(&format!(", \"occ_k{i}\""));
        }
        for (i, column) in columns.written.iter().enumerate() {
            if column.skippable {
                out.push_sql(&format!(", \"occ_p{i}\""));
            }
            out.push_sql(&format!(", \"occ_c{i}\""));
        }
        out.push_sql(", \"occ_old\", \"occ_new\") WHERE ");
        for (i, key) in columns.keys.iter().enumerate() {
            self.qualified(key, out.reborrow())?;
            out.push_sql(&format!(" = {VALUES}.\"occ_k{i}\" AND "));
        }
        self.qualified(columns.token, out.reborrow())?;
        out.push_sql(&format!(
            " = {VALUES}.\"occ_old\" RETURNING {VALUES}.\"occ_pos\""
        ));
        Ok(())
    }
}

impl<T: Versioned> ValuesUpdate<T> {
    /// `"table"."column"`, a column of the updated row.
    fn qualified<'b, DB>(&'b self, column: &str, mut out: AstPass<'_, 'b, DB>) -> QueryResult<()>
    where
        DB: Backend,
        T::Table: QueryFragment<DB>,
    {
        self.table.walk_ast(out.reborrow())?;
        out.push_sql(".");
        out.push_identifier(column)
    }
}

impl<T: Versioned, Conn> diesel::RunQueryDsl<Conn> for ValuesUpdate<T> {}

/// True when no two entities of the batch have the same key. One statement writes a
/// row once however many of its `VALUES` rows match it, so a row saved twice would not
/// be written as one statement after the other writes it.
fn distinct_keys<T: Versioned>(entities: &[T]) -> bool {
    let mut seen = std::collections::HashSet::with_capacity(entities.len());
    entities
        .iter()
        .all(|entity| seen.insert(T::key_values(&entity.key())))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::statement::WrittenColumn;

    #[test]
    fn positions_count_the_rows_of_each_entity() {
        let mut written = vec![0; 4];
        count_written(&mut written, &[0, 2, 2, 9, -1, 4]);
        assert_eq!(written, [1, 0, 2, 0]);
    }

    #[test]
    fn a_statement_stays_within_the_bind_limit() {
        const WRITTEN: &[WrittenColumn] =
            &[WrittenColumn::always("a"), WrittenColumn::unless_none("b")];
        let columns = ValuesColumns::new(&["id"], WRITTEN, "version");
        // id, a, b and its flag, the expected and the fresh token.
        assert_eq!(columns.binds_per_row(), 6);
        assert_eq!(rows_per_statement(6), 10_922);
        assert!(rows_per_statement(6) * 6 <= MAX_BINDS_PER_STATEMENT);
        assert_eq!(rows_per_statement(70_000), 1);
    }
}
