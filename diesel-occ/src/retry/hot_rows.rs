//! The rows that met a conflict recently, remembered by a [`HotRows`] memory that the
//! user creates and a [`RetryPolicy`](super::RetryPolicy) holds, so that retry attempts
//! reading them lock from their first read
//! ([`RetryPolicy::escalate_hot_rows`](super::RetryPolicy::escalate_hot_rows)).

use std::collections::HashMap;
use std::fmt;
use std::hash::{Hash, Hasher};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, PoisonError, RwLock, RwLockReadGuard, RwLockWriteGuard};
use std::time::{Duration, Instant};

use crate::error::EntityKey;
use crate::versioned::Versioned;

/// How many rows a memory holds unless told otherwise. Past it, rows whose memory has
/// run out are dropped and, if none has, the new row is not remembered: a bounded
/// memory matters more than one more escalation.
const DEFAULT_CAPACITY: usize = 4096;

/// When a row is hot: after `conflicts` conflicts within `window`, for `window` after
/// the last of them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) struct Heat {
    pub(crate) conflicts: u32,
    pub(crate) window: Duration,
}

/// A memory of the rows that met conflicts recently: what a retry policy built with
/// [`escalate_hot_rows`](super::RetryPolicy::escalate_hot_rows) counts conflicts in and
/// asks before every read, so that a hot row is locked from the first read of an
/// operation.
///
/// A memory belongs to what you create, never to the process: every
/// `escalate_hot_rows` call gives its policy a fresh one, and clones of that policy
/// share it (so the workers of one service, each holding a clone, learn from one
/// another's conflicts). To share one memory between different policies on purpose,
/// create it here and hand it to each with
/// [`escalate_hot_rows_with`](super::RetryPolicy::escalate_hot_rows_with). A row is
/// known by its table name and key only, so give policies that work on different
/// databases different memories (a policy per pool does that).
///
/// Cloning a `HotRows` is cheap (a reference count) and the clone is the same memory;
/// two handles are equal when they are the same memory. A memory holds at most its
/// [capacity](Self::with_capacity) of rows (4 096 by default).
///
/// ```
/// use std::time::Duration;
/// use diesel_occ::retry::{HotRows, RetryPolicy};
///
/// // Two policies over the same tables that learn from each other's conflicts.
/// let memory = HotRows::new();
/// let patient = RetryPolicy::new()
///     .max_attempts(10)
///     .escalate_hot_rows_with(&memory, 3, Duration::from_secs(1));
/// let quick = RetryPolicy::new()
///     .max_attempts(2)
///     .escalate_hot_rows_with(&memory, 3, Duration::from_secs(1));
/// assert_eq!(patient.hot_row_memory(), Some(&memory));
/// assert_eq!(quick.hot_row_memory(), Some(&memory));
///
/// // Another call of `escalate_hot_rows` remembers on its own.
/// let apart = RetryPolicy::new().escalate_hot_rows(3, Duration::from_secs(1));
/// assert_ne!(apart.hot_row_memory(), Some(&memory));
/// ```
#[derive(Clone)]
pub struct HotRows {
    memory: Arc<Memory>,
}

impl HotRows {
    /// An empty memory for up to 4 096 rows.
    pub fn new() -> Self {
        Self::with_capacity(DEFAULT_CAPACITY)
    }

    /// An empty memory for up to `rows` rows. When it is full, rows whose window has
    /// passed make room, and a new row that finds none is not remembered.
    pub fn with_capacity(rows: usize) -> Self {
        HotRows {
            memory: Arc::new(Memory::new(rows)),
        }
    }

    /// How many rows this memory holds at most.
    pub fn capacity(&self) -> usize {
        self.memory.capacity
    }

    /// True when the row of `T` with this key is hot now: a policy using this memory
    /// locks it when an attempt reads it with `AttemptDsl::find`.
    ///
    /// ```
    /// # include!(concat!(env!("CARGO_MANIFEST_DIR"), "/src/doctest_setup.rs"));
    /// use diesel_occ::retry::HotRows;
    ///
    /// # fn main() {
    /// let memory = HotRows::new();
    /// assert!(!memory.is_hot::<Stock>(&1));
    /// # }
    /// ```
    pub fn is_hot<T: Versioned>(&self, key: &T::Key) -> bool {
        self.is_hot_row(T::sql_table_name(), || T::entity_key(key))
    }

    /// Counts a conflict on the row, now; true when that makes (or keeps) it hot.
    pub(crate) fn remember(&self, table: &'static str, key: &EntityKey, heat: Heat) -> bool {
        self.memory.remember(table, key, heat, Instant::now())
    }

    /// False when no row of this memory can be hot now: one atomic load.
    pub(crate) fn any_hot(&self) -> bool {
        self.memory.any_hot(Instant::now())
    }

    /// True when the row `key` names is hot now. `key` is only called when some row is.
    pub(crate) fn is_hot_row(&self, table: &'static str, key: impl FnOnce() -> EntityKey) -> bool {
        let now = Instant::now();
        self.memory.any_hot(now) && self.memory.is_hot(table, key(), now)
    }
}

impl Default for HotRows {
    fn default() -> Self {
        Self::new()
    }
}

impl fmt::Debug for HotRows {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("HotRows")
            .field("capacity", &self.memory.capacity)
            .finish_non_exhaustive()
    }
}

/// Identity: two handles are equal when they are the same memory.
impl PartialEq for HotRows {
    fn eq(&self, other: &Self) -> bool {
        Arc::ptr_eq(&self.memory, &other.memory)
    }
}

impl Eq for HotRows {}

impl Hash for HotRows {
    fn hash<H: Hasher>(&self, state: &mut H) {
        std::ptr::hash(Arc::as_ptr(&self.memory), state);
    }
}

/// What the memory knows of one row.
#[derive(Debug, Clone, Copy)]
struct Row {
    /// Conflicts counted since `since`.
    conflicts: u32,
    /// When the count started; a count older than the window starts again.
    since: Instant,
    /// Until when the row is hot (`since` when it is not).
    hot_until: Instant,
    /// When nothing about the row matters any more: it may be dropped.
    forget_at: Instant,
}

type Rows = HashMap<(&'static str, EntityKey), Row>;

/// The rows that met conflicts recently, by table and key: what a [`HotRows`] handle
/// shares.
///
/// Every read of a row under a hot-row policy asks it, from every thread. While no row
/// is hot (most of the time, where rows are many), one atomic load answers, without
/// rendering the key or taking the lock; otherwise a read-write lock lets readers
/// share the map. Rows stay until a full memory drops those it may forget.
struct Memory {
    capacity: usize,
    rows: RwLock<Rows>,
    /// The instant the memory was made: [`hot_until`](Self::hot_until) counts from it.
    epoch: Instant,
    /// Nanoseconds after `epoch` until which some row is hot, at the latest.
    hot_until: AtomicU64,
}

impl Memory {
    fn new(capacity: usize) -> Self {
        Memory {
            capacity,
            rows: RwLock::new(HashMap::new()),
            epoch: Instant::now(),
            hot_until: AtomicU64::new(0),
        }
    }

    /// `instant` as nanoseconds after the epoch (0 before it, saturating far after).
    fn nanos(&self, instant: Instant) -> u64 {
        let since = instant.saturating_duration_since(self.epoch);
        u64::try_from(since.as_nanos()).unwrap_or(u64::MAX)
    }

    /// False when no row can be hot at `now`; true when one may be.
    fn any_hot(&self, now: Instant) -> bool {
        self.nanos(now) < self.hot_until.load(Ordering::Acquire)
    }

    // The map holds no invariant a panicking holder could break: keep using it.
    fn rows(&self) -> RwLockReadGuard<'_, Rows> {
        self.rows.read().unwrap_or_else(PoisonError::into_inner)
    }

    fn rows_mut(&self) -> RwLockWriteGuard<'_, Rows> {
        self.rows.write().unwrap_or_else(PoisonError::into_inner)
    }

    fn remember(&self, table: &'static str, key: &EntityKey, heat: Heat, now: Instant) -> bool {
        let Some(window_end) = now.checked_add(heat.window) else {
            return false;
        };
        let id = (table, key.clone());
        let mut rows = self.rows_mut();
        if rows.len() >= self.capacity && !rows.contains_key(&id) {
            rows.retain(|_, row| row.forget_at > now);
            if rows.len() >= self.capacity {
                return false;
            }
        }
        let row = rows.entry(id).or_insert(Row {
            conflicts: 0,
            since: now,
            hot_until: now,
            forget_at: now,
        });
        if row
            .since
            .checked_add(heat.window)
            .is_none_or(|end| end <= now)
        {
            row.conflicts = 0;
            row.since = now;
        }
        row.conflicts = row.conflicts.saturating_add(1);
        if row.conflicts >= heat.conflicts.max(1) {
            row.hot_until = row.hot_until.max(window_end);
            self.hot_until
                .fetch_max(self.nanos(window_end), Ordering::AcqRel);
        }
        row.forget_at = row.forget_at.max(window_end);
        row.hot_until > now
    }

    fn is_hot(&self, table: &'static str, key: EntityKey, now: Instant) -> bool {
        self.rows()
            .get(&(table, key))
            .is_some_and(|row| row.hot_until > now)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const HOUR: Duration = Duration::from_secs(3600);
    const MS: Duration = Duration::from_millis(1);

    fn key(id: i32) -> EntityKey {
        EntityKey::new(&["id"], vec![id.to_string()])
    }

    fn heat(conflicts: u32, window: Duration) -> Heat {
        Heat { conflicts, window }
    }

    #[test]
    fn one_conflict_makes_a_row_hot_for_the_window_and_only_that_row() {
        let hot = Memory::new(16);
        let now = Instant::now();
        assert!(!hot.any_hot(now));
        assert!(!hot.is_hot("stock", key(1), now));
        assert!(hot.remember("stock", &key(1), heat(1, HOUR), now));
        assert!(hot.any_hot(now));
        assert!(
            !hot.any_hot(now + HOUR),
            "nothing is hot once every window has passed"
        );
        assert!(hot.is_hot("stock", key(1), now));
        assert!(hot.is_hot("stock", key(1), now + HOUR - MS));
        assert!(
            !hot.is_hot("stock", key(2), now),
            "another key of the same table"
        );
        assert!(
            !hot.is_hot("seat", key(1), now),
            "the same key in another table"
        );
        assert!(
            !hot.is_hot("stock", key(1), now + HOUR),
            "the window has passed"
        );
    }

    #[test]
    fn a_row_is_hot_after_the_threshold_of_conflicts_within_one_window() {
        let hot = Memory::new(16);
        let now = Instant::now();
        let three = heat(3, Duration::from_secs(1));
        assert!(!hot.remember("stock", &key(1), three, now));
        assert!(!hot.remember("stock", &key(1), three, now + 400 * MS));
        // The first conflict is out of the window by now: the count starts again.
        assert!(!hot.remember("stock", &key(1), three, now + 1_100 * MS));
        assert!(!hot.remember("stock", &key(1), three, now + 1_200 * MS));
        assert!(!hot.is_hot("stock", key(1), now + 1_200 * MS));
        assert!(hot.remember("stock", &key(1), three, now + 1_300 * MS));
        // Hot for the window after the conflict that made it so.
        assert!(hot.is_hot("stock", key(1), now + 2_299 * MS));
        assert!(!hot.is_hot("stock", key(1), now + 2_300 * MS));
    }

    #[test]
    fn a_conflict_extends_the_heat_and_never_shortens_it() {
        let hot = Memory::new(16);
        let now = Instant::now();
        hot.remember("stock", &key(1), heat(1, HOUR), now);
        assert!(hot.remember("stock", &key(1), heat(1, Duration::ZERO), now));
        assert!(hot.is_hot("stock", key(1), now + HOUR / 2));
        hot.remember("stock", &key(1), heat(1, HOUR), now + HOUR / 2);
        assert!(hot.is_hot("stock", key(1), now + HOUR));
        // A zero window makes nothing hot; one too large for `Instant` is ignored; a
        // threshold of zero counts as one.
        assert!(!hot.remember("stock", &key(3), heat(1, Duration::ZERO), now));
        assert!(!hot.remember("stock", &key(4), heat(1, Duration::MAX), now));
        assert!(hot.remember("stock", &key(5), heat(0, HOUR), now));
    }

    #[test]
    fn the_memory_is_bounded_and_makes_room_from_rows_it_may_forget() {
        let hot = Memory::new(4);
        let now = Instant::now();
        for id in 0..6 {
            hot.remember("stock", &key(id), heat(1, HOUR), now);
        }
        assert_eq!(hot.rows().len(), 4);
        assert!(hot.is_hot("stock", key(0), now));
        assert!(!hot.is_hot("stock", key(5), now), "did not fit");
        // An hour later every row may be forgotten: a new one finds room.
        assert!(hot.remember("stock", &key(9), heat(1, HOUR), now + HOUR));
        assert_eq!(hot.rows().len(), 1);
    }

    #[test]
    fn each_handle_is_a_memory_of_its_own_and_clones_share_it() {
        let first = HotRows::new();
        let second = HotRows::new();
        let shared = first.clone();
        assert!(!first.any_hot());
        assert!(first.remember("stock", &key(1), heat(1, HOUR)));
        assert!(first.any_hot());
        assert!(first.is_hot_row("stock", || key(1)));
        assert!(
            shared.is_hot_row("stock", || key(1)),
            "a clone is the same memory"
        );
        assert!(!second.any_hot(), "another memory knows nothing of it");
        assert!(!second.is_hot_row("stock", || key(1)));
        assert_eq!(first, shared);
        assert_ne!(first, second);
        assert_eq!(HotRows::with_capacity(7).capacity(), 7);
        assert_eq!(HotRows::default().capacity(), DEFAULT_CAPACITY);
    }
}
