//! [`BatchDsl`]: several entities saved in one transaction on a blocking connection,
//! all or nothing.

use diesel::connection::Connection;
use diesel::query_dsl::{LoadQuery, RunQueryDsl as _};

use crate::blocking::classify;
use crate::error::BatchConflict;
use crate::error::{Error, Operation};
use crate::observe;
use crate::outcome;
use crate::statement::{CurrentToken, GuardedUpdate};
use crate::versioned::Versioned;
use crate::versioned::{ValuesUpdate, count_written};

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
/// # include!(concat!(env!("CARGO_MANIFEST_DIR"), "/src/doctest_setup.rs"));
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
    /// On PostgreSQL the whole batch is ONE statement, `UPDATE ... FROM (VALUES ...)
    /// RETURNING <position>` (see [`ValuesUpdate`]): a batch of any size costs `BEGIN`,
    /// that statement and `COMMIT`, three round trips (a batch past PostgreSQL's 65 535
    /// bind parameters is cut into as few statements as fit). Each entity's row carries
    /// what its `save_checked` binds, typed by the columns, and the statement reports
    /// which entities it wrote, so each still has its own row count; under READ
    /// COMMITTED a row another writer commits while the batch waits for it is re-checked
    /// against its new token, and is a conflict, never an overwrite. An `Option` field
    /// whose `None` leaves the column alone does so in the batch too.
    ///
    /// One UPDATE per entity, one after the other, where that statement cannot serve:
    /// on MySQL/MariaDB and SQLite (SQLite runs in-process: a statement there costs no
    /// round trip), for an entity whose token the database generates (each reads its
    /// token back with `RETURNING`) or whose `Versioned` impl is written by hand, for a
    /// batch that holds a row twice (one statement would write that row once), and for
    /// a batch of one.
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
    T::Table: Default,
    Conn: Connection,
    Conn::Backend: 'static,
    T::UpdateStatement: GuardedUpdate<Conn, T::Token>,
    ValuesUpdate<T>: LoadQuery<'static, Conn, i32>,
    CurrentToken<T::TokenQuery>: LoadQuery<'static, Conn, T::Token>,
{
    fn save_all_checked(&mut self, conn: &mut Conn) -> Result<(), Error> {
        let span = observe::write_span::<Conn::Backend>(T::sql_table_name(), "save_all_checked");
        observe::in_write_span(span, || save_all(self, conn))
    }
}

/// [`BatchDsl::save_all_checked`], inside its span.
fn save_all<T, Conn>(batch: &mut [T], conn: &mut Conn) -> Result<(), Error>
where
    T: Versioned,
    T::Table: Default,
    Conn: Connection,
    Conn::Backend: 'static,
    T::UpdateStatement: GuardedUpdate<Conn, T::Token>,
    ValuesUpdate<T>: LoadQuery<'static, Conn, i32>,
    CurrentToken<T::TokenQuery>: LoadQuery<'static, Conn, T::Token>,
{
    let entities = &*batch;
    let fresh = conn.transaction(|conn| {
        let fresh = crate::versioned::fresh_tokens(entities)?;
        let written = match ValuesUpdate::plan::<Conn::Backend>(entities, &fresh) {
            Some(statements) => {
                let mut written = vec![0; entities.len()];
                for statement in statements {
                    let positions: Vec<i32> = statement.load(conn)?;
                    count_written(&mut written, &positions);
                }
                written.into_iter().zip(fresh).collect()
            }
            None => entities
                .iter()
                .zip(fresh)
                .map(|(entity, fresh)| entity.update_statement(&fresh).run_guarded(conn, fresh))
                .collect::<Result<Vec<_>, _>>()?,
        };
        let mut fresh_tokens = Vec::with_capacity(entities.len());
        let mut conflicts = Vec::new();
        for (index, (entity, (affected, fresh))) in entities.iter().zip(written).enumerate() {
            if outcome::written(entity, affected)? {
                fresh_tokens.push(fresh);
            } else {
                // A zero-row UPDATE leaves the transaction usable on every backend:
                // keep going, so the error names every stale or deleted entity.
                match classify::<T, Conn>(&entity.key(), entity.token(), Operation::Update, conn) {
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
    for (entity, fresh) in batch.iter_mut().zip(fresh) {
        entity.set_token(fresh);
        outcome::trace_written(entity, Operation::Update);
    }
    Ok(())
}
