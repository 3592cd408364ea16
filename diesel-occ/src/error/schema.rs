//! [`SchemaProblems`]: what [`SchemaCheck`](crate::schema_check::SchemaCheck) found
//! wrong with the token columns, carried by [`Error::Schema`](super::Error::Schema).

use std::fmt;

use crate::token::TokenKind;

/// Every token column [`SchemaCheck`](crate::schema_check::SchemaCheck) found wanting,
/// carried by [`Error::Schema`](super::Error::Schema).
///
/// Its `Display` names each table and column, what the database has and what the
/// token needs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SchemaProblems {
    problems: Vec<SchemaProblem>,
}

impl SchemaProblems {
    pub(crate) fn new(problems: Vec<SchemaProblem>) -> Self {
        SchemaProblems { problems }
    }
}

impl std::ops::Deref for SchemaProblems {
    type Target = [SchemaProblem];

    fn deref(&self) -> &[SchemaProblem] {
        &self.problems
    }
}

impl fmt::Display for SchemaProblems {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "token columns that cannot hold their tokens: ")?;
        for (i, problem) in self.problems.iter().enumerate() {
            if i > 0 {
                f.write_str("; ")?;
            }
            write!(f, "{problem}")?;
        }
        Ok(())
    }
}

impl std::error::Error for SchemaProblems {}

/// One token column that cannot hold its entity's tokens.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct SchemaProblem {
    /// The table's schema, when `table!` names one.
    pub schema: Option<&'static str>,
    /// The entity's table, by its SQL name.
    pub table: &'static str,
    /// The token column, by its SQL name.
    pub column: &'static str,
    /// The column's type as the database names it (`datetime`, `timestamp without time
    /// zone`, `INTEGER`), or `None` when the table has no such column.
    pub found: Option<String>,
    /// The fractional digits of a second the column keeps, where the database says.
    pub found_precision: Option<u8>,
    /// The database sets the column to the current time on every UPDATE that does not
    /// assign it (MySQL/MariaDB's `ON UPDATE CURRENT_TIMESTAMP`). A token must only
    /// move forward, and such a write can move one that ran ahead of the clock back.
    pub set_to_now_on_update: bool,
    /// The kind of column the token needs.
    pub needed: TokenKind,
    /// For a timestamp token, the fractional digits the entity declares
    /// (`#[occ(version, precision = N)]`, default 0).
    pub needed_precision: Option<u8>,
}

impl fmt::Display for SchemaProblem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if let Some(schema) = self.schema {
            write!(f, "{schema}.")?;
        }
        write!(f, "{}.{} ", self.table, self.column)?;
        match &self.found {
            None => f.write_str("does not exist")?,
            Some(found) => {
                write!(f, "is {found}")?;
                if let Some(digits) = self.found_precision {
                    write!(f, " with {digits} fractional digits")?;
                }
                if self.set_to_now_on_update {
                    f.write_str(
                        " and set to the current time on every update, which can move the \
                         token back",
                    )?;
                }
            }
        }
        write!(f, ", the token needs {}", self.needed)?;
        if let Some(digits) = self.needed_precision {
            write!(f, " with at least {digits} fractional digits")?;
        }

        Ok(())
    }
}
