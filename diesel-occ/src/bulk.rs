//! Bulk updates that stay honest: every row they touch gets a fresh token, so an
//! in-flight edit of one of those rows conflicts instead of silently winning.

use chrono::{DateTime, NaiveDateTime, Utc};
use diesel::dsl;
use diesel::expression::AsExpression;
use diesel::query_builder::{AsChangeset, IntoUpdateTarget};
use diesel::sql_types::SqlType;
use diesel::{Expression, ExpressionMethods};
use uuid::Uuid;

use crate::parts::VersionedParts;
use crate::token::VersionToken;
use crate::uuid_token::UuidToken;

/// A token kind a bulk UPDATE can advance in SQL, on every row it touches.
///
/// | token | assignment |
/// |---|---|
/// | `i16`, `i32`, `i64` | `token = token + 1` |
/// | `uuid::Uuid`, [`UuidToken`] | `token = <one fresh random UUID>` |
/// | `NaiveDateTime`, `DateTime<Utc>` | `token = <now, at microseconds>` |
///
/// Only equality matters for a token, so one fresh UUID shared by the touched rows is
/// as good as one per row: each differs from every token read before. A counter at
/// its type's maximum makes the database report an overflow (a checked save wraps).
/// A timestamp token touched twice within one microsecond may keep its value; prefer
/// counters or UUIDs for rows that see bulk writes.
///
/// ```
/// # include!("tracked_doctest_setup.rs");
/// use diesel::prelude::*;
/// use diesel::sqlite::Sqlite;
/// use diesel_occ::AdvanceToken;
///
/// # fn main() {
/// let advance = <i32 as AdvanceToken<stock::version>>::advance(stock::version);
/// let sql = diesel::debug_query::<Sqlite, _>(&diesel::update(stock::table).set(advance)).to_string();
/// assert!(sql.starts_with("UPDATE `stock` SET `version` = (`stock`.`version` + ?)"), "{sql}");
/// # }
/// ```
pub trait AdvanceToken<Col>: VersionToken {
    /// The assignment `token = <advanced>`.
    type Assignment;

    /// The assignment for this column.
    fn advance(column: Col) -> Self::Assignment;
}

macro_rules! counter_advance {
    ($($int:ty),*) => {$(
        impl<Col> AdvanceToken<Col> for $int
        where
            Col: Expression + ExpressionMethods + std::ops::Add<$int> + Copy,
            Col::SqlType: SqlType,
            <Col as std::ops::Add<$int>>::Output: AsExpression<Col::SqlType>,
        {
            type Assignment = dsl::Eq<Col, <Col as std::ops::Add<$int>>::Output>;

            fn advance(column: Col) -> Self::Assignment {
                column.eq(column + 1)
            }
        }
    )*};
}

counter_advance!(i16, i32, i64);

macro_rules! fresh_value_advance {
    ($($ty:ty),*) => {$(
        impl<Col> AdvanceToken<Col> for $ty
        where
            Col: Expression + ExpressionMethods,
            Col::SqlType: SqlType,
            $ty: AsExpression<Col::SqlType>,
        {
            type Assignment = dsl::Eq<Col, $ty>;

            fn advance(column: Col) -> Self::Assignment {
                column.eq(<$ty as VersionToken>::initial())
            }
        }
    )*};
}

fresh_value_advance!(Uuid, UuidToken, NaiveDateTime, DateTime<Utc>);

/// The UPDATE [`BulkDsl::bulk_update`] builds: `target` updated with `changes` and the
/// advanced token.
pub type BulkUpdate<T, Target, Changes> = dsl::Update<
    Target,
    (
        Changes,
        <<T as crate::Versioned>::Token as AdvanceToken<<T as VersionedParts>::TokenColumn>>::Assignment,
    ),
>;

/// Bulk writes that bypass the per-entity check on purpose, and say so: they advance
/// the token of every row they touch.
///
/// Implemented for every [`Versioned`](crate::Versioned) entity; in the prelude. It
/// builds the statement only: run it with Diesel's or diesel-async's `execute`.
///
/// ```
/// # include!("tracked_doctest_setup.rs");
/// use diesel::prelude::*;
/// use diesel_occ::prelude::*;
///
/// # fn main() -> Result<(), Box<dyn std::error::Error>> {
/// let mut conn = connection();
/// let mut in_flight = Stock::find(&mut conn, 1)?;
///
/// // UPDATE stock SET available = 0, version = version + 1 WHERE available < 15
/// let touched = Stock::bulk_update(
///     stock::table.filter(stock::available.lt(15)),
///     stock::available.eq(0),
/// )
/// .execute(&mut conn)?;
/// assert_eq!(touched, 1);
///
/// // The edit that was in flight no longer overwrites the bulk write.
/// in_flight.available -= 1;
/// assert!(in_flight.save_checked(&mut conn).unwrap_err().is_conflict());
/// # Ok(())
/// # }
/// ```
pub trait BulkDsl: VersionedParts {
    /// `UPDATE <target> SET <changes>, token = <advanced>`: see [`AdvanceToken`] for
    /// what each token kind becomes. `target` is the table or a filtered table;
    /// `changes` anything Diesel's `.set(...)` takes. An entity whose token the
    /// database generates needs none of this: any UPDATE advances it.
    fn bulk_update<Target, Changes>(
        target: Target,
        changes: Changes,
    ) -> BulkUpdate<Self, Target, Changes>
    where
        Target: IntoUpdateTarget,
        Target::Table: diesel::Table,
        Self::Token: AdvanceToken<Self::TokenColumn>,
        (
            Changes,
            <Self::Token as AdvanceToken<Self::TokenColumn>>::Assignment,
        ): AsChangeset<Target = Target::Table>,
        BulkUpdate<Self, Target, Changes>: diesel::query_builder::AsQuery,
    {
        diesel::update(target).set((
            changes,
            <Self::Token as AdvanceToken<Self::TokenColumn>>::advance(Self::TokenColumn::default()),
        ))
    }
}

impl<T: VersionedParts> BulkDsl for T {}
