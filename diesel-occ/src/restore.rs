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
/// # include!("doctest_setup.rs");
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
    /// What [`checkpoint`](Self::checkpoint) records: the tokens.
    type Checkpoint: Send;

    /// Records the tokens held now.
    fn checkpoint(&self) -> Self::Checkpoint;

    /// Gives back the tokens recorded by [`checkpoint`](Self::checkpoint).
    fn restore(&mut self, checkpoint: Self::Checkpoint);
}

impl<T: Versioned> Restore for &mut T {
    type Checkpoint = T::Token;

    fn checkpoint(&self) -> T::Token {
        self.token().clone()
    }

    fn restore(&mut self, checkpoint: T::Token) {
        self.set_token(checkpoint);
    }
}

impl<T: Versioned> Restore for &mut [T] {
    type Checkpoint = Vec<T::Token>;

    fn checkpoint(&self) -> Vec<T::Token> {
        self.iter().map(|entity| entity.token().clone()).collect()
    }

    fn restore(&mut self, checkpoint: Vec<T::Token>) {
        for (entity, token) in self.iter_mut().zip(checkpoint) {
            entity.set_token(token);
        }
    }
}

impl<T: Versioned> Restore for &mut Vec<T> {
    type Checkpoint = Vec<T::Token>;

    fn checkpoint(&self) -> Vec<T::Token> {
        self.as_slice().iter().map(|e| e.token().clone()).collect()
    }

    fn restore(&mut self, checkpoint: Vec<T::Token>) {
        let mut slice: &mut [T] = self.as_mut_slice();
        slice.restore(checkpoint);
    }
}

/// A tracked entity gets back its values as read, not only its token: a rolled-back
/// tracked save made the saved values its values as read, and the next tracked save
/// would otherwise leave out the fields it wrote. The edits are kept.
impl<T: Tracking + Clone + Send> Restore for &mut Tracked<T> {
    type Checkpoint = T;

    fn checkpoint(&self) -> T {
        self.original().clone()
    }

    fn restore(&mut self, checkpoint: T) {
        self.restore_original(checkpoint);
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
