//! [`BatchDsl`]: several entities saved in one transaction on a blocking connection,
//! all or nothing.

use diesel::connection::Connection;
use diesel::query_dsl::LoadQuery;

use crate::blocking::classify;
use crate::error::BatchConflict;
use crate::error::{Error, Operation};
use crate::outcome;
use crate::statement::CurrentToken;
use crate::statement::GuardedUpdate;
use crate::versioned::Versioned;

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
/// # include!("../tracked_doctest_setup.rs");
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
    /// Saves every entity with its guarded UPDATE inside one transaction. When any of
    /// them is stale or deleted, the transaction is rolled back after every entity was
    /// tried, and [`Error::Batch`] lists each conflicted entity with its position; no
    /// entity's token changes. On success every entity holds its fresh token.
    ///
    /// On PostgreSQL the UPDATEs go to the server as ONE statement per 64 entities (see
    /// [`BatchUpdates`](crate::statement::BatchUpdates)): a batch of up to 64 costs
    /// `BEGIN`, that statement and `COMMIT`, three round trips, and a batch of 1000
    /// eighteen. Each UPDATE in it is the one `save_checked` runs, and each still
    /// reports its own row count. MySQL/MariaDB and SQLite run one UPDATE per entity, one after the other
    /// (SQLite runs in-process: a statement there costs no round trip). So does a batch
    /// that holds a row twice, and an entity whose token the database generates.
    /// A conflict costs one more read per stale or deleted entity, to classify it.
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
            let batch = statements(entities)?;
            let written =
                GuardedUpdate::run_guarded_batch(batch, conn, || distinct_keys(entities))?;
            let mut fresh_tokens = Vec::with_capacity(entities.len());
            let mut conflicts = Vec::new();
            for (index, (entity, (affected, fresh))) in entities.iter().zip(written).enumerate() {
                if outcome::written(entity, affected)? {
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
            outcome::trace_written(entity, Operation::Update);
        }
        Ok(())
    }
}

/// Each entity's guarded UPDATE and the fresh token it assigns.
pub(crate) type Statements<T> = Vec<(<T as Versioned>::UpdateStatement, <T as Versioned>::Token)>;

/// Every entity's guarded UPDATE with the fresh token it assigns, or the first entity
/// whose token cannot advance.
pub(crate) fn statements<T: Versioned>(entities: &[T]) -> Result<Statements<T>, Error> {
    entities
        .iter()
        .map(|entity| {
            let fresh = entity.fresh_token()?;
            Ok((entity.update_statement(&fresh), fresh))
        })
        .collect()
}

/// True when no two entities of the batch have the same key. The UPDATEs of a batch
/// sent as one statement all read one snapshot, so a row written twice would not be
/// written as one statement after the other writes it.
pub(crate) fn distinct_keys<T: Versioned>(entities: &[T]) -> bool {
    let mut seen = std::collections::HashSet::with_capacity(entities.len());
    entities
        .iter()
        .all(|entity| seen.insert(T::key_values(&entity.key())))
}
