//! What comes after the conflict, on a blocking connection: tracked saves and merge,
//! batch saves, force increment and checked soft delete.

use diesel::associations::HasTable;
use diesel::connection::Connection;
use diesel::dsl::{AsSelect, Select};
use diesel::query_builder::{AsChangeset, AsQuery, IntoUpdateTarget, QueryId};
use diesel::query_dsl::methods::{ExecuteDsl, SelectDsl};
use diesel::query_dsl::{LoadQuery, RunQueryDsl};
use diesel::{Selectable, Table};

use crate::batch::BatchConflict;
use crate::checked::{self, CurrentToken};
use crate::error::{ConflictState, Error, Operation};
use crate::parts::{GuardedUpdate, VersionedParts};
use crate::sync::{CheckedDsl, classify, settle};
use crate::tracked::{SaveOutcome, Tracked, Tracking};
use crate::versioned::Versioned;

/// Checked saves of a [`Tracked`] entity on a blocking connection: only the edited
/// columns are written, and a conflict can be merged.
///
/// Implemented for `Tracked<T>` of every entity deriving `Versioned` with
/// `#[occ(track)]`; in the prelude. The async twin, with the same names, is
/// `diesel_occ::asynchronous::TrackedDsl`. See [`Tracked`] for an example.
pub trait TrackedDsl<Conn: Connection> {
    /// The tracked entity.
    type Entity: Tracking;

    /// Writes the fields edited since the values were read, and a fresh token:
    /// `UPDATE t SET <edited columns>, token = <fresh> WHERE <key> AND token = <original>`,
    /// one statement (the token alone when nothing was edited; with a database-generated
    /// token, every tracked field with its unchanged value).
    ///
    /// On success the saved values become the values as read. On
    /// [`Error::Conflict`] (stale, with the current token, or deleted) nothing changes.
    fn save_checked(&mut self, conn: &mut Conn) -> Result<(), Error>;

    /// Loads the row as it is now, typed: `theirs` for [`Tracked::three_way`] and
    /// [`Tracked::merge`]. [`Error::NotFound`] when it was deleted.
    fn load_current(&self, conn: &mut Conn) -> Result<Self::Entity, Error>;

    /// [`save_checked`](Self::save_checked), and on a stale-token conflict: loads the
    /// current row and, when the edits do not overlap its changes, applies them on top
    /// of it and saves once more with its token (that save can conflict again: the
    /// error is returned). When they overlap, writes nothing and returns the overlap.
    /// A deleted row is returned as its [`Error::Conflict`].
    fn save_merging(&mut self, conn: &mut Conn) -> Result<SaveOutcome<Self::Entity>, Error>;
}

impl<T, Conn> TrackedDsl<Conn> for Tracked<T>
where
    T: Tracking + Clone + Selectable<Conn::Backend>,
    Conn: Connection,
    T::FieldsUpdateStatement: GuardedUpdate<Conn, T::Token>,
    CurrentToken<T::TokenQuery>: LoadQuery<'static, Conn, T::Token>,
    T::SelectExpression: QueryId,
    T::FindQuery: SelectDsl<AsSelect<T, Conn::Backend>>,
    Select<T::FindQuery, AsSelect<T, Conn::Backend>>:
        RunQueryDsl<Conn> + LoadQuery<'static, Conn, T>,
{
    type Entity = T;

    fn save_checked(&mut self, conn: &mut Conn) -> Result<(), Error> {
        let fields = self.fields_to_write();
        let fresh = self.fresh_token()?;
        let (affected, fresh) = self
            .current()
            .fields_update_statement(fields, &fresh)
            .run_guarded(conn, fresh)?;
        let expected = self.original().token();
        settle::<T, Conn>(conn, &self.key(), expected, Operation::Update, affected)?;
        self.saved(fresh);
        Ok(())
    }

    fn load_current(&self, conn: &mut Conn) -> Result<T, Error> {
        <T as CheckedDsl<Conn>>::find(conn, self.key())
    }

    fn save_merging(&mut self, conn: &mut Conn) -> Result<SaveOutcome<T>, Error> {
        let conflict = match TrackedDsl::save_checked(self, conn) {
            Ok(()) => return Ok(SaveOutcome::Saved),
            Err(Error::Conflict(conflict))
                if matches!(conflict.state(), ConflictState::Stale { .. }) =>
            {
                conflict
            }
            Err(error) => return Err(error),
        };
        let theirs = match self.load_current(conn) {
            Ok(theirs) => theirs,
            // Deleted between the conflict and the read: report the original conflict.
            Err(Error::NotFound(_)) => return Err(conflict.into()),
            Err(error) => return Err(error),
        };
        match self.merge(theirs) {
            Ok(theirs) => {
                TrackedDsl::save_checked(self, conn)?;
                Ok(SaveOutcome::Merged { theirs })
            }
            Err(overlap) => Ok(SaveOutcome::Overlap(overlap)),
        }
    }
}

/// Batch saves on a blocking connection: several entities in one transaction, all or
/// nothing.
///
/// Implemented for slices of every [`Versioned`] entity (`[T]`, so `Vec<T>` and arrays
/// too); in the prelude. The async twin is `diesel_occ::asynchronous::BatchDsl`.
///
/// A batch holds entities of one type. To save an aggregate of several types all or
/// nothing, save each kind's batch (or entity) inside one
/// [`diesel_occ::transaction`](crate::transaction()) that is given every batch: each
/// batch runs in a savepoint of it, the first error rolls the whole transaction back
/// (the error names the conflicts of the batch that failed), and every entity gets
/// back the token it read.
///
/// ```
/// # include!("tracked_doctest_setup.rs");
/// use diesel_occ::prelude::*;
///
/// # fn main() -> Result<(), diesel_occ::Error> {
/// let mut conn = connection();
/// let mut batch = vec![Stock::find(&mut conn, 1)?, Stock::find(&mut conn, 2)?];
/// let mut other = Stock::find(&mut conn, 2)?;
/// other.available = 19;
/// other.save_checked(&mut conn)?;
///
/// batch[0].available = 0;
/// batch[1].available = 0;
/// let error = batch.save_all_checked(&mut conn).unwrap_err();
/// let conflict = error.as_batch_conflict().expect("a batch conflict");
/// assert_eq!(conflict.indices().collect::<Vec<_>>(), [1]);
/// // Nothing was written, no token advanced.
/// assert_eq!(Stock::find(&mut conn, 1)?.available, 10);
/// assert_eq!((batch[0].version, batch[1].version), (1, 1));
/// # Ok(())
/// # }
/// ```
pub trait BatchDsl<Conn: Connection> {
    /// Saves every entity with its guarded UPDATE (one statement each) inside one
    /// transaction. When any of them is stale or deleted, the transaction is rolled
    /// back after every entity was tried, and [`Error::Batch`] lists each conflicted
    /// entity with its position; no entity's token changes. On success every entity
    /// holds its fresh token.
    ///
    /// The transaction is a savepoint when the connection is already in one, so the
    /// batch composes with the caller's transaction. When that transaction rolls back
    /// after the batch succeeded, only [`diesel_occ::transaction`](crate::transaction())
    /// gives the entities their tokens back: run it with the batch among its entities.
    fn save_all_checked(&mut self, conn: &mut Conn) -> Result<(), Error>;
}

impl<T, Conn> BatchDsl<Conn> for [T]
where
    T: Versioned,
    Conn: Connection,
    T::UpdateStatement: GuardedUpdate<Conn, T::Token>,
    CurrentToken<T::TokenQuery>: LoadQuery<'static, Conn, T::Token>,
{
    fn save_all_checked(&mut self, conn: &mut Conn) -> Result<(), Error> {
        let entities = &*self;
        let fresh = conn.transaction(|conn| {
            let mut fresh_tokens = Vec::with_capacity(entities.len());
            let mut conflicts = Vec::new();
            for (index, entity) in entities.iter().enumerate() {
                let fresh = entity.fresh_token()?;
                let (affected, fresh) = entity.update_statement(&fresh).run_guarded(conn, fresh)?;
                if checked::written(entity, affected)? {
                    fresh_tokens.push(fresh);
                } else {
                    // A zero-row UPDATE leaves the transaction usable on every backend:
                    // keep going, so the error names every stale or deleted entity.
                    match classify::<T, Conn>(
                        &entity.key(),
                        entity.token(),
                        Operation::Update,
                        conn,
                    ) {
                        Error::Conflict(conflict) => conflicts.push((index, conflict)),
                        error => return Err(error),
                    }
                }
            }
            if conflicts.is_empty() {
                Ok(fresh_tokens)
            } else {
                Err(Error::Batch(BatchConflict::new(entities.len(), conflicts)))
            }
        })?;
        for (entity, fresh) in self.iter_mut().zip(fresh) {
            entity.set_token(fresh);
            checked::trace_written(entity, Operation::Update);
        }
        Ok(())
    }
}

/// Checked writes of the token alone or of a deleted marker, on a blocking connection.
///
/// Implemented for every [`Versioned`] entity whose token the application assigns; in
/// the prelude. The async twin is `diesel_occ::asynchronous::AggregateDsl`.
pub trait AggregateDsl<Conn: Connection>: VersionedParts {
    /// Advances the token without writing any other column:
    /// `UPDATE t SET token = <fresh> WHERE <key> AND token = <original>` (JPA's
    /// `OPTIMISTIC_FORCE_INCREMENT`).
    ///
    /// Call it on an aggregate root inside the transaction that writes its children:
    /// two writers that edit different children of one order then still conflict on
    /// the order, and the loser's transaction rolls back. On success the entity holds
    /// the fresh token; on [`Error::Conflict`] it is unchanged. Run that transaction
    /// with [`diesel_occ::transaction`](crate::transaction()), the root and the
    /// children among its entities, so that a rollback gives them their tokens back.
    ///
    /// ```
    /// # include!("tracked_doctest_setup.rs");
    /// use diesel::Connection;
    /// use diesel_occ::prelude::*;
    ///
    /// # fn main() -> Result<(), diesel_occ::Error> {
    /// let mut conn = connection();
    /// let mut order = Stock::find(&mut conn, 1)?; // the aggregate root
    /// let mut stale = order.clone();
    /// diesel_occ::transaction(&mut conn, &mut order, |conn, order| {
    ///     // ... insert or update the order's lines here ...
    ///     order.force_increment(conn)
    /// })?;
    /// assert_eq!(order.version, 2);
    /// let error = conn.transaction(|conn| stale.force_increment(conn)).unwrap_err();
    /// assert!(error.is_conflict());
    /// # Ok(())
    /// # }
    /// ```
    fn force_increment(&mut self, conn: &mut Conn) -> Result<(), Error>
    where
        Self::Guarded: IntoUpdateTarget,
        <Self::Guarded as HasTable>::Table: Table,
        Self::TokenAssignment: AsChangeset<Target = <Self::Guarded as HasTable>::Table>,
        diesel::dsl::Update<Self::Guarded, Self::TokenAssignment>: AsQuery + ExecuteDsl<Conn>,
        CurrentToken<Self::TokenQuery>: LoadQuery<'static, Conn, Self::Token>,
    {
        let fresh = self.fresh_token()?;
        let statement = diesel::update(self.guarded()).set(Self::token_assignment(&fresh));
        let affected = ExecuteDsl::execute(statement, conn)?;
        settle::<Self, Conn>(
            conn,
            &self.key(),
            self.token(),
            Operation::ForceIncrement,
            affected,
        )?;
        self.set_token(fresh);
        Ok(())
    }

    /// Marks the row deleted with a checked UPDATE of the marker and the token:
    /// `UPDATE t SET <marker>, token = <fresh> WHERE <key> AND token = <original>`.
    ///
    /// `marker` is what Diesel's `.set(...)` takes, such as `stock::deleted.eq(true)`
    /// or `stock::deleted_at.eq(now)`; no other column is written. A writer still
    /// holding the entity as it was before conflicts instead of resurrecting it. On
    /// success the entity holds the fresh token (set the marker field yourself if you
    /// keep using it); on [`Error::Conflict`] it is unchanged.
    ///
    /// `marker` never assigns or reads the token column: that is a compile error (see
    /// [`NoTokenAssignment`](crate::NoTokenAssignment)), since the write assigns the
    /// fresh token itself.
    ///
    /// ```
    /// # include!("tracked_doctest_setup.rs");
    /// use diesel::prelude::*;
    /// use diesel_occ::prelude::*;
    ///
    /// # fn main() -> Result<(), diesel_occ::Error> {
    /// let mut conn = connection();
    /// let mut stock = Stock::find(&mut conn, 1)?;
    /// let mut in_flight = stock.clone();
    /// stock.soft_delete_checked(&mut conn, stock::deleted.eq(true))?;
    /// assert!(Stock::find(&mut conn, 1)?.deleted);
    ///
    /// in_flight.available = 3;
    /// assert!(in_flight.save_checked(&mut conn).unwrap_err().is_conflict());
    /// # Ok(())
    /// # }
    /// ```
    fn soft_delete_checked<M>(&mut self, conn: &mut Conn, marker: M) -> Result<(), Error>
    where
        Self::Guarded: IntoUpdateTarget,
        <Self::Guarded as HasTable>::Table: Table,
        M: crate::NoTokenAssignment<Self::TokenColumn>,
        (M, Self::TokenAssignment): AsChangeset<Target = <Self::Guarded as HasTable>::Table>,
        diesel::dsl::Update<Self::Guarded, (M, Self::TokenAssignment)>: AsQuery + ExecuteDsl<Conn>,
        CurrentToken<Self::TokenQuery>: LoadQuery<'static, Conn, Self::Token>,
    {
        let fresh = self.fresh_token()?;
        let statement =
            diesel::update(self.guarded()).set((marker, Self::token_assignment(&fresh)));
        let affected = ExecuteDsl::execute(statement, conn)?;
        settle::<Self, Conn>(
            conn,
            &self.key(),
            self.token(),
            Operation::SoftDelete,
            affected,
        )?;
        self.set_token(fresh);
        Ok(())
    }
}

impl<T: VersionedParts, Conn: Connection> AggregateDsl<Conn> for T {}
