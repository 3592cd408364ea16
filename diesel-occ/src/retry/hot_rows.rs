//! The rows that met a conflict recently, remembered for the whole process so that
//! retry attempts reading them lock from their first read
//! ([`RetryPolicy::escalate_hot_rows`](super::RetryPolicy::escalate_hot_rows)).
//!
//! A row is named by its table and [`EntityKey`], not by its database: two databases
//! with the same table share an entry. That only costs a lock where none was needed;
//! the token check still decides every save.

use std::collections::HashMap;
use std::sync::{LazyLock, PoisonError, RwLock, RwLockReadGuard, RwLockWriteGuard};
use std::time::{Duration, Instant};

use crate::error::EntityKey;

/// How many rows the process remembers at most. Past it, expired entries are dropped
/// and, if none has expired, the new row is not remembered: a bounded memory matters
/// more than one more escalation.
const CAPACITY: usize = 4096;

/// The process's memory of hot rows.
static HOT_ROWS: LazyLock<HotRows> = LazyLock::new(|| HotRows::new(CAPACITY));

/// Remembers that the row met a conflict now: it is hot for `window`.
pub(crate) fn remember(table: &'static str, key: &EntityKey, window: Duration) {
    HOT_ROWS.remember(table, key, window, Instant::now());
}

/// True when the row met a conflict less than its window ago.
pub(crate) fn is_hot(table: &'static str, key: EntityKey) -> bool {
    HOT_ROWS.is_hot(table, key, Instant::now())
}

type Rows = HashMap<(&'static str, EntityKey), Instant>;

/// Table and key of each hot row, with the instant it stops being hot.
///
/// Every read of a row under a hot-row policy asks it, from every thread, so it is a
/// read-write lock: readers do not queue behind each other. Expired rows stay until a
/// full memory prunes them.
struct HotRows {
    capacity: usize,
    rows: RwLock<Rows>,
}

impl HotRows {
    fn new(capacity: usize) -> Self {
        HotRows {
            capacity,
            rows: RwLock::new(HashMap::new()),
        }
    }

    // The map holds no invariant a panicking holder could break: keep using it.
    fn rows(&self) -> RwLockReadGuard<'_, Rows> {
        self.rows.read().unwrap_or_else(PoisonError::into_inner)
    }

    fn rows_mut(&self) -> RwLockWriteGuard<'_, Rows> {
        self.rows.write().unwrap_or_else(PoisonError::into_inner)
    }

    fn remember(&self, table: &'static str, key: &EntityKey, window: Duration, now: Instant) {
        let Some(until) = now.checked_add(window) else {
            return;
        };
        let row = (table, key.clone());
        let mut rows = self.rows_mut();
        if rows.len() >= self.capacity && !rows.contains_key(&row) {
            rows.retain(|_, hot_until| *hot_until > now);
            if rows.len() >= self.capacity {
                return;
            }
        }
        let hot_until = rows.entry(row).or_insert(until);
        *hot_until = (*hot_until).max(until);
    }

    fn is_hot(&self, table: &'static str, key: EntityKey, now: Instant) -> bool {
        self.rows()
            .get(&(table, key))
            .is_some_and(|hot_until| *hot_until > now)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const HOUR: Duration = Duration::from_secs(3600);

    fn key(id: i32) -> EntityKey {
        EntityKey::new(&["id"], vec![id.to_string()])
    }

    #[test]
    fn a_row_is_hot_for_its_window_and_only_that_row() {
        let hot = HotRows::new(16);
        let now = Instant::now();
        assert!(!hot.is_hot("stock", key(1), now));
        hot.remember("stock", &key(1), HOUR, now);
        assert!(hot.is_hot("stock", key(1), now));
        assert!(hot.is_hot("stock", key(1), now + HOUR - Duration::from_nanos(1)));
        assert!(
            !hot.is_hot("stock", key(2), now),
            "another key of the same table"
        );
        assert!(
            !hot.is_hot("seat", key(1), now),
            "the same key in another table"
        );
        // Once the window has passed the row is cold.
        assert!(!hot.is_hot("stock", key(1), now + HOUR));
    }

    #[test]
    fn a_conflict_extends_the_window_and_never_shortens_it() {
        let hot = HotRows::new(16);
        let now = Instant::now();
        hot.remember("stock", &key(1), HOUR, now);
        hot.remember("stock", &key(1), Duration::ZERO, now);
        assert!(hot.is_hot("stock", key(1), now + HOUR / 2));
        hot.remember("stock", &key(1), HOUR, now + HOUR / 2);
        assert!(hot.is_hot("stock", key(1), now + HOUR));
        // A zero window remembers nothing; one too large for `Instant` is ignored.
        hot.remember("stock", &key(3), Duration::ZERO, now);
        hot.remember("stock", &key(4), Duration::MAX, now);
        assert!(!hot.is_hot("stock", key(3), now));
        assert!(!hot.is_hot("stock", key(4), now));
    }

    #[test]
    fn the_memory_is_bounded_and_makes_room_from_expired_rows() {
        let hot = HotRows::new(4);
        let now = Instant::now();
        for id in 0..6 {
            hot.remember("stock", &key(id), HOUR, now);
        }
        assert_eq!(hot.rows().len(), 4);
        assert!(hot.is_hot("stock", key(0), now));
        assert!(!hot.is_hot("stock", key(5), now), "did not fit");
        // An hour later every row has expired: a new one finds room.
        hot.remember("stock", &key(9), HOUR, now + HOUR);
        assert_eq!(hot.rows().len(), 1);
        assert!(hot.is_hot("stock", key(9), now + HOUR));
    }

    #[test]
    fn the_process_memory_answers_for_its_own_rows() {
        let table = "hot_rows_process_memory";
        remember(table, &key(1), HOUR);
        assert!(is_hot(table, key(1)));
        assert!(!is_hot(table, key(2)));
    }
}
