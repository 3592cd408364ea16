//! The statement building blocks of the checked writes, which know nothing of entities
//! ([`versioned`](crate::versioned) builds an entity's statements from them).
//!
//! A *guarded* statement is one whose `WHERE` carries the token that was read
//! (`<key> AND token = <original>`); that is all "guarded" means in diesel-occ. The
//! bypass guard (`bypass_guard`, feature `bypass-guard`) is something else: a trigger.
//!
//! - [`CachedUpdate`]: an `UPDATE` Diesel's statement cache keeps when its text is
//!   fixed;
//! - [`GeneratedUpdate`]: a guarded `UPDATE` that reads a database-generated token back;
//! - [`CurrentToken`]: the read that classifies a write that matched no row;
//! - [`TokenEq`]: the `token = <original>` predicate;
//! - [`NullSafeEq`]: `column IS NOT DISTINCT FROM <original>`, the predicate of a check
//!   column (`#[occ(check)]`) of an entity without a version column;
//! - [`AdvancedTimestamp`]: the token assignment of a bulk update of a timestamp token.
//!
//! The traits that tie these together (how a guarded `UPDATE` runs, how a token
//! advances in a bulk update, which changesets leave the token alone) appear in the
//! bounds of the checked writes only: users neither implement nor call them, so they are
//! hidden from these pages.

use diesel::connection::Connection;
use diesel::dsl::Filter;
use diesel::query_builder::{AsChangeset, IntoUpdateTarget, UpdateStatement};
use diesel::query_dsl::methods::{ExecuteDsl, FilterDsl};
use diesel::{QueryResult, QuerySource};

pub(crate) mod batch;
pub(crate) mod bulk;
mod cached_update;
mod current_token;
pub(crate) mod fixed_text;
mod insert_if_absent;
mod null_safe_eq;
mod token_eq;

#[doc(hidden)]
pub use batch::{Skippable, ValuesColumns, WrittenColumn};
#[cfg(any(feature = "chrono", feature = "time"))]
#[cfg_attr(docsrs, doc(cfg(any(feature = "chrono", feature = "time"))))]
pub use bulk::AdvancedTimestamp;
pub use bulk::{AdvanceToken, NoTokenAssignment};
pub use cached_update::CachedUpdate;
pub use current_token::CurrentToken;
#[doc(hidden)]
pub use fixed_text::{HasOptionalParts, TextIsFixed};
#[doc(hidden)]
pub use insert_if_absent::InsertIfAbsent;
pub use null_safe_eq::NullSafeEq;
pub use token_eq::TokenEq;

/// The token assignment of an entity whose token the database generates: there is
/// none, and writes that need one (force increment, soft delete, bulk update) do not
/// compile for such an entity.
///
/// ```
/// # include!(concat!(env!("CARGO_MANIFEST_DIR"), "/src/doctest_setup.rs"));
/// use diesel_occ::versioned::VersionedParts;
///
/// # fn main() {
/// // `Stock`'s token is assigned by the application, so it has an assignment.
/// assert!(!<Stock as VersionedParts>::GENERATED_TOKEN);
/// # }
/// ```
#[derive(Debug, Clone, Copy, Default)]
pub struct NotAssigned;

/// An entity whose token the application assigns, which a checked insert or upsert
/// writes: every entity deriving `Versioned` with `#[occ(version)]` but one whose token
/// the database generates (`#[occ(version, generated)]`, PostgreSQL's `xmin`). Such a
/// row's token exists only once the database has written it, so `insert_checked` and
/// `upsert_checked` do not compile for it: insert the row with Diesel's `insert_into`,
/// then read it, token and all, with `find`.
///
/// `#[derive(Versioned)]` implements it; apps need not concern themselves with this
/// trait.
///
/// ```
/// # include!(concat!(env!("CARGO_MANIFEST_DIR"), "/src/doctest_setup.rs"));
/// use diesel_occ::statement::AssignedToken;
///
/// fn assigned<T: AssignedToken>() {}
///
/// # fn main() {
/// assigned::<Stock>();
/// # }
/// ```
#[diagnostic::on_unimplemented(
    message = "the database generates the token of `{Self}`: a checked insert cannot write it",
    label = "no checked insert or upsert for an entity with `#[occ(version, generated)]`",
    note = "insert the row with Diesel's `insert_into`, then read it and its token with `find`"
)]
pub trait AssignedToken {}

/// The full save of an entity without a version column (`#[occ(check)]` fields): there
/// is none. Such an entity checks the values of its check columns as they were read,
/// which only a [`Tracked`](crate::Tracked) entity keeps once it is edited; this type
/// is its `UpdateStatement`, which no connection runs, so `entity.save_checked(conn)`
/// does not compile and names `Tracked` (see `VersionlessSave`).
///
/// ```
/// use diesel_occ::statement::SaveThroughTracked;
///
/// let _ = SaveThroughTracked;
/// ```
#[derive(Debug, Clone, Copy, Default)]
pub struct SaveThroughTracked;

/// What makes `entity.save_checked(conn)` of an entity without a version column a
/// compile error that names [`Tracked`](crate::Tracked): implemented for no connection,
/// it is the one unmet bound of [`SaveThroughTracked`]'s `GuardedUpdate`.
#[diagnostic::on_unimplemented(
    message = "an entity without a version column is saved through `diesel_occ::Tracked`",
    label = "no full save for an entity with `#[occ(check)]` columns",
    note = "its checked writes compare the check columns with their values as read, which only \
            `diesel_occ::Tracked` keeps once the entity is edited: \
            `let mut tracked = Tracked::new(entity); tracked.edit().field = value; \
            tracked.save_checked(conn)` (`TrackedDsl`, in the prelude)"
)]
pub trait VersionlessSave<Conn> {}

impl<Conn, Tok> GuardedUpdate<Conn, Tok> for SaveThroughTracked
where
    Conn: VersionlessSave<Conn>,
{
    fn run_guarded(self, _: &mut Conn, _: Tok) -> QueryResult<(usize, Tok)> {
        // Never reached: no connection implements `VersionlessSave`.
        Err(diesel::result::Error::QueryBuilderError(
            "an entity without a version column is saved through `Tracked`".into(),
        ))
    }
}

/// The guarded UPDATE of an entity with a database-generated token
/// (`#[occ(version, generated)]`): `UPDATE ... RETURNING token`, run with a load so the
/// token the database assigned is read back in the same statement.
///
/// It is not a Diesel query of its own: only `GuardedUpdate` runs it, so a code path
/// that would ignore the returned token does not compile. See `diesel_occ::pg` for an
/// entity that uses it.
///
/// ```
/// use diesel_occ::statement::GeneratedUpdate;
///
/// let wrapped = GeneratedUpdate::new("UPDATE ... RETURNING xmin");
/// assert_eq!(wrapped.into_inner(), "UPDATE ... RETURNING xmin");
/// ```
#[derive(Debug, Clone)]
pub struct GeneratedUpdate<S>(S);

impl<S> GeneratedUpdate<S> {
    /// Wraps `UPDATE ... RETURNING token`.
    pub fn new(statement: S) -> Self {
        GeneratedUpdate(statement)
    }

    /// The wrapped statement.
    pub fn into_inner(self) -> S {
        self.0
    }
}

/// A guarded UPDATE on a blocking connection: runs it and says how many rows it wrote
/// and which token they hold now.
///
/// Implemented for [`CachedUpdate`], the statement `#[derive(Versioned)]` builds, and
/// for Diesel's `UpdateStatement` (for both, the token is the `fresh` one the statement
/// assigned), and for [`GeneratedUpdate`] (the token is the one `RETURNING` read back).
/// The checked operations run their statements through it.
///
/// A database-generated token needs `RETURNING`, which diesel-occ supports on
/// PostgreSQL only: saving such an entity on MySQL or SQLite does not compile.
///
/// ```
/// # include!(concat!(env!("CARGO_MANIFEST_DIR"), "/src/doctest_setup.rs"));
/// use diesel_occ::statement::GuardedUpdate;
/// use diesel_occ::{VersionToken, Versioned};
///
/// # fn main() -> diesel::QueryResult<()> {
/// let mut conn = connection();
/// let stock = Stock { id: 1, available: 9, deleted: false, version: 1 };
/// let fresh = stock.version.next_token();
/// let (written, token) = stock.update_statement(&fresh).run_guarded(&mut conn, fresh)?;
/// assert_eq!((written, token), (1, 2));
/// # Ok(())
/// # }
/// ```
#[diagnostic::on_unimplemented(
    message = "this checked UPDATE cannot run on `{Conn}`",
    label = "not a guarded UPDATE for this connection",
    note = "an entity with `#[occ(version, generated)]` reads its new token back with RETURNING, \
            which diesel-occ supports on PostgreSQL only; on MySQL and SQLite let the \
            application assign the token (an integer or UUID `#[occ(version)]`)"
)]
pub trait GuardedUpdate<Conn, Tok> {
    /// Runs the statement: the number of rows written, and the token they now hold
    /// (`fresh` when nothing came back).
    fn run_guarded(self, conn: &mut Conn, fresh: Tok) -> QueryResult<(usize, Tok)>;
}

impl<T, U, V, Conn, Tok> GuardedUpdate<Conn, Tok> for UpdateStatement<T, U, V>
where
    T: QuerySource,
    Conn: Connection,
    Self: ExecuteDsl<Conn>,
{
    fn run_guarded(self, conn: &mut Conn, fresh: Tok) -> QueryResult<(usize, Tok)> {
        Ok((ExecuteDsl::execute(self, conn)?, fresh))
    }
}

impl<Target, Changes, Conn, Tok> GuardedUpdate<Conn, Tok> for CachedUpdate<Target, Changes>
where
    Target: IntoUpdateTarget,
    Changes: AsChangeset,
    Conn: Connection,
    Self: ExecuteDsl<Conn>,
{
    fn run_guarded(self, conn: &mut Conn, fresh: Tok) -> QueryResult<(usize, Tok)> {
        Ok((ExecuteDsl::execute(self, conn)?, fresh))
    }
}

/// PostgreSQL only: the one backend whose `RETURNING` diesel-occ reads a generated
/// token back with (any other connection gets the "cannot run" error above).
#[cfg(feature = "postgres")]
impl<S, Conn, Tok> GuardedUpdate<Conn, Tok> for GeneratedUpdate<S>
where
    Conn: Connection<Backend = diesel::pg::Pg>,
    S: diesel::query_dsl::RunQueryDsl<Conn> + diesel::query_dsl::LoadQuery<'static, Conn, Tok>,
{
    fn run_guarded(self, conn: &mut Conn, fresh: Tok) -> QueryResult<(usize, Tok)> {
        let mut rows: Vec<Tok> = self.0.load(conn)?;
        let written = rows.len();
        Ok((written, rows.pop().unwrap_or(fresh)))
    }
}

/// A guarded statement narrowed by one more predicate of the caller's: the UPDATE of
/// [`save_checked_where`](crate::CheckedDsl::save_checked_where).
pub trait Narrow<Predicate> {
    /// The statement with `AND <predicate>` in its `WHERE`.
    type Output;

    /// Adds the predicate.
    fn narrow(self, predicate: Predicate) -> Self::Output;
}

impl<Target, Changes, Predicate> Narrow<Predicate> for CachedUpdate<Target, Changes>
where
    Target: IntoUpdateTarget + Clone + FilterDsl<Predicate>,
    Changes: AsChangeset<Target = Target::Table>,
    Filter<Target, Predicate>: IntoUpdateTarget<Table = Target::Table> + Clone,
    Predicate: diesel::query_builder::QueryId,
{
    type Output = CachedUpdate<Filter<Target, Predicate>, Changes>;

    fn narrow(self, predicate: Predicate) -> Self::Output {
        self.filter(predicate)
    }
}

impl<S, Predicate> Narrow<Predicate> for GeneratedUpdate<S>
where
    S: FilterDsl<Predicate>,
{
    type Output = GeneratedUpdate<Filter<S, Predicate>>;

    fn narrow(self, predicate: Predicate) -> Self::Output {
        GeneratedUpdate(self.0.filter(predicate))
    }
}
