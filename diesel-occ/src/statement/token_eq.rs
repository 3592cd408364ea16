//! [`TokenEq`]: the `token = <original>` predicate of every guarded write, and the
//! `column IS NOT DISTINCT FROM <as read>` of a check column (`#[occ(check)]`).
//!
//! On PostgreSQL and MySQL it is exactly Diesel's `column.eq(value)` (for a check
//! column, [`NullSafeEq`](super::NullSafeEq)'s comparison). SQLite stores a
//! timestamp as text, and other tools write the same token in other forms
//! (`2024-01-02T03:04:05`, `...05.500`, `...05Z`, `...07:04:05+04:00`) that Diesel reads
//! as the same token: comparing with the one form Diesel writes would make such a row
//! conflict on every save, with a conflict that reports the token the caller expected.
//! There the predicate also accepts a text that SQLite's date functions read and whose
//! whole seconds (read by `strftime`, exact because they carry no fraction) and fraction
//! (compared as text, since an offset is a whole number of minutes and never changes it)
//! are the token's: the instant for `DateTime<Utc>` and time's `OffsetDateTime`, the
//! clock time written for `NaiveDateTime` and time's `PrimitiveDateTime` (Diesel ignores
//! the offset there). It never matches another token.
//! A check column holding a timestamp is compared the same way.

use std::sync::OnceLock;

use diesel::backend::Backend;
use diesel::expression::{AppearsOnTable, Expression, ValidGrouping, is_aggregate};
use diesel::query_builder::{AstPass, QueryFragment, QueryId};
use diesel::serialize::ToSql;
use diesel::sql_types::{Bool, HasSqlType, Text};
use diesel::{QueryResult, SelectableExpression};

use super::null_safe_eq;
use crate::dialect::Dialect;
use crate::token::TimestampText;

/// `column = token`, matching every text form of a timestamp token on SQLite; or, for
/// a check column, `column IS NOT DISTINCT FROM value` with the same text forms.
/// Built by `#[derive(Versioned)]`; not public API.
#[doc(hidden)]
#[derive(Debug, Clone)]
pub struct TokenEq<Col, T> {
    column: Col,
    token: T,
    /// The token's texts, worked out the first time the predicate is written for
    /// SQLite; never on the other backends.
    forms: OnceLock<Option<TimestampText>>,
    forms_of: fn(&T) -> Option<TimestampText>,
    /// Whether the comparison is NULL-safe, as a check column's, instead of `=`.
    null_safe: bool,
}

impl<Col, T> TokenEq<Col, T> {
    /// The predicate `column = token`; `forms_of` gives a timestamp token's texts
    /// ([`Versioned::token_text_forms`](crate::Versioned::token_text_forms)).
    ///
    /// No bound on `T` here: a field that is no token is reported once, on the field.
    pub fn new(column: Col, token: T, forms_of: fn(&T) -> Option<TimestampText>) -> Self {
        TokenEq {
            column,
            token,
            forms: OnceLock::new(),
            forms_of,
            null_safe: false,
        }
    }

    /// The predicate of a check column: `column IS NOT DISTINCT FROM value` (written as
    /// [`NullSafeEq`](super::NullSafeEq) writes it, so NULL matches NULL), and on SQLite
    /// also every text form of a timestamp value; `forms_of` gives them (the derive
    /// passes `__private::check_text_forms`).
    pub fn null_safe(column: Col, value: T, forms_of: fn(&T) -> Option<TimestampText>) -> Self {
        TokenEq {
            null_safe: true,
            ..TokenEq::new(column, value, forms_of)
        }
    }
}

impl<Col, T> Expression for TokenEq<Col, T> {
    type SqlType = Bool;
}

impl<Col, T, QS> AppearsOnTable<QS> for TokenEq<Col, T> where Col: AppearsOnTable<QS> {}

impl<Col, T, QS> SelectableExpression<QS> for TokenEq<Col, T> where Col: SelectableExpression<QS> {}

impl<Col, T> ValidGrouping<()> for TokenEq<Col, T> {
    type IsAggregate = is_aggregate::Never;
}

/// No static id: on SQLite the text depends on the token's kind (and on whether a
/// check column's value is NULL).
impl<Col, T> QueryId for TokenEq<Col, T> {
    type QueryId = ();
    const HAS_STATIC_QUERY_ID: bool = false;
}

/// The date and time a text must start with: `YYYY-MM-DD HH:MM` (or `T`).
const DATE_TIME_GLOB: &str =
    "'[0-9][0-9][0-9][0-9]-[0-9][0-9]-[0-9][0-9][ T][0-9][0-9]:[0-9][0-9]*'";

/// One impl for every backend, so that code generic over the backend (Diesel's
/// `MultiConnection`) compiles; SQLite is recognised by its type.
impl<Col, T, DB> QueryFragment<DB> for TokenEq<Col, T>
where
    DB: Backend + HasSqlType<Col::SqlType> + HasSqlType<Text> + 'static,
    Col: Expression + QueryFragment<DB>,
    T: ToSql<Col::SqlType, DB>,
    String: ToSql<Text, DB>,
{
    fn walk_ast<'b>(&'b self, mut out: AstPass<'_, 'b, DB>) -> QueryResult<()> {
        let text = if Dialect::of::<DB>() == Some(Dialect::Sqlite) {
            self.forms
                .get_or_init(|| (self.forms_of)(&self.token))
                .as_ref()
        } else {
            None
        };
        let operator = if self.null_safe {
            null_safe_eq::operator::<DB>()
        } else {
            " = "
        };
        let Some(text) = text else {
            // A check column's comparison in parentheses, as `NullSafeEq` writes it.
            if self.null_safe {
                out.push_sql("(");
            }
            self.column.walk_ast(out.reborrow())?;
            out.push_sql(operator);
            out.push_bind_param::<Col::SqlType, T>(&self.token)?;
            if self.null_safe {
                out.push_sql(")");
            }
            return Ok(());
        };
        // `v` the text; `n` the length of its date, hours and minutes, with seconds when
        // it has them; `rest` what follows (fraction and zone); `zone` the `Z` or offset.
        out.push_sql("(");
        self.column.walk_ast(out.reborrow())?;
        out.push_sql(operator);
        out.push_bind_param::<Col::SqlType, T>(&self.token)?;
        out.push_sql(
            " OR EXISTS (SELECT 1 FROM (SELECT v, n, substr(v, n + 1) AS rest, \
             ltrim(substr(v, n + 1), '.0123456789') AS zone FROM (SELECT ",
        );
        self.column.walk_ast(out.reborrow())?;
        out.push_sql(" AS v, CASE WHEN substr(");
        self.column.walk_ast(out.reborrow())?;
        out.push_sql(", 17, 1) = ':' THEN 19 ELSE 16 END AS n)) WHERE v GLOB ");
        out.push_sql(DATE_TIME_GLOB);
        out.push_sql(" AND strftime('%Y-%m-%d %H:%M:%S', substr(v, 1, n)");
        if text.applies_offset {
            out.push_sql(" || zone");
        }
        out.push_sql(") = ");
        out.push_bind_param::<Text, String>(&text.seconds)?;
        // A fraction only after seconds; `.500` and `.5` are one fraction.
        out.push_sql(
            " AND CASE WHEN n = 19 \
             THEN rtrim(rtrim(substr(rest, 1, length(rest) - length(zone)), '0'), '.') \
             WHEN rest = zone THEN '' END = ",
        );
        out.push_bind_param::<Text, String>(&text.fraction)?;
        out.push_sql("))");
        Ok(())
    }
}

/// Every text of a timestamp Diesel reads is matched exactly when Diesel reads it as
/// the token.
#[cfg(all(test, feature = "sqlite"))]
mod tests {
    use chrono::{DateTime, NaiveDateTime, Utc};
    use diesel::prelude::*;
    use diesel::sqlite::SqliteConnection;

    use super::TokenEq;
    use crate::VersionToken;
    use crate::token::check_text_forms;

    diesel::table! {
        texts (id) {
            id -> Integer,
            naive -> Timestamp,
            utc -> TimestamptzSqlite,
        }
    }

    diesel::table! {
        /// The same texts in nullable columns, as check columns may be, and a NULL row.
        checks (id) {
            id -> Integer,
            naive -> Nullable<Timestamp>,
            utc -> Nullable<TimestamptzSqlite>,
            label -> Nullable<Text>,
        }
    }

    const TEXTS: &[&str] = &[
        "2024-01-02 03:04:05",
        "2024-01-02T03:04:05",
        "2024-01-02 03:04:05.5",
        "2024-01-02 03:04:05.500000",
        "2024-01-02T03:04:05.123456",
        "2024-01-02 03:04:05.123456789",
        "2024-01-02 03:04:05.000",
        "2024-01-02 03:04:05Z",
        "2024-01-02T03:04:05.250Z",
        "2024-01-02 03:04:05+00:00",
        "2024-01-02 05:04:05+02:00",
        "2024-01-02 05:04:05.5+02:00",
        "2024-01-01T21:34:05.123456-05:30",
        "2024-01-02 03:04",
        "2024-01-02T03:04Z",
        "2024-01-02 05:04+02:00",
        "2024-01-02 03:04:06",
        "2024-01-02 03:04:05.9995",
        "2024-01-02 03:04:05.9995+01:00",
        "2024-01-02 23:59:59.999999-14:00",
    ];

    /// Which row ids the predicate for `token` matches on `column`.
    macro_rules! matched {
        ($conn:expr, $column:expr, $token:expr) => {
            texts::table
                .select(texts::id)
                .filter(TokenEq::new($column, $token, VersionToken::text_forms))
                .order(texts::id)
                .load::<i32>($conn)
                .unwrap()
        };
    }

    #[test]
    fn a_timestamp_matches_the_texts_diesel_reads_as_it_and_no_other() {
        let mut conn = SqliteConnection::establish(":memory:").unwrap();
        diesel::sql_query("CREATE TABLE texts (id INTEGER PRIMARY KEY, naive TEXT, utc TEXT)")
            .execute(&mut conn)
            .unwrap();
        for (id, text) in TEXTS.iter().enumerate() {
            diesel::sql_query(format!(
                "INSERT INTO texts VALUES ({id}, '{text}', '{text}')"
            ))
            .execute(&mut conn)
            .unwrap();
        }
        let rows: Vec<(i32, NaiveDateTime, DateTime<Utc>)> = texts::table
            .select((texts::id, texts::naive, texts::utc))
            .order(texts::id)
            .load(&mut conn)
            .unwrap();
        for &(id, naive, utc) in &rows {
            let text = TEXTS[usize::try_from(id).unwrap()];
            let same_naive: Vec<i32> = rows
                .iter()
                .filter(|row| row.1 == naive)
                .map(|row| row.0)
                .collect();
            assert_eq!(
                matched!(&mut conn, texts::naive, naive),
                same_naive,
                "NaiveDateTime {naive} read from {text:?}"
            );
            let same_utc: Vec<i32> = rows
                .iter()
                .filter(|row| row.2 == utc)
                .map(|row| row.0)
                .collect();
            assert_eq!(
                matched!(&mut conn, texts::utc, utc),
                same_utc,
                "DateTime<Utc> {utc} read from {text:?}"
            );
        }
    }

    /// Which row ids the check predicate for `value` matches on `column`.
    macro_rules! checked {
        ($conn:expr, $column:expr, $value:expr) => {
            checks::table
                .select(checks::id)
                .filter(TokenEq::null_safe($column, $value, check_text_forms))
                .order(checks::id)
                .load::<i32>($conn)
                .unwrap()
        };
    }

    /// A check column (`#[occ(check)]`) of a timestamp type matches its value as a token
    /// does, in every text form, and NULL matches NULL only; a text is compared as is.
    #[test]
    fn a_check_value_matches_the_texts_diesel_reads_as_it_and_null_only_null() {
        let mut conn = SqliteConnection::establish(":memory:").unwrap();
        diesel::sql_query(
            "CREATE TABLE checks (id INTEGER PRIMARY KEY, naive TEXT, utc TEXT, label TEXT)",
        )
        .execute(&mut conn)
        .unwrap();
        for (id, text) in TEXTS.iter().enumerate() {
            diesel::sql_query(format!(
                "INSERT INTO checks VALUES ({id}, '{text}', '{text}', '{text}')"
            ))
            .execute(&mut conn)
            .unwrap();
        }
        let null = TEXTS.len();
        diesel::sql_query(format!(
            "INSERT INTO checks VALUES ({null}, NULL, NULL, NULL)"
        ))
        .execute(&mut conn)
        .unwrap();
        type Row = (
            i32,
            Option<NaiveDateTime>,
            Option<DateTime<Utc>>,
            Option<String>,
        );
        let rows: Vec<Row> = checks::table
            .select((checks::id, checks::naive, checks::utc, checks::label))
            .order(checks::id)
            .load(&mut conn)
            .unwrap();
        for (id, naive, utc, label) in &rows {
            let same = |pick: &dyn Fn(&Row) -> bool| -> Vec<i32> {
                rows.iter()
                    .filter(|row| pick(row))
                    .map(|row| row.0)
                    .collect()
            };
            assert_eq!(
                checked!(&mut conn, checks::naive, *naive),
                same(&|row| row.1 == *naive),
                "Option<NaiveDateTime> {naive:?} read from row {id}"
            );
            assert_eq!(
                checked!(&mut conn, checks::utc, *utc),
                same(&|row| row.2 == *utc),
                "Option<DateTime<Utc>> {utc:?} read from row {id}"
            );
            assert_eq!(
                checked!(&mut conn, checks::label, label.clone()),
                vec![*id],
                "a text matches itself only: {label:?}"
            );
        }
    }

    /// On PostgreSQL and MySQL a check column's comparison is the NULL-safe operator
    /// alone, whatever the value.
    #[test]
    fn elsewhere_a_check_value_is_compared_null_safely_and_nothing_more() {
        let naive = "2024-01-02T03:04:05.5".parse::<NaiveDateTime>().unwrap();
        let predicate = || TokenEq::null_safe(checks::naive, Some(naive), check_text_forms);
        let pg = diesel::debug_query::<diesel::pg::Pg, _>(&predicate()).to_string();
        let mysql = diesel::debug_query::<diesel::mysql::Mysql, _>(&predicate()).to_string();
        assert!(
            pg.starts_with(r#"("checks"."naive" IS NOT DISTINCT FROM $1) -- binds: [Some("#),
            "{pg}"
        );
        assert!(
            mysql.starts_with("(`checks`.`naive` <=> ?) -- binds: [Some("),
            "{mysql}"
        );
        let sqlite = diesel::debug_query::<diesel::sqlite::Sqlite, _>(&predicate()).to_string();
        assert!(
            sqlite.starts_with("(`checks`.`naive` IS ? OR EXISTS"),
            "{sqlite}"
        );
        let label = diesel::debug_query::<diesel::sqlite::Sqlite, _>(&TokenEq::null_safe(
            checks::label,
            Some(String::from("2024-01-02 03:04:05")),
            check_text_forms,
        ))
        .to_string();
        assert!(
            label.starts_with("(`checks`.`label` IS ?) -- binds"),
            "{label}"
        );
    }
}
