//! [`TrackedDsl`]: checked saves of a [`Tracked`] entity on a blocking connection,
//! writing only the edited columns, and merging a conflict.

use diesel::connection::Connection;
use diesel::query_dsl::LoadQuery;
use diesel::query_dsl::methods::ExecuteDsl;

use crate::blocking::{EntityDsl, settle};
use crate::error::{ConflictState, Error, Operation};
use crate::observe;
use crate::statement::CurrentToken;
use crate::statement::GuardedUpdate;
use crate::tracked::{SaveOutcome, Tracked, Tracking};

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
    /// An entity without a version column (`#[occ(check)]` fields) writes no token and
    /// is guarded by its check columns' values as read:
    /// `UPDATE t SET <edited columns> WHERE <key> AND c1 IS NOT DISTINCT FROM <original> ...`
    /// (every tracked field with its unchanged value when nothing was edited).
    ///
    /// On success the saved values become the values as read. On
    /// [`Error::Conflict`] (stale, with the current token, or deleted) nothing changes.
    fn save_checked(&mut self, conn: &mut Conn) -> Result<(), Error>;

    /// Deletes the row if it still holds the values as read:
    /// `DELETE FROM t WHERE <key> AND token = <original>`, or for an entity without a
    /// version column `... AND c1 IS NOT DISTINCT FROM <original> ...`, whatever the
    /// edits. When no row matches, [`Error::Conflict`] (stale or already deleted).
    ///
    /// ```
    /// # include!(concat!(env!("CARGO_MANIFEST_DIR"), "/src/doctest_setup.rs"));
    /// use diesel_occ::prelude::*;
    /// use diesel_occ::Tracked;
    ///
    /// # fn main() -> Result<(), diesel_occ::Error> {
    /// let mut conn = connection();
    /// let mut article = Tracked::new(Article::find(&mut conn, 1)?);
    /// article.edit().title = "Not saved".into();
    /// article.delete_checked(&mut conn)?; // guarded by the token as read
    /// assert!(Article::find(&mut conn, 1).unwrap_err().is_not_found());
    /// # Ok(())
    /// # }
    /// ```
    fn delete_checked(&self, conn: &mut Conn) -> Result<(), Error>;

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
    T: Tracking + Clone + EntityDsl<Conn>,
    Conn: Connection,
    T::FieldsUpdateStatement: GuardedUpdate<Conn, T::Token>,
    T::DeleteStatement: ExecuteDsl<Conn>,
    CurrentToken<T::TokenQuery>: LoadQuery<'static, Conn, T::Token>,
{
    type Entity = T;

    fn save_checked(&mut self, conn: &mut Conn) -> Result<(), Error> {
        let span = observe::write_span::<Conn::Backend>(T::sql_table_name(), "save_checked");
        observe::in_write_span(span, || {
            let fields = self.fields_to_write();
            let fresh = self.fresh_token()?;
            let (affected, fresh) = self
                .current()
                .fields_update_statement(self.original(), fields, &fresh)
                .run_guarded(conn, fresh)?;
            let expected = self.original().expected_token();
            settle::<T, Conn>(conn, &self.key(), &expected, Operation::Update, affected)?;
            self.saved(fresh);
            Ok(())
        })
    }

    fn delete_checked(&self, conn: &mut Conn) -> Result<(), Error> {
        let span = observe::write_span::<Conn::Backend>(T::sql_table_name(), "delete_checked");
        observe::in_write_span(span, || {
            let affected = ExecuteDsl::execute(self.original().delete_statement(), conn)?;
            let expected = self.original().expected_token();
            settle::<T, Conn>(conn, &self.key(), &expected, Operation::Delete, affected)
        })
    }

    fn load_current(&self, conn: &mut Conn) -> Result<T, Error> {
        <T as EntityDsl<Conn>>::find(conn, self.key())
    }

    fn save_merging(&mut self, conn: &mut Conn) -> Result<SaveOutcome<T>, Error> {
        let span = observe::write_span::<Conn::Backend>(T::sql_table_name(), "save_merging")
            .around_writes();
        observe::in_write_span(span, || save_merging(self, conn))
    }
}

/// [`TrackedDsl::save_merging`], inside its span.
fn save_merging<T, Conn>(tracked: &mut Tracked<T>, conn: &mut Conn) -> Result<SaveOutcome<T>, Error>
where
    Tracked<T>: TrackedDsl<Conn, Entity = T>,
    T: Tracking + Clone,
    Conn: Connection,
{
    let conflict = match TrackedDsl::save_checked(tracked, conn) {
        Ok(()) => return Ok(SaveOutcome::Saved),
        Err(Error::Conflict(conflict))
            if matches!(conflict.state(), ConflictState::Stale { .. }) =>
        {
            conflict
        }
        Err(error) => return Err(error),
    };
    let theirs = match tracked.load_current(conn) {
        Ok(theirs) => theirs,
        // Deleted between the conflict and the read: report the original conflict.
        Err(Error::NotFound(_)) => return Err(conflict.into()),
        Err(error) => return Err(error),
    };
    match tracked.merge(theirs) {
        Ok(theirs) => {
            TrackedDsl::save_checked(tracked, conn)?;
            Ok(SaveOutcome::Merged { theirs })
        }
        Err(overlap) => Ok(SaveOutcome::Overlap(overlap)),
    }
}
