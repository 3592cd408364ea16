//! [`transaction`]: a transaction on a blocking connection that gives the entities
//! written inside it their tokens back when it rolls back.

use diesel::connection::Connection;

use crate::restore::{Restore, Restoring};

/// Runs `f` in a transaction and, unless it commits, gives every entity in `entities`
/// back the token it held before: the safe way to write checked entities in a
/// transaction.
///
/// **The rule: write versioned entities inside a transaction only through
/// `diesel_occ::transaction`, passing it every entity the transaction writes; after a
/// rollback they hold the tokens they read, so their next save conflicts unless the
/// row is still exactly as they read it.**
///
/// `entities` is a `&mut` to an entity, a [`Tracked`](crate::Tracked) entity, a `Vec` or slice of
/// them, or a tuple of those ([`Restore`]); `f` gets the connection and the entities
/// back. When `f` returns `Ok` and the transaction commits, the entities keep the
/// fresh tokens their saves assigned. When `f` returns `Err`, the commit fails (a
/// serialization failure at `COMMIT`) or `f` panics, the transaction rolls back and
/// each entity's token is restored; its other fields keep their edits. A batch
/// ([`BatchDsl::save_all_checked`](crate::BatchDsl::save_all_checked)) and
/// [`CheckedDsl::force_increment`](crate::CheckedDsl::force_increment) inside it
/// are covered like single saves.
///
/// Inside an enclosing transaction this one is a savepoint, and a later rollback of
/// the enclosing one restores nothing: make the outermost transaction this one.
/// Without it, after any rollback, discard the entities and read them again.
///
/// ```
/// # include!("../doctest_setup.rs");
/// use diesel_occ::prelude::*;
///
/// # fn main() -> Result<(), diesel_occ::Error> {
/// let mut conn = connection();
/// let mut mine = Stock::find(&mut conn, 1)?;
/// mine.available -= 1;
/// let outcome = diesel_occ::transaction(&mut conn, &mut mine, |conn, mine| {
///     mine.save_checked(conn)?;
///     // ... a later step of the transaction fails ...
///     Err::<(), _>(diesel_occ::Error::from(diesel::result::Error::RollbackTransaction))
/// });
/// assert!(outcome.is_err());
/// assert_eq!(mine.version, 1); // the token read, not the rolled-back one
///
/// // Another writer saves; the rolled-back entity now conflicts instead of winning.
/// let mut theirs = Stock::find(&mut conn, 1)?;
/// theirs.available = 0;
/// theirs.save_checked(&mut conn)?;
/// assert!(mine.save_checked(&mut conn).unwrap_err().is_conflict());
/// # Ok(())
/// # }
/// ```
pub fn transaction<Conn, E, R, Err, F>(conn: &mut Conn, entities: E, f: F) -> Result<R, Err>
where
    Conn: Connection,
    E: Restore,
    F: FnOnce(&mut Conn, &mut E) -> Result<R, Err>,
    Err: From<diesel::result::Error>,
{
    let mut restoring = Restoring::new(entities);
    let outcome = conn.transaction(|conn| f(conn, &mut restoring.entities));
    if outcome.is_ok() {
        restoring.keep();
    }
    outcome
}
