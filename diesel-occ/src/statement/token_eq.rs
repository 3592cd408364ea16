//! [`TokenEq`]: the `token = <original>` predicate of every guarded write.
//!
//! On PostgreSQL and MySQL it is exactly Diesel's `column.eq(value)`. SQLite stores a
//! timestamp as text, and other tools write the same instant in other forms
//! (`2024-01-02T03:04:05`, `...05.500`, `...05Z`) that Diesel reads as the same token:
//! comparing with the one form Diesel writes would make such a row conflict on every
//! save, with a conflict that reports the token the caller expected. There the
//! predicate is `column IN (<every form of the token>)`: textual equality with forms
//! that each read back as exactly this token, so it never matches another instant.

use std::sync::OnceLock;

use diesel::backend::Backend;
use diesel::expression::{AppearsOnTable, Expression, ValidGrouping, is_aggregate};
use diesel::query_builder::{AstPass, QueryFragment, QueryId};
use diesel::serialize::ToSql;
use diesel::sql_types::{Bool, HasSqlType, Text};
use diesel::{QueryResult, SelectableExpression};

use crate::dialect::Dialect;

/// `column = token`, matching every text form of a timestamp token on SQLite.
/// Built by `#[derive(Versioned)]`; not public API.
#[doc(hidden)]
#[derive(Debug, Clone)]
pub struct TokenEq<Col, T> {
    column: Col,
    token: T,
    /// The token's other text forms, worked out the first time the predicate is
    /// written for SQLite; never on the other backends.
    forms: OnceLock<Vec<String>>,
    forms_of: fn(&T) -> Vec<String>,
}

impl<Col, T> TokenEq<Col, T> {
    /// The predicate `column = token`; `forms_of` lists a token's other text forms
    /// ([`Versioned::token_text_forms`](crate::Versioned::token_text_forms)).
    ///
    /// No bound on `T` here: a field that is no token is reported once, on the field.
    pub fn new(column: Col, token: T, forms_of: fn(&T) -> Vec<String>) -> Self {
        TokenEq {
            column,
            token,
            forms: OnceLock::new(),
            forms_of,
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

/// No static id: on SQLite the text depends on how many forms the token has.
impl<Col, T> QueryId for TokenEq<Col, T> {
    type QueryId = ();
    const HAS_STATIC_QUERY_ID: bool = false;
}

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
        self.column.walk_ast(out.reborrow())?;
        let forms: &[String] = if Dialect::of::<DB>() == Some(Dialect::Sqlite) {
            self.forms.get_or_init(|| (self.forms_of)(&self.token))
        } else {
            &[]
        };
        if forms.is_empty() {
            out.push_sql(" = ");
            return out.push_bind_param::<Col::SqlType, T>(&self.token);
        }
        out.push_sql(" IN (");
        out.push_bind_param::<Col::SqlType, T>(&self.token)?;
        for form in forms {
            out.push_sql(", ");
            out.push_bind_param::<Text, String>(form)?;
        }
        out.push_sql(")");
        Ok(())
    }
}
