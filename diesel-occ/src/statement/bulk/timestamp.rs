//! [`AdvancedTimestamp`]: the fresh value a bulk UPDATE gives a timestamp token,
//! computed by the database from each row's own token.
//!
//! A checked save advances a timestamp token to `max(now, old + one step)` at the
//! column's precision, so a row's tokens only ever grow, even when many saves land in
//! one second and run ahead of the clock. A bulk UPDATE must keep that promise for every
//! row it touches without reading them: a value computed in Rust (`now`) could be
//! rounded by a whole-second column onto the token the row holds, or equal a token the
//! row held before, and let an entity that read it then save over the bulk write. So
//! the database computes `max(now, token + one step)` per row:
//!
//! | backend | SQL |
//! |---|---|
//! | PostgreSQL | `GREATEST($now, token + INTERVAL '<step> microseconds')` |
//! | MySQL / MariaDB | `GREATEST(?, token + INTERVAL <step> MICROSECOND)` |
//! | SQLite | `MAX(strftime(<format>, ?), strftime(<format>, token, '+<step> seconds'))` |
//!
//! SQLite keeps timestamps as text and its date functions count milliseconds: the step
//! there is at least one millisecond and the result is written at milliseconds (whole
//! seconds for a whole-second token), one text form, so that `MAX` compares like with
//! like and the result is strictly after the old token. A token another tool stored
//! with a UTC offset (`...10:00:00+02:00`) is advanced from what the token type reads:
//! the instant for `DateTime<Utc>` and time's `OffsetDateTime`, the clock time written
//! for `NaiveDateTime` and time's `PrimitiveDateTime` (Diesel ignores the offset there,
//! so it is cut off before `strftime` would apply it).

use diesel::backend::Backend;
use diesel::expression::{AppearsOnTable, Expression, ValidGrouping, is_aggregate};
use diesel::query_builder::{AstPass, QueryFragment, QueryId};
use diesel::serialize::ToSql;
use diesel::sql_types::HasSqlType;
use diesel::{QueryResult, SelectableExpression};

use crate::dialect::Dialect;
use crate::token::step_micros;

/// `max(now, token + one step)` at a precision, evaluated by the database for each row
/// a bulk UPDATE touches: what `AdvanceToken` assigns a
/// timestamp token, on PostgreSQL (`GREATEST($now, token + INTERVAL '<step>
/// microseconds')`), MySQL/MariaDB (`GREATEST(?, token + INTERVAL <step> MICROSECOND)`)
/// and SQLite (`MAX` of `strftime` texts, at milliseconds or whole seconds). Another
/// backend gets a query builder error, never a value computed without the row's token.
///
/// ```
/// use chrono::NaiveDateTime;
/// use diesel::prelude::*;
/// use diesel::sqlite::Sqlite;
/// use diesel_occ::statement::AdvanceToken;
///
/// diesel::table! {
///     notes (id) {
///         id -> Integer,
///         updated_at -> Timestamp,
///     }
/// }
///
/// // A whole-second token: one second after the row's own token, or now if later.
/// let advance = <NaiveDateTime as AdvanceToken<notes::updated_at>>::advance(notes::updated_at, 0);
/// let sql = diesel::debug_query::<Sqlite, _>(&diesel::update(notes::table).set(advance)).to_string();
/// assert!(
///     sql.starts_with(
///         "UPDATE `notes` SET `updated_at` = MAX(strftime('%Y-%m-%d %H:%M:%S', ?), \
///          strftime('%Y-%m-%d %H:%M:%S', CASE WHEN `notes`.`updated_at` GLOB"
///     ),
///     "{sql}"
/// );
/// ```
#[derive(Debug, Clone, Copy)]
pub struct AdvancedTimestamp<Col, T> {
    column: Col,
    now: T,
    precision: u8,
    /// What SQLite's text must end with for the token type to read it back as UTC
    /// (`+00:00` for `DateTime<Utc>`; the naive type takes none).
    sqlite_suffix: &'static str,
}

impl<Col, T> AdvancedTimestamp<Col, T> {
    pub(super) fn new(column: Col, now: T, precision: u8, sqlite_suffix: &'static str) -> Self {
        AdvancedTimestamp {
            column,
            now,
            precision,
            sqlite_suffix,
        }
    }

    /// SQLite's `strftime` format and step for this precision: whole seconds keep no
    /// fraction; anything finer is written at milliseconds, SQLite's own resolution.
    fn sqlite_format_and_step(&self) -> (&'static str, &'static str) {
        match self.precision {
            0 => ("'%Y-%m-%d %H:%M:%S'", "'+1 seconds'"),
            1 => ("'%Y-%m-%d %H:%M:%f'", "'+0.1 seconds'"),
            2 => ("'%Y-%m-%d %H:%M:%f'", "'+0.01 seconds'"),
            _ => ("'%Y-%m-%d %H:%M:%f'", "'+0.001 seconds'"),
        }
    }

    /// `MAX(strftime(<format>, now), strftime(<format>, token, <step>))`, plus the
    /// suffix the token type needs: one text form on both sides, so `MAX` compares
    /// instants.
    fn walk_sqlite<'b, DB>(&'b self, mut out: AstPass<'_, 'b, DB>) -> QueryResult<()>
    where
        DB: Backend + HasSqlType<Col::SqlType>,
        Col: Expression + QueryFragment<DB>,
        T: ToSql<Col::SqlType, DB>,
    {
        let (format, step) = self.sqlite_format_and_step();
        out.push_sql(&format!("MAX(strftime({format}, "));
        out.push_bind_param::<Col::SqlType, T>(&self.now)?;
        out.push_sql(&format!("), strftime({format}, "));
        if self.sqlite_suffix.is_empty() {
            // A naive token is the clock time written, offset ignored (as Diesel reads
            // it): `strftime` would apply a `+02:00` and move the token back by two
            // hours, so the offset is cut off first.
            out.push_sql("CASE WHEN ");
            self.column.walk_ast(out.reborrow())?;
            out.push_sql(" GLOB '*[+-][0-9][0-9]:[0-9][0-9]' THEN substr(");
            self.column.walk_ast(out.reborrow())?;
            out.push_sql(", 1, length(");
            self.column.walk_ast(out.reborrow())?;
            out.push_sql(") - 6) ELSE ");
            self.column.walk_ast(out.reborrow())?;
            out.push_sql(" END");
        } else {
            self.column.walk_ast(out.reborrow())?;
        }
        out.push_sql(&format!(", {step}))"));
        if !self.sqlite_suffix.is_empty() {
            out.push_sql(&format!(" || '{}'", self.sqlite_suffix));
        }
        Ok(())
    }
}

impl<Col: Expression, T> Expression for AdvancedTimestamp<Col, T> {
    type SqlType = Col::SqlType;
}

impl<Col, T, QS> AppearsOnTable<QS> for AdvancedTimestamp<Col, T>
where
    Col: AppearsOnTable<QS>,
    Self: Expression,
{
}

impl<Col, T, QS> SelectableExpression<QS> for AdvancedTimestamp<Col, T>
where
    Col: SelectableExpression<QS>,
    Self: AppearsOnTable<QS>,
{
}

impl<Col, T> ValidGrouping<()> for AdvancedTimestamp<Col, T> {
    type IsAggregate = is_aggregate::Never;
}

/// No static id: the text depends on the precision, which two entities of one table
/// may declare differently.
impl<Col, T> QueryId for AdvancedTimestamp<Col, T> {
    type QueryId = ();
    const HAS_STATIC_QUERY_ID: bool = false;
}

impl<Col, T, DB> QueryFragment<DB> for AdvancedTimestamp<Col, T>
where
    DB: Backend + HasSqlType<Col::SqlType> + 'static,
    Col: Expression + QueryFragment<DB>,
    T: ToSql<Col::SqlType, DB>,
{
    fn walk_ast<'b>(&'b self, mut out: AstPass<'_, 'b, DB>) -> QueryResult<()> {
        let step = step_micros(self.precision);
        let interval = match Dialect::of::<DB>() {
            Some(Dialect::Postgres) => format!("INTERVAL '{step} microseconds'"),
            Some(Dialect::Mysql) => format!("INTERVAL {step} MICROSECOND"),
            Some(Dialect::Sqlite) => return self.walk_sqlite(out),
            None => {
                return Err(diesel::result::Error::QueryBuilderError(
                    "diesel-occ advances a timestamp token in a bulk update on PostgreSQL, \
                     MySQL/MariaDB and SQLite only"
                        .into(),
                ));
            }
        };
        out.push_sql("GREATEST(");
        out.push_bind_param::<Col::SqlType, T>(&self.now)?;
        out.push_sql(", ");
        self.column.walk_ast(out.reborrow())?;
        out.push_sql(&format!(" + {interval})"));
        Ok(())
    }
}
