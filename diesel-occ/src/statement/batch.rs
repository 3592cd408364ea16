//! The per-entity pieces of a batch UPDATE over a `VALUES` list, which
//! `#[derive(Versioned)]` gives each entity: its columns in bind order and its values.

use std::fmt;
use std::marker::PhantomData;

use diesel::QueryResult;
use diesel::backend::Backend;
use diesel::query_builder::{AstPass, QueryFragment};
use diesel::serialize::{self, IsNull, Output, ToSql};
use diesel::sql_types::{Bool, HasSqlType};

/// PostgreSQL's limit on the bind parameters of one statement: the protocol counts them
/// in 16 bits. A batch is cut into several statements only past it.
pub(crate) const MAX_BINDS_PER_STATEMENT: usize = 65_535;

/// The columns of an entity's row in a [`ValuesUpdate`](crate::versioned::ValuesUpdate), in the order of its binds:
/// the key columns, the written columns (a skippable one preceded by its presence
/// flag), the token. Built by `#[derive(Versioned)]`; not public API.
#[doc(hidden)]
#[derive(Debug, Clone, Copy)]
pub struct ValuesColumns {
    pub(crate) keys: &'static [&'static str],
    pub(crate) written: &'static [WrittenColumn],
    pub(crate) token: &'static str,
}

impl ValuesColumns {
    /// The SQL names of the key columns, the written columns and the token column.
    pub const fn new(
        keys: &'static [&'static str],
        written: &'static [WrittenColumn],
        token: &'static str,
    ) -> Self {
        ValuesColumns {
            keys,
            written,
            token,
        }
    }

    /// The bind parameters of one entity's row: keys, written values, one presence
    /// flag per skippable column, the expected and the fresh token.
    pub(crate) fn binds_per_row(&self) -> usize {
        let flags = self.written.iter().filter(|c| c.skippable).count();
        [self.keys.len(), self.written.len(), flags, 2]
            .into_iter()
            .fold(0, usize::saturating_add)
    }
}

/// A column a checked save writes, as [`ValuesColumns`] lists it. Not public API.
#[doc(hidden)]
#[derive(Debug, Clone, Copy)]
pub struct WrittenColumn {
    pub(crate) name: &'static str,
    /// An `Option` field whose `None` leaves the column alone (no `treat_none_as_null`).
    pub(crate) skippable: bool,
}

impl WrittenColumn {
    /// A column written with the field's value, `None` as `NULL` included.
    pub const fn always(name: &'static str) -> Self {
        WrittenColumn {
            name,
            skippable: false,
        }
    }

    /// A column written only when the field is `Some`, as the single save skips it.
    pub const fn unless_none(name: &'static str) -> Self {
        WrittenColumn {
            name,
            skippable: true,
        }
    }
}

/// The value of an `Option` field whose `None` leaves its column alone, in an entity's
/// `VALUES` row: two binds, a presence flag and the value (`NULL` when absent), so the
/// statement writes the column only where the single save would. Not public API.
#[doc(hidden)]
pub struct Skippable<ST, T> {
    present: bool,
    value: MaybeNull<T>,
    _sql_type: PhantomData<fn() -> ST>,
}

impl<ST, T> Skippable<ST, T> {
    /// The field's value: `None` leaves the column alone.
    pub fn new(value: Option<T>) -> Self {
        Skippable {
            present: value.is_some(),
            value: MaybeNull(value),
            _sql_type: PhantomData,
        }
    }
}

impl<ST, T: fmt::Debug> fmt::Debug for Skippable<ST, T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("Skippable").field(&self.value.0).finish()
    }
}

impl<ST, T, DB> QueryFragment<DB> for Skippable<ST, T>
where
    DB: Backend + HasSqlType<ST> + HasSqlType<Bool>,
    T: ToSql<ST, DB>,
    bool: ToSql<Bool, DB>,
{
    fn walk_ast<'b>(&'b self, mut out: AstPass<'_, 'b, DB>) -> QueryResult<()> {
        out.push_bind_param::<Bool, bool>(&self.present)?;
        out.push_sql(", ");
        out.push_bind_param::<ST, MaybeNull<T>>(&self.value)
    }
}

/// A value bound as its column's SQL type, or `NULL` of that type: the value of an
/// absent [`Skippable`], which the statement never writes.
#[derive(Debug)]
pub(crate) struct MaybeNull<T>(pub(crate) Option<T>);

impl<ST, T, DB> ToSql<ST, DB> for MaybeNull<T>
where
    DB: Backend,
    T: ToSql<ST, DB>,
{
    fn to_sql<'b>(&'b self, out: &mut Output<'b, '_, DB>) -> serialize::Result {
        match &self.0 {
            Some(value) => value.to_sql(out),
            None => Ok(IsNull::Yes),
        }
    }
}
