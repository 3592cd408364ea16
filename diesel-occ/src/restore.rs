//! [`Restore`]: how a transaction that rolls back gives the entities written inside it
//! their tokens back (blocking and async alike).

use crate::tracked::{Tracked, Tracking};
use crate::versioned::Versioned;

/// Entities whose tokens a [`transaction`](crate::transaction()) restores when it rolls back: a `&mut` to one
/// entity, to a [`Tracked`] entity, to a `Vec` or a slice of them, or a tuple of those.
///
/// A checked save advances the entity's in-memory token as soon as its UPDATE matches.
/// If the transaction around it then rolls back, the row keeps the old token while the
/// entity holds the new one, which another writer can legitimately produce (an
/// integer counter's next value): the entity's next save would then match that
/// writer's row and overwrite it. Restoring the token read makes that save conflict.
/// The entity's other fields keep their edits, so it can be saved again.
///
/// ```
/// # include!(concat!(env!("CARGO_MANIFEST_DIR"), "/src/doctest_setup.rs"));
/// use diesel_occ::Restore;
///
/// # fn main() -> Result<(), diesel_occ::Error> {
/// # use diesel_occ::prelude::*;
/// let mut conn = connection();
/// let mut a = Stock::find(&mut conn, 1)?;
/// let mut b = vec![Stock::find(&mut conn, 1)?];
/// let mut entities = (&mut a, &mut b);
/// let checkpoint = entities.checkpoint();
/// entities.0.version = 9;
/// entities.1[0].version = 9;
/// entities.restore(checkpoint);
/// assert_eq!((a.version, b[0].version), (1, 1));
/// # Ok(())
/// # }
/// ```
pub trait Restore {
    /// What [`checkpoint`](Self::checkpoint) records: the tokens, and for a single
    /// entity the entity itself, to give back if the closure replaced it.
    type Checkpoint: Send;

    /// Records the tokens (and single entities) held now.
    fn checkpoint(&self) -> Self::Checkpoint;

    /// Gives back the tokens recorded by [`checkpoint`](Self::checkpoint).
    fn restore(&mut self, checkpoint: Self::Checkpoint);
}

/// Restored by identity: an entity of the row it held gets back its token as read
/// (its edits stay); an entity the closure replaced with another row's, which was read
/// or written inside the rolled-back transaction, is replaced by the entity as it was
/// passed in. It never keeps one row's token on another row's entity.
impl<T: Versioned + Clone + Send> Restore for &mut T {
    type Checkpoint = T;

    fn checkpoint(&self) -> T {
        (**self).clone()
    }

    fn restore(&mut self, checkpoint: T) {
        if same_row(&**self, &checkpoint) {
            self.set_token(checkpoint.token().clone());
        } else {
            **self = checkpoint;
        }
    }
}

/// True when `a` and `b` are entities of one row.
fn same_row<T: Versioned>(a: &T, b: &T) -> bool {
    T::key_values(&a.key()) == T::key_values(&b.key())
}

/// The tokens of a collection as read, each with the key of its row: a collection is
/// restored by identity, never by position, so a closure that sorts, removes or
/// replaces entities cannot leave one holding another row's token.
type TokensByKey<T> = Vec<(Vec<String>, <T as Versioned>::Token)>;

fn tokens_by_key<T: Versioned>(entities: &[T]) -> TokensByKey<T> {
    entities
        .iter()
        .map(|entity| (T::key_values(&entity.key()), entity.token().clone()))
        .collect()
}

/// The token `entity` gets back, or `None` when the checkpoint holds no entity of its
/// row (the closure read or created it inside the transaction).
///
/// A copy still holding one of the tokens read for its row wrote nothing and keeps it.
/// A copy holding any other token wrote inside the rolled-back transaction, from one
/// of the tokens read for the row; with several copies of one row we cannot tell which,
/// and any of them is safe: each is a value the row held, so the worst a wrong choice
/// costs is a conflict, never a match with a token the row has yet to hold.
fn token_as_read<T: Versioned>(checkpoint: &TokensByKey<T>, entity: &T) -> Option<T::Token> {
    let key = T::key_values(&entity.key());
    let mut read = checkpoint.iter().filter(|(k, _)| *k == key).map(|(_, t)| t);
    let first = read.next()?;
    if entity.token() == first || read.any(|token| token == entity.token()) {
        Some(entity.token().clone())
    } else {
        Some(first.clone())
    }
}

/// Restored by key. An element the closure replaced with an entity of a row the slice
/// did not hold keeps that entity's token: a slice cannot drop it, so read such an
/// entity again after a rollback.
impl<T: Versioned> Restore for &mut [T] {
    type Checkpoint = TokensByKey<T>;

    fn checkpoint(&self) -> TokensByKey<T> {
        tokens_by_key(self)
    }

    fn restore(&mut self, checkpoint: TokensByKey<T>) {
        for entity in self.iter_mut() {
            if let Some(token) = token_as_read(&checkpoint, entity) {
                entity.set_token(token);
            }
        }
    }
}

/// Restored by key. After a rollback the `Vec` holds only entities of rows it held
/// before: an entity the closure added for another row is removed, because what it
/// holds was read or written inside the rolled-back transaction (a row it inserted no
/// longer exists, a token it saved was never committed). Entities the closure removed
/// stay removed.
impl<T: Versioned> Restore for &mut Vec<T> {
    type Checkpoint = TokensByKey<T>;

    fn checkpoint(&self) -> TokensByKey<T> {
        tokens_by_key(self)
    }

    fn restore(&mut self, checkpoint: TokensByKey<T>) {
        self.retain(|entity| token_as_read(&checkpoint, entity).is_some());
        let mut slice: &mut [T] = self.as_mut_slice();
        slice.restore(checkpoint);
    }
}

/// A tracked entity gets back its values as read, not only its token: a rolled-back
/// tracked save made the saved values its values as read, and the next tracked save
/// would otherwise leave out the fields it wrote. The edits are kept. Restored by
/// identity, as a single entity is: a tracked entity the closure replaced with another
/// row's is replaced by the one passed in.
impl<T: Tracking + Clone + Send> Restore for &mut Tracked<T> {
    type Checkpoint = Tracked<T>;

    fn checkpoint(&self) -> Tracked<T> {
        (**self).clone()
    }

    fn restore(&mut self, checkpoint: Tracked<T>) {
        if same_row(self.original(), checkpoint.original()) {
            let original = checkpoint.original().clone();
            self.restore_original(original);
        } else {
            **self = checkpoint;
        }
    }
}

macro_rules! restore_tuple {
    ($($name:ident $index:tt),+) => {
        impl<$($name: Restore),+> Restore for ($($name,)+) {
            type Checkpoint = ($($name::Checkpoint,)+);

            fn checkpoint(&self) -> Self::Checkpoint {
                ($(self.$index.checkpoint(),)+)
            }

            fn restore(&mut self, checkpoint: Self::Checkpoint) {
                $(self.$index.restore(checkpoint.$index);)+
            }
        }
    };
}

restore_tuple!(A 0);
restore_tuple!(A 0, B 1);
restore_tuple!(A 0, B 1, C 2);
restore_tuple!(A 0, B 1, C 2, D 3);
restore_tuple!(A 0, B 1, C 2, D 3, E 4);
restore_tuple!(A 0, B 1, C 2, D 3, E 4, F 5);
restore_tuple!(A 0, B 1, C 2, D 3, E 4, F 5, G 6);
restore_tuple!(A 0, B 1, C 2, D 3, E 4, F 5, G 6, H 7);

/// Entities with their tokens as recorded; restores them when dropped armed: on an
/// error, and on a panic or a dropped future too.
pub(crate) struct Restoring<E: Restore> {
    pub(crate) entities: E,
    checkpoint: Option<E::Checkpoint>,
}

impl<E: Restore> Restoring<E> {
    pub(crate) fn new(entities: E) -> Self {
        let checkpoint = Some(entities.checkpoint());
        Restoring {
            entities,
            checkpoint,
        }
    }

    /// The transaction committed: the tokens written stand.
    pub(crate) fn keep(&mut self) {
        self.checkpoint = None;
    }
}

impl<E: Restore> Drop for Restoring<E> {
    fn drop(&mut self) {
        if let Some(checkpoint) = self.checkpoint.take() {
            self.entities.restore(checkpoint);
        }
    }
}
