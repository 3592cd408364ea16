//! [`BatchConflict`]: every stale or deleted entity of a batch save.

use std::fmt;

use crate::error::ConcurrencyConflict;

/// A batch save met one or more concurrency conflicts and wrote nothing: the
/// transaction was rolled back and no entity's token was advanced.
///
/// Lists EVERY entity of the batch that was stale or deleted, not only the first: the
/// batch keeps checking the rest before it rolls back.
///
/// ```
/// use diesel_occ::{BatchConflict, ConcurrencyConflict, ConflictState, EntityKey, Operation, VersionToken};
///
/// let stale = |id: &str| ConcurrencyConflict::new(
///     "stock",
///     EntityKey::new(&["id"], vec![id.into()]),
///     Operation::Update,
///     1_i32.to_value(),
///     ConflictState::Stale { current: 2_i32.to_value() },
/// );
/// let batch = BatchConflict::new(3, vec![(0, stale("1")), (2, stale("3"))]);
/// assert_eq!(batch.indices().collect::<Vec<_>>(), [0, 2]);
/// assert_eq!(
///     batch.to_string(),
///     "2 of 3 entities in the batch met a concurrency conflict; nothing was written"
/// );
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BatchConflict {
    total: usize,
    conflicts: Vec<(usize, ConcurrencyConflict)>,
}

impl BatchConflict {
    /// A batch of `total` entities in which the entities at these indices conflicted.
    pub fn new(total: usize, conflicts: Vec<(usize, ConcurrencyConflict)>) -> Self {
        BatchConflict { total, conflicts }
    }

    /// How many entities the batch held.
    pub fn total(&self) -> usize {
        self.total
    }

    /// Each conflicted entity's position in the batch, with its conflict.
    pub fn conflicts(&self) -> &[(usize, ConcurrencyConflict)] {
        &self.conflicts
    }

    /// The positions of the conflicted entities, in batch order.
    pub fn indices(&self) -> impl Iterator<Item = usize> + '_ {
        self.conflicts.iter().map(|(i, _)| *i)
    }

    /// The conflict of the entity at this position, if it had one.
    pub fn conflict_at(&self, index: usize) -> Option<&ConcurrencyConflict> {
        self.conflicts
            .iter()
            .find(|(i, _)| *i == index)
            .map(|(_, c)| c)
    }
}

impl fmt::Display for BatchConflict {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} of {} entities in the batch met a concurrency conflict; nothing was written",
            self.conflicts.len(),
            self.total
        )
    }
}

impl std::error::Error for BatchConflict {}
