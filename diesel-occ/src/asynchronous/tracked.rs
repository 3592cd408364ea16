//! [`TrackedDsl`]: checked saves of a [`Tracked`] entity on an async connection: the
//! twin of the blocking one.

use std::future::Future;

use diesel_async::AsyncConnection;
use diesel_async::methods::{ExecuteDsl, LoadQuery};

use super::GuardedUpdate;
use super::{EntityDsl, settle, usable};
use crate::error::{ConflictState, Error, Operation};
use crate::observe;
use crate::statement::CurrentToken;
use crate::tracked::{SaveOutcome, Tracked, Tracking};

/// Checked saves of a [`Tracked`] entity on an async connection: the twin of the
/// blocking [`TrackedDsl`](crate::TrackedDsl), with the same names and semantics.
///
/// ```
/// # include!(concat!(env!("CARGO_MANIFEST_DIR"), "/src/doctest_setup.rs"));
/// use diesel_async::sync_connection_wrapper::SyncConnectionWrapper;
/// use diesel_occ::asynchronous::prelude::*;
/// use diesel_occ::{SaveOutcome, Tracked};
///
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
/// let mut conn: SyncConnectionWrapper<SqliteConnection> = SyncConnectionWrapper::new(connection());
/// let mut mine = Tracked::new(Article::find(&mut conn, 1).await?);
/// let mut theirs = Tracked::new(Article::find(&mut conn, 1).await?);
/// theirs.edit().body = "Their body".into();
/// theirs.save_checked(&mut conn).await?;
///
/// mine.edit().title = "My title".into();
/// let outcome = mine.save_merging(&mut conn).await?;
/// assert!(matches!(outcome, SaveOutcome::Merged { .. }));
/// assert_eq!(mine.version, 3);
/// # Ok(())
/// # }
/// ```
pub trait TrackedDsl<Conn: AsyncConnection> {
    /// The tracked entity.
    type Entity: Tracking;

    /// Writes the fields edited since the values were read, and a fresh token, in one
    /// statement. See [`crate::TrackedDsl::save_checked`].
    fn save_checked(&mut self, conn: &mut Conn) -> impl Future<Output = Result<(), Error>> + Send;

    /// Deletes the row if it still holds the values as read, whatever the edits. See
    /// [`crate::TrackedDsl::delete_checked`].
    fn delete_checked(&self, conn: &mut Conn) -> impl Future<Output = Result<(), Error>> + Send;

    /// Loads the row as it is now, typed; [`Error::NotFound`] when it was deleted.
    fn load_current(
        &self,
        conn: &mut Conn,
    ) -> impl Future<Output = Result<Self::Entity, Error>> + Send;

    /// Saves, and on a stale-token conflict merges non-overlapping edits onto the
    /// current row and saves once more. See [`crate::TrackedDsl::save_merging`].
    fn save_merging(
        &mut self,
        conn: &mut Conn,
    ) -> impl Future<Output = Result<SaveOutcome<Self::Entity>, Error>> + Send;
}

impl<T, Conn> TrackedDsl<Conn> for Tracked<T>
where
    T: Tracking + Clone + EntityDsl<Conn> + Sync,
    Conn: AsyncConnection,
    T::FieldsUpdateStatement: GuardedUpdate<Conn, T::Token> + Send,
    T::DeleteStatement: ExecuteDsl<Conn> + Send,
    CurrentToken<T::TokenQuery>: LoadQuery<'static, Conn, T::Token>,
    T::TokenQuery: Send + 'static,
{
    type Entity = T;

    fn save_checked(&mut self, conn: &mut Conn) -> impl Future<Output = Result<(), Error>> + Send {
        let fields = self.fields_to_write();
        let prepared = self.fresh_token().map(|fresh| {
            (
                self.current()
                    .fields_update_statement(self.original(), fields, &fresh),
                fresh,
            )
        });
        let span = observe::write_span::<Conn::Backend>(T::sql_table_name(), "save_checked");
        observe::in_write_span_async(span, async move {
            let (statement, fresh) = prepared?;
            usable(conn)?;
            let (affected, fresh) = statement.run_guarded(conn, fresh).await?;
            let expected = self.original().expected_token();
            settle::<T, Conn>(conn, self.key(), &expected, Operation::Update, affected).await?;
            self.saved(fresh);
            Ok(())
        })
    }

    fn delete_checked(&self, conn: &mut Conn) -> impl Future<Output = Result<(), Error>> + Send {
        let statement = self.original().delete_statement();
        let expected = self.original().expected_token();
        let key = self.key();
        let span = observe::write_span::<Conn::Backend>(T::sql_table_name(), "delete_checked");
        observe::in_write_span_async(span, async move {
            usable(conn)?;
            let affected = ExecuteDsl::execute(statement, conn).await?;
            settle::<T, Conn>(conn, key, &expected, Operation::Delete, affected).await
        })
    }

    fn load_current(&self, conn: &mut Conn) -> impl Future<Output = Result<T, Error>> + Send {
        <T as EntityDsl<Conn>>::find(conn, self.key())
    }

    async fn save_merging(&mut self, conn: &mut Conn) -> Result<SaveOutcome<T>, Error> {
        let span = observe::write_span::<Conn::Backend>(T::sql_table_name(), "save_merging")
            .around_writes();
        observe::in_write_span_async(span, save_merging(self, conn)).await
    }
}

/// [`TrackedDsl::save_merging`], inside its span.
async fn save_merging<T, Conn>(
    tracked: &mut Tracked<T>,
    conn: &mut Conn,
) -> Result<SaveOutcome<T>, Error>
where
    Tracked<T>: TrackedDsl<Conn, Entity = T>,
    T: Tracking + Clone,
    Conn: AsyncConnection,
{
    let conflict = match TrackedDsl::save_checked(tracked, conn).await {
        Ok(()) => return Ok(SaveOutcome::Saved),
        Err(Error::Conflict(conflict))
            if matches!(conflict.state(), ConflictState::Stale { .. }) =>
        {
            conflict
        }
        Err(error) => return Err(error),
    };
    let theirs = match TrackedDsl::load_current(tracked, conn).await {
        Ok(theirs) => theirs,
        Err(Error::NotFound(_)) => return Err(conflict.into()),
        Err(error) => return Err(error),
    };
    match tracked.merge(theirs) {
        Ok(theirs) => {
            TrackedDsl::save_checked(tracked, conn).await?;
            Ok(SaveOutcome::Merged { theirs })
        }
        Err(overlap) => Ok(SaveOutcome::Overlap(overlap)),
    }
}
