//! [`SchemaProblems`]: what [`SchemaCheck`](crate::schema_check::SchemaCheck) found
//! wrong with the tables of the entities it checked, carried by
//! [`Error::Schema`](super::Error::Schema).

use std::fmt;

use crate::token::TokenKind;

/// Every problem [`SchemaCheck`](crate::schema_check::SchemaCheck) found, carried by
/// [`Error::Schema`](super::Error::Schema).
///
/// Its `Display` names each table and column, what the database has, what the entity
/// needs and the DDL that fixes it: the statements that add or change a token column,
/// for a key the database does not keep unique the one that adds an index.
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
        write!(f, "tables that do not fit their versioned entities: ")?;
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

/// One problem [`SchemaCheck`](crate::schema_check::SchemaCheck) found with an
/// entity's table.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum SchemaProblem {
    /// The token column cannot hold the entity's tokens.
    TokenColumn(TokenColumnProblem),
    /// The database does not keep the entity's key unique: no PRIMARY KEY or UNIQUE
    /// index covers exactly its key columns.
    UnenforcedKey(UnenforcedKey),
}

impl SchemaProblem {
    /// The table's schema, when `table!` names one.
    pub fn schema(&self) -> Option<&'static str> {
        match self {
            SchemaProblem::TokenColumn(problem) => problem.schema,
            SchemaProblem::UnenforcedKey(problem) => problem.schema,
        }
    }

    /// The entity's table, by its SQL name.
    pub fn table(&self) -> &'static str {
        match self {
            SchemaProblem::TokenColumn(problem) => problem.table,
            SchemaProblem::UnenforcedKey(problem) => problem.table,
        }
    }

    /// The token column's problem, when this is one.
    pub fn as_token_column(&self) -> Option<&TokenColumnProblem> {
        match self {
            SchemaProblem::TokenColumn(problem) => Some(problem),
            SchemaProblem::UnenforcedKey(_) => None,
        }
    }

    /// The key the database does not keep unique, when this is one.
    pub fn as_unenforced_key(&self) -> Option<&UnenforcedKey> {
        match self {
            SchemaProblem::UnenforcedKey(problem) => Some(problem),
            SchemaProblem::TokenColumn(_) => None,
        }
    }
}

impl fmt::Display for SchemaProblem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SchemaProblem::TokenColumn(problem) => problem.fmt(f),
            SchemaProblem::UnenforcedKey(problem) => problem.fmt(f),
        }
    }
}

impl From<TokenColumnProblem> for SchemaProblem {
    fn from(problem: TokenColumnProblem) -> Self {
        SchemaProblem::TokenColumn(problem)
    }
}

impl From<UnenforcedKey> for SchemaProblem {
    fn from(problem: UnenforcedKey) -> Self {
        SchemaProblem::UnenforcedKey(problem)
    }
}

/// One token column that cannot hold its entity's tokens.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct TokenColumnProblem {
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
    /// The DDL that fixes the column, in the database's dialect, statements separated
    /// by `; ` (the recipe of the guide's "Adding the version column to a table with
    /// rows", `guide::checked_writes`). For a missing column, the statements that add it
    /// NOT NULL and give every existing row a token: `ALTER TABLE t ADD COLUMN version
    /// INTEGER NOT NULL DEFAULT 1`, a UUID of its own per row, the current UTC time
    /// (PostgreSQL's `timestamp(N)`: declare `timestamptz(N)` for a `Timestamptz`
    /// column). For a column of the wrong kind or precision, or one set to the current
    /// time on every UPDATE: PostgreSQL's `ALTER TABLE t ALTER COLUMN c TYPE ..`,
    /// MySQL/MariaDB's `ALTER TABLE t MODIFY c .. NOT NULL` (which also drops
    /// `ON UPDATE CURRENT_TIMESTAMP`); SQLite cannot change a column's type, so there the
    /// column is dropped and added again, which gives every row a new token (a client
    /// holding an old one gets a conflict). `None` for a token of no known column type.
    pub fix: Option<String>,
}

impl fmt::Display for TokenColumnProblem {
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
        if let Some(fix) = &self.fix {
            let verb = if self.found.is_none() {
                "add"
            } else {
                "change"
            };
            write!(f, "; {verb} it with: {fix}")?;
        }
        Ok(())
    }
}

/// An entity's key that the database does not keep unique: no PRIMARY KEY or UNIQUE
/// index (or constraint) of its table is on exactly the key columns.
///
/// A checked insert or upsert relies on the key being unique: without such an index
/// MySQL/MariaDB insert a second row with the same key where the entity expects a
/// taken key or an update, and PostgreSQL and SQLite refuse the upsert's
/// `ON CONFLICT (key)` with an untyped error.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct UnenforcedKey {
    /// The table's schema, when `table!` names one.
    pub schema: Option<&'static str>,
    /// The entity's table, by its SQL name.
    pub table: &'static str,
    /// The entity's key columns, by their SQL names, in key order.
    pub columns: &'static [&'static str],
    /// The DDL that makes the key unique, in the database's dialect: `ALTER TABLE t
    /// ADD PRIMARY KEY (..)` for a table without a primary key on PostgreSQL and
    /// MySQL/MariaDB, `CREATE UNIQUE INDEX t_.._key ON t (..)` otherwise. It fails
    /// while the table holds duplicate keys: remove them first.
    pub fix: String,
}

impl fmt::Display for UnenforcedKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if let Some(schema) = self.schema {
            write!(f, "{schema}.")?;
        }
        write!(f, "{} key (", self.table)?;
        for (i, column) in self.columns.iter().enumerate() {
            if i > 0 {
                f.write_str(", ")?;
            }
            f.write_str(column)?;
        }
        write!(
            f,
            ") has no PRIMARY KEY or UNIQUE index on exactly its columns, so the database \
             does not keep it unique, which checked inserts and upserts need; add one: {}",
            self.fix
        )
    }
}
