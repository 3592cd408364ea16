//! [`CachedUpdate`]: the guarded UPDATE of a checked save, as a statement Diesel
//! prepares once per connection.

use std::fmt;

use diesel::QueryResult;
use diesel::backend::Backend;
use diesel::dsl::Filter;
use diesel::query_builder::{
    AsChangeset, AstPass, IntoUpdateTarget, QueryFragment, QueryId, UpdateTarget,
};
use diesel::query_dsl::methods::FilterDsl;
use diesel::query_source::{QuerySource, Table};

/// `UPDATE <table> SET <changes> WHERE <target's filter>`, which Diesel's statement cache
/// keeps by its SQL text: the statement every checked save runs.
///
/// Diesel never caches its own `UpdateStatement`: a changeset with `Option` fields
/// skips the `None` ones, so one Rust type can render different SQL, and a cache keyed
/// by the type could run the wrong statement. Every UPDATE is then prepared again,
/// which on PostgreSQL costs a round trip per save and on SQLite a compilation. This
/// statement renders the same SQL as `diesel::update(target).set(changes)` but has no
/// static query id, so the cache keys it by its SQL text and bind types (as Diesel
/// keys boxed queries): the text is prepared once per connection and reused.
///
/// Diesel's cache never evicts, and on MySQL and MariaDB every cached statement holds
/// one of the server's `max_prepared_stmt_count` slots, shared by all connections. So
/// only a statement whose text is one of few should be cached: one whose text varies
/// from call to call (a changeset that skips its `None` fields, a subset of the
/// columns, a condition built at run time) is marked with
/// [`cached_if(false)`](Self::cached_if) and prepared for one execution, then closed,
/// like Diesel's own UPDATE. Whether a statement is cached is decided by the statement
/// alone, never by state shared between connections or callers.
///
/// `#[derive(Versioned)]` builds it for `save_checked`, cached when its `Option` fields
/// (those without `treat_none_as_null`, whose `None` leaves the column alone) are all
/// `Some` or all `None`, so at most two texts per entity; and for `Tracked` saves,
/// cached only when every tracked field is written. `update_by_key` builds one cached
/// when its changeset has no `Option` part (one text), and `save_checked_where`
/// narrows the save's, cached when the condition's type fixes its text.
/// You build it with [`CachedUpdate::new`] where you would call
/// `diesel::update(target).set(changes)`; a changeset that sets nothing fails with
/// Diesel's `EmptyChangeset` error, as Diesel's own UPDATE does.
///
/// ```
/// use diesel::connection::InstrumentationEvent;
/// use diesel::prelude::*;
/// use diesel_occ::statement::CachedUpdate;
/// use std::sync::{Arc, Mutex};
///
/// diesel::table! { stock (id) { id -> Integer, available -> Integer } }
///
/// # fn main() -> QueryResult<()> {
/// let mut conn = SqliteConnection::establish(":memory:").unwrap();
/// diesel::sql_query("CREATE TABLE stock (id INTEGER PRIMARY KEY, available INTEGER NOT NULL)")
///     .execute(&mut conn)?;
/// let cached = Arc::new(Mutex::new(Vec::new()));
/// let log = Arc::clone(&cached);
/// conn.set_instrumentation(move |event: InstrumentationEvent<'_>| {
///     if let InstrumentationEvent::CacheQuery { sql, .. } = event {
///         log.lock().unwrap().push(sql.to_owned());
///     }
/// });
/// for available in 0..3 {
///     CachedUpdate::new(stock::table.find(1), stock::available.eq(available)).execute(&mut conn)?;
/// }
/// // Prepared and cached once, then reused.
/// assert_eq!(
///     *cached.lock().unwrap(),
///     [r#"UPDATE `stock` SET `available` = ? WHERE (`stock`.`id` = ?)"#]
/// );
/// # Ok(())
/// # }
/// ```
#[must_use = "a statement runs only when it is executed"]
pub struct CachedUpdate<Target, Changes>
where
    Target: IntoUpdateTarget,
    Changes: AsChangeset,
{
    /// Kept to build a narrower target for [`filter`](Self::filter).
    target: Target,
    from_clause: <Target::Table as QuerySource>::FromClause,
    where_clause: Target::WhereClause,
    changes: Changes::Changeset,
    /// Whether Diesel's statement cache keeps the statement.
    cached: bool,
}

impl<Target, Changes> CachedUpdate<Target, Changes>
where
    Target: IntoUpdateTarget + Clone,
    Changes: AsChangeset<Target = Target::Table>,
{
    /// The UPDATE of `target`'s rows (a table, or a table with filters) with `changes`,
    /// as `diesel::update(target).set(changes)` builds it.
    pub fn new(target: Target, changes: Changes) -> Self {
        Self::with_changeset(target, changes.as_changeset(), true)
    }

    /// Keeps the statement in Diesel's statement cache only when `cached` is true
    /// (the default); otherwise it is prepared for one execution and closed.
    ///
    /// Pass false when the SQL text varies between calls, so the connection does not
    /// keep one prepared statement per distinct text for its whole life: a changeset
    /// with `Option` assignments that may be `None`, or one that writes a chosen subset
    /// of the columns.
    ///
    /// ```
    /// use diesel::connection::InstrumentationEvent;
    /// use diesel::prelude::*;
    /// use diesel_occ::statement::CachedUpdate;
    /// use std::sync::{Arc, Mutex};
    ///
    /// diesel::table! { stock (id) { id -> Integer, available -> Integer, note -> Nullable<Text> } }
    ///
    /// # fn main() -> QueryResult<()> {
    /// let mut conn = SqliteConnection::establish(":memory:").unwrap();
    /// diesel::sql_query("CREATE TABLE stock (id INTEGER PRIMARY KEY, available INTEGER NOT NULL, note TEXT)")
    ///     .execute(&mut conn)?;
    /// let cached = Arc::new(Mutex::new(0));
    /// let log = Arc::clone(&cached);
    /// conn.set_instrumentation(move |event: InstrumentationEvent<'_>| {
    ///     if let InstrumentationEvent::CacheQuery { .. } = event {
    ///         *log.lock().unwrap() += 1;
    ///     }
    /// });
    /// for note in [None, Some("restocked"), None] {
    ///     // `None` leaves `note` alone: two different texts.
    ///     let changes = (stock::available.eq(3), note.map(|n| stock::note.eq(n)));
    ///     CachedUpdate::new(stock::table.find(1), changes)
    ///         .cached_if(note.is_some())
    ///         .execute(&mut conn)?;
    /// }
    /// assert_eq!(*cached.lock().unwrap(), 1, "only the text that writes every column");
    /// # Ok(())
    /// # }
    /// ```
    pub fn cached_if(mut self, cached: bool) -> Self {
        self.cached = self.cached && cached;
        self
    }

    fn with_changeset(target: Target, changes: Changes::Changeset, cached: bool) -> Self {
        let UpdateTarget {
            table,
            where_clause,
        } = target.clone().into_update_target();
        CachedUpdate {
            target,
            from_clause: table.from_clause(),
            where_clause,
            changes,
            cached,
        }
    }

    /// Narrows the rows the UPDATE writes with one more predicate, ANDed to the
    /// target's, as `UpdateStatement::filter` does: a checked save's statement with a
    /// condition of the caller's (`AND status = 'PENDING'`). The statement stays cached
    /// only if the predicate's type fixes its text (Diesel's own rule: a static
    /// `QueryId`); a condition written at run time (`diesel::dsl::sql`) is prepared for
    /// one execution.
    ///
    /// ```
    /// use diesel::prelude::*;
    /// use diesel_occ::statement::CachedUpdate;
    ///
    /// diesel::table! { stock (id) { id -> Integer, available -> Integer } }
    ///
    /// let update = CachedUpdate::new(stock::table.find(1), stock::available.eq(0))
    ///     .filter(stock::available.gt(0));
    /// assert_eq!(
    ///     diesel::debug_query::<diesel::sqlite::Sqlite, _>(&update).to_string(),
    ///     "UPDATE `stock` SET `available` = ? WHERE ((`stock`.`id` = ?) AND (`stock`.`available` > ?)) \
    ///      -- binds: [0, 1, 0]"
    /// );
    /// ```
    pub fn filter<Predicate>(
        self,
        predicate: Predicate,
    ) -> CachedUpdate<Filter<Target, Predicate>, Changes>
    where
        Target: FilterDsl<Predicate>,
        Filter<Target, Predicate>: IntoUpdateTarget<Table = Target::Table> + Clone,
        Predicate: QueryId,
    {
        let cached = self.cached && Predicate::HAS_STATIC_QUERY_ID;
        CachedUpdate::with_changeset(self.target.filter(predicate), self.changes, cached)
    }
}

impl<Target, Changes> fmt::Debug for CachedUpdate<Target, Changes>
where
    Target: IntoUpdateTarget,
    Changes: AsChangeset,
{
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // `diesel::debug_query` shows the SQL; the parts have no useful `Debug` here.
        f.debug_struct("CachedUpdate").finish_non_exhaustive()
    }
}

/// No static query id: Diesel's statement cache then keys the statement by its SQL
/// text, which is what makes caching it safe (when it is [cached](CachedUpdate::cached_if)).
impl<Target, Changes> QueryId for CachedUpdate<Target, Changes>
where
    Target: IntoUpdateTarget,
    Changes: AsChangeset,
{
    type QueryId = ();
    const HAS_STATIC_QUERY_ID: bool = false;
}

impl<Target, Changes, DB> QueryFragment<DB> for CachedUpdate<Target, Changes>
where
    DB: Backend,
    Target: IntoUpdateTarget,
    Target::Table: Table,
    <Target::Table as QuerySource>::FromClause: QueryFragment<DB>,
    Target::WhereClause: QueryFragment<DB>,
    Changes: AsChangeset,
    Changes::Changeset: QueryFragment<DB>,
{
    // What Diesel's `UpdateStatement` writes, with its `unsafe_to_cache_prepared` only
    // when the text varies.
    fn walk_ast<'b>(&'b self, mut out: AstPass<'_, 'b, DB>) -> QueryResult<()> {
        if !self.cached {
            out.unsafe_to_cache_prepared();
        }
        if self.changes.is_noop(out.backend())? {
            return Err(diesel::result::Error::QueryBuilderError(Box::new(
                diesel::result::EmptyChangeset,
            )));
        }
        out.push_sql("UPDATE ");
        self.from_clause.walk_ast(out.reborrow())?;
        out.push_sql(" SET ");
        self.changes.walk_ast(out.reborrow())?;
        self.where_clause.walk_ast(out.reborrow())?;
        Ok(())
    }
}

impl<Target, Changes, Conn> diesel::RunQueryDsl<Conn> for CachedUpdate<Target, Changes>
where
    Target: IntoUpdateTarget,
    Changes: AsChangeset,
{
}
