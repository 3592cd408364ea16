//! Bulk updates that stay honest: every row they touch gets a fresh token, so an
//! in-flight edit of one of those rows conflicts instead of silently winning.

use std::marker::PhantomData;
use std::ops::Add;

use diesel::dsl;
use diesel::expression::is_contained_in_group_by::{No, Yes};
use diesel::expression::{
    AsExpression, IsContainedInGroupBy, MixedAggregates, TypedExpressionType, ValidGrouping,
};
use diesel::sql_types::{BoolOrNullableBool, SqlType};
use diesel::{Expression, ExpressionMethods};

use super::fixed_text::{HasOptionalParts, TextIsFixed};
use crate::token::VersionToken;
#[cfg(any(feature = "chrono", feature = "time"))]
use crate::token::clock_at;

#[cfg(any(feature = "chrono", feature = "time"))]
mod timestamp;

#[cfg(any(feature = "chrono", feature = "time"))]
pub use timestamp::AdvancedTimestamp;

/// A token kind a bulk UPDATE can advance in SQL, on every row it touches.
///
/// | token | assignment |
/// |---|---|
/// | `i16`, `i32`, `i64` | `token = CASE WHEN token = MAX THEN MIN ELSE token + 1 END` |
/// | `uuid::Uuid`, [`UuidToken`](crate::UuidToken) | `token = <one fresh random UUID>` |
/// | `NaiveDateTime`, `DateTime<Utc>`, `PrimitiveDateTime`, `OffsetDateTime` | `token = max(<now>, token + <one step>)`, at the token's precision |
///
/// Only equality matters for a token, so one fresh UUID shared by the touched rows is
/// as good as one per row: each differs from every token read before. A counter wraps
/// from its Rust type's maximum to its minimum, exactly as
/// [`next_token`](VersionToken::next_token) does, on every backend (`MAX + 1` would be
/// an overflow error on PostgreSQL and MySQL, and on SQLite a value the token's type
/// cannot read back). A timestamp token moves strictly forward, computed by the
/// database from each row's own token exactly as
/// [`next_token_at`](VersionToken::next_token_at) computes it in a checked save, one
/// step of the entity's [`TOKEN_PRECISION`](crate::Versioned::TOKEN_PRECISION) at
/// least, so a whole-second column can never round it back onto a token the row held
/// (on SQLite, whose date functions count milliseconds, the step is at least a
/// millisecond). `precision` is the entity's `TOKEN_PRECISION`; counters and UUIDs
/// ignore it.
///
/// ```
/// # include!(concat!(env!("CARGO_MANIFEST_DIR"), "/src/doctest_setup.rs"));
/// use diesel::prelude::*;
/// use diesel::sqlite::Sqlite;
/// use diesel_occ::statement::AdvanceToken;
///
/// # fn main() {
/// let advance = <i32 as AdvanceToken<stock::version>>::advance(stock::version, 0);
/// let sql = diesel::debug_query::<Sqlite, _>(&diesel::update(stock::table).set(advance)).to_string();
/// assert!(
///     sql.starts_with(
///         "UPDATE `stock` SET `version` = CASE WHEN ((`stock`.`version` = ?)) THEN (?) \
///          ELSE ((`stock`.`version` + ?)) END"
///     ),
///     "{sql}"
/// );
/// assert!(sql.ends_with("-- binds: [2147483647, -2147483648, 1]"), "{sql}");
/// # }
/// ```
pub trait AdvanceToken<Col>: VersionToken {
    /// The assignment `token = <advanced>`.
    type Assignment;

    /// The assignment for this column, whose entity declares `precision` fractional
    /// digits of a second ([`TOKEN_PRECISION`](crate::Versioned::TOKEN_PRECISION)).
    fn advance(column: Col, precision: u8) -> Self::Assignment;
}

/// `CASE WHEN token = MAX THEN MIN ELSE token + 1 END`: the SQL twin of
/// `VersionToken::next_token` for a counter of type `I`. The database evaluates the
/// `ELSE` branch only for rows below `MAX`, so `token + 1` never overflows.
type WrappingIncrement<Col, I> = dsl::Otherwise<
    dsl::case_when<dsl::Eq<Col, I>, I, <Col as Expression>::SqlType>,
    <Col as Add<I>>::Output,
>;

macro_rules! counter_advance {
    ($($int:ty),*) => {$(
        impl<Col> AdvanceToken<Col> for $int
        where
            Col: Expression + ExpressionMethods + Add<$int> + Copy,
            Col::SqlType: SqlType + TypedExpressionType,
            $int: AsExpression<Col::SqlType>,
            dsl::Eq<Col, $int>: Expression,
            <dsl::Eq<Col, $int> as Expression>::SqlType: BoolOrNullableBool,
            <Col as Add<$int>>::Output: AsExpression<Col::SqlType>,
            WrappingIncrement<Col, $int>: AsExpression<Col::SqlType>,
        {
            type Assignment = dsl::Eq<Col, WrappingIncrement<Col, $int>>;

            // `column + 1` is SQL, not Rust arithmetic, and the CASE keeps it in range.
            #[allow(clippy::arithmetic_side_effects)]
            fn advance(column: Col, _precision: u8) -> Self::Assignment {
                column.eq(
                    dsl::case_when(column.eq(<$int>::MAX), <$int>::MIN).otherwise(column + 1),
                )
            }
        }
    )*};
}

counter_advance!(i16, i32, i64);

#[cfg(feature = "uuid")]
macro_rules! fresh_value_advance {
    ($($ty:ty),*) => {$(
        impl<Col> AdvanceToken<Col> for $ty
        where
            Col: Expression + ExpressionMethods,
            Col::SqlType: SqlType,
            $ty: AsExpression<Col::SqlType>,
        {
            type Assignment = dsl::Eq<Col, $ty>;

            fn advance(column: Col, _precision: u8) -> Self::Assignment {
                column.eq(<$ty as VersionToken>::initial())
            }
        }
    )*};
}

#[cfg(feature = "uuid")]
fresh_value_advance!(uuid::Uuid, crate::UuidToken);

/// `$sqlite_suffix`: what SQLite's text must end with for the token type to read it
/// back as UTC (`+00:00` for a type with an offset; a naive one takes none).
#[cfg(any(feature = "chrono", feature = "time"))]
macro_rules! timestamp_advance {
    ($($ty:ty => $sqlite_suffix:literal);*) => {$(
        impl<Col> AdvanceToken<Col> for $ty
        where
            Col: Expression + ExpressionMethods + Copy,
            Col::SqlType: SqlType + TypedExpressionType,
        {
            type Assignment = dsl::Eq<Col, AdvancedTimestamp<Col, $ty>>;

            fn advance(column: Col, precision: u8) -> Self::Assignment {
                let now: $ty = clock_at(precision);
                column.eq(AdvancedTimestamp::new(column, now, precision, $sqlite_suffix))
            }
        }
    )*};
}

#[cfg(feature = "chrono")]
timestamp_advance!(
    chrono::NaiveDateTime => "";
    chrono::DateTime<chrono::Utc> => "+00:00"
);

#[cfg(feature = "time")]
timestamp_advance!(
    time::PrimitiveDateTime => "";
    time::OffsetDateTime => "+00:00"
);

/// A changeset that leaves the token column `TokenColumn` to diesel-occ: neither assigns
/// it nor reads it. [`bulk_update`](crate::Versioned::bulk_update) and
/// [`soft_delete_checked`](crate::VersionColumnDsl::soft_delete_checked) take only such
/// changesets, so a changeset that assigns the token is a compile error instead of a
/// token the write then advances, overwrites or rejects differently on each backend.
///
/// Implemented for what Diesel's `.set(...)` takes when it is built from columns:
/// `column.eq(value)`, `Option`s of it and tuples of these, where no `column` is the
/// token column and no `value` reads it (the check is Diesel's own column bookkeeping,
/// so it needs the columns of one `table!`), and for a `#[derive(AsChangeset)]` struct
/// that also derives [`ChangesetColumns`](crate::ChangesetColumns), which states the
/// columns Diesel's derive assigns (Diesel keeps them out of the type system).
///
/// ```
/// # include!(concat!(env!("CARGO_MANIFEST_DIR"), "/src/doctest_setup.rs"));
/// use diesel::prelude::*;
/// use diesel_occ::statement::NoTokenAssignment;
///
/// fn leaves_the_token<C: NoTokenAssignment<stock::version>>(_: C) {}
///
/// # fn main() {
/// leaves_the_token(stock::available.eq(0));
/// leaves_the_token((stock::available.eq(stock::available + 1), Some(stock::deleted.eq(true))));
/// # }
/// ```
///
/// ```compile_fail
/// # include!(concat!(env!("CARGO_MANIFEST_DIR"), "/src/doctest_setup.rs"));
/// # use diesel::prelude::*;
/// # use diesel_occ::statement::NoTokenAssignment;
/// # fn leaves_the_token<C: NoTokenAssignment<stock::version>>(_: C) {}
/// # fn main() {
/// leaves_the_token((stock::available.eq(0), stock::version.eq(999)));
/// # }
/// ```
#[diagnostic::on_unimplemented(
    message = "`{Self}` is not a changeset diesel-occ can check for the token column",
    label = "not built from `column.eq(value)` assignments, nor a form deriving `ChangesetColumns`",
    note = "pass `column.eq(value)`, `Option`s of it or tuples of these, or a struct deriving \
            Diesel's `AsChangeset` and `diesel_occ::ChangesetColumns`, none of which assigns \
            or reads the token column `{TokenColumn}`"
)]
pub trait NoTokenAssignment<TokenColumn> {
    /// True when the changeset renders the same SQL text on every call: it has no
    /// `Option` part (see [`fixed_text`](super::fixed_text)).
    #[doc(hidden)]
    const FIXED_TEXT: bool;
}

impl<Changes, TokenColumn> NoTokenAssignment<TokenColumn> for Changes
where
    Changes: ValidGrouping<ColumnsOtherThan<TokenColumn>>,
    Changes::IsAggregate: TextIsFixed,
{
    const FIXED_TEXT: bool = <Changes::IsAggregate as TextIsFixed>::FIXED;
}

/// Every column of the token's table except the token, as a Diesel `GROUP BY` clause:
/// an expression is valid with it exactly when it does not mention the token column,
/// which Diesel's `table!` lets the compiler decide column by column.
#[doc(hidden)]
#[derive(Debug)]
pub struct ColumnsOtherThan<TokenColumn>(PhantomData<TokenColumn>);

impl<Col, TokenColumn> IsContainedInGroupBy<Col> for ColumnsOtherThan<TokenColumn>
where
    TokenColumn: IsContainedInGroupBy<Col>,
    <TokenColumn as IsContainedInGroupBy<Col>>::Output: NotTheTokenColumn,
{
    type Output = Yes;
}

/// `Option` is a changeset but not an expression: valid when what it holds is, and an
/// optional part of the changeset's text.
impl<T, TokenColumn> ValidGrouping<ColumnsOtherThan<TokenColumn>> for Option<T>
where
    T: ValidGrouping<ColumnsOtherThan<TokenColumn>>,
    T::IsAggregate: MixedAggregates<HasOptionalParts>,
{
    type IsAggregate = <T::IsAggregate as MixedAggregates<HasOptionalParts>>::Output;
}

/// `No` answers "is this column the token column?" for a column other than the token
/// (the token is never the primary key, the one column Diesel groups everything by).
#[doc(hidden)]
#[diagnostic::on_unimplemented(
    message = "the changeset assigns or reads the token column",
    label = "diesel-occ writes the token itself",
    note = "remove the token column from the changeset: every row the write touches \
            gets a fresh token, as each checked save gives it"
)]
pub trait NotTheTokenColumn {}

impl NotTheTokenColumn for No {}
