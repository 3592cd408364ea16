//! [`BatchDsl`]: several entities saved in one transaction on an async connection, all
//! or nothing: the twin of the blocking one.

use std::future::Future;

use diesel_async::AsyncConnection;
use diesel_async::methods::LoadQuery;

use super::GuardedUpdate;
use super::transaction::OpenTransaction;
use super::{classify, usable};
use crate::error::BatchConflict;
use crate::error::{Error, Operation};
use crate::observe;
use crate::outcome;
use crate::statement::CurrentToken;
use crate::versioned::Versioned;
use crate::versioned::{ValuesUpdate, count_written};

/// Batch saves on an async connection: the twin of the blocking
/// [`BatchDsl`](crate::BatchDsl). Several entities in one transaction, all or nothing,
/// and [`Error::Batch`] naming every stale or deleted entity. On PostgreSQL the whole
/// batch is one `UPDATE ... FROM (VALUES ...)` statement (`BEGIN`, the statement,
/// `COMMIT`; see [`ValuesUpdate`](crate::versioned::ValuesUpdate)), as on the blocking
/// API; MySQL/MariaDB and SQLite run one UPDATE per entity, and so do the batches the
/// blocking [`save_all_checked`](crate::BatchDsl::save_all_checked) lists.
///
/// Dropping the future while its transaction is open (a timeout, a client that went
/// away) cannot roll it back: no statement can run in a destructor. It marks the
/// connection's transaction manager broken instead, so the connection fails loudly
/// rather than writing into a transaction that will never commit: every later checked
/// write and every `transaction` on it returns [`Error::Database`], and a diesel-async
/// pool closes it instead of handing it out. Drop the connection; closing it makes the
/// server roll the batch back.
///
/// ```
/// # include!(concat!(env!("CARGO_MANIFEST_DIR"), "/src/doctest_setup.rs"));
/// use diesel_async::sync_connection_wrapper::SyncConnectionWrapper;
/// use diesel_occ::asynchronous::prelude::*;
///
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> Result<(), diesel_occ::Error> {
/// let mut conn: SyncConnectionWrapper<SqliteConnection> = SyncConnectionWrapper::new(connection());
/// let mut batch = vec![Stock::find(&mut conn, 1).await?, Stock::find(&mut conn, 2).await?];
/// batch[0].available -= 1;
/// batch[1].available -= 1;
/// batch.save_all_checked(&mut conn).await?;
/// assert_eq!((batch[0].version, batch[1].version), (2, 2));
/// # Ok(())
/// # }
/// ```
pub trait BatchDsl<Conn: AsyncConnection> {
    /// See [`crate::BatchDsl::save_all_checked`].
    fn save_all_checked(
        &mut self,
        conn: &mut Conn,
    ) -> impl Future<Output = Result<(), Error>> + Send;
}

impl<T, Conn> BatchDsl<Conn> for [T]
where
    T: Versioned + Send + Sync + 'static,
    T::Table: Default,
    Conn: AsyncConnection,
    Conn::Backend: 'static,
    T::UpdateStatement: GuardedUpdate<Conn, T::Token> + Send,
    ValuesUpdate<T>: LoadQuery<'static, Conn, i32> + Send,
    CurrentToken<T::TokenQuery>: LoadQuery<'static, Conn, T::Token>,
    T::TokenQuery: Send + 'static,
{
    async fn save_all_checked(&mut self, conn: &mut Conn) -> Result<(), Error> {
        let span = observe::write_span::<Conn::Backend>(T::sql_table_name(), "save_all_checked");
        observe::in_write_span_async(span, save_all(self, conn)).await
    }
}

/// [`BatchDsl::save_all_checked`], inside its span.
async fn save_all<T, Conn>(batch: &mut [T], conn: &mut Conn) -> Result<(), Error>
where
    T: Versioned + Send + Sync + 'static,
    T::Table: Default,
    Conn: AsyncConnection,
    Conn::Backend: 'static,
    T::UpdateStatement: GuardedUpdate<Conn, T::Token> + Send,
    ValuesUpdate<T>: LoadQuery<'static, Conn, i32> + Send,
    CurrentToken<T::TokenQuery>: LoadQuery<'static, Conn, T::Token>,
    T::TokenQuery: Send + 'static,
{
    usable(conn)?;
    // Dropped before it ends, `OpenTransaction` marks the connection broken.
    let mut open = OpenTransaction::begin(conn).await?;
    let outcome = write_all(&*batch, open.conn()).await;
    let fresh = match outcome {
        Ok(fresh) => {
            // Every statement's error ended the batch above: nothing caught can have
            // aborted the transaction, so the plain COMMIT needs no probe.
            open.release().await?;
            fresh
        }
        Err(error) => {
            open.rollback().await?;
            return Err(error);
        }
    };
    for (entity, fresh) in batch.iter_mut().zip(fresh) {
        entity.set_token(fresh);
        outcome::trace_written(entity, Operation::Update);
    }
    Ok(())
}

/// Every guarded UPDATE of a batch, inside its transaction: the fresh tokens, or the
/// conflicts of every stale or deleted entity.
async fn write_all<T, Conn>(entities: &[T], conn: &mut Conn) -> Result<Vec<T::Token>, Error>
where
    T: Versioned + Send + Sync + 'static,
    T::Table: Default,
    Conn: AsyncConnection,
    Conn::Backend: 'static,
    T::UpdateStatement: GuardedUpdate<Conn, T::Token> + Send,
    ValuesUpdate<T>: LoadQuery<'static, Conn, i32> + Send,
    CurrentToken<T::TokenQuery>: LoadQuery<'static, Conn, T::Token>,
    T::TokenQuery: Send + 'static,
{
    let fresh = crate::versioned::fresh_tokens(entities)?;
    let written = match ValuesUpdate::plan::<Conn::Backend>(entities, &fresh) {
        Some(statements) => {
            let mut written = vec![0; entities.len()];
            for statement in statements {
                let positions: Vec<i32> = diesel_async::RunQueryDsl::load(statement, conn).await?;
                count_written(&mut written, &positions);
            }
            written.into_iter().zip(fresh).collect()
        }
        None => {
            let mut written = Vec::with_capacity(entities.len());
            for (entity, fresh) in entities.iter().zip(fresh) {
                let statement = entity.update_statement(&fresh);
                written.push(statement.run_guarded(conn, fresh).await?);
            }
            written
        }
    };
    let mut fresh_tokens = Vec::with_capacity(entities.len());
    let mut conflicts = Vec::new();
    for (index, (entity, (affected, fresh))) in entities.iter().zip(written).enumerate() {
        let key = entity.key();
        if outcome::written_key::<T>(&key, affected)? {
            fresh_tokens.push(fresh);
        } else {
            match classify::<T, Conn>(key, entity.token(), Operation::Update, conn).await {
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
}
