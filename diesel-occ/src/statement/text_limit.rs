//! How many distinct SQL texts of one statement Diesel's statement cache may keep on
//! each connection: the bound on a [`CachedUpdate`](super::CachedUpdate) whose text
//! varies from call to call (an `update_by_key` PATCH that skips its `None` fields, a
//! `save_checked_where` condition built at run time).
//!
//! Diesel's cache never evicts, and on MySQL and MariaDB every statement it keeps holds
//! one of the server's `max_prepared_stmt_count` slots, shared by all connections. A
//! PATCH of k optional fields has 2^k texts. So the first texts of each statement (by
//! Rust type and backend) are admitted to the cache, up to the
//! [limit](set_cached_texts_per_statement), and every other text is prepared for one
//! execution and closed, as Diesel's own UPDATE is. The admitted texts are the same for
//! every connection of the process, so a connection keeps at most the limit of
//! prepared statements per statement type, whatever texts it runs.

use std::collections::{HashMap, HashSet};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{OnceLock, PoisonError, RwLock};

/// Texts per statement unless [`set_cached_texts_per_statement`] says otherwise.
const DEFAULT_LIMIT: usize = 8;

static LIMIT: AtomicUsize = AtomicUsize::new(DEFAULT_LIMIT);

/// The admitted texts, by statement type and backend type.
type Admitted = HashMap<(&'static str, &'static str), HashSet<String>>;

fn admitted() -> &'static RwLock<Admitted> {
    static ADMITTED: OnceLock<RwLock<Admitted>> = OnceLock::new();
    ADMITTED.get_or_init(Default::default)
}

/// Sets how many distinct SQL texts of one statement whose text varies Diesel's
/// statement cache may keep, on each connection: 8 by default; 0 keeps none of them
/// (each is prepared for one execution, then closed), which is the opt-out.
///
/// It bounds the UPDATEs of [`update_by_key`](crate::VersionColumnDsl::update_by_key) and
/// [`save_checked_where`](crate::CheckedDsl::save_checked_where) (blocking and async),
/// and any [`CachedUpdate`](super::CachedUpdate) marked
/// [`bounded`](super::CachedUpdate::bounded). The texts admitted first stay admitted:
/// a lower limit refuses only texts not yet admitted (a connection keeps what it has
/// prepared until it closes). A checked save's own UPDATE, whose text is fixed, is not
/// counted.
///
/// ```
/// use diesel_occ::statement::{cached_texts_per_statement, set_cached_texts_per_statement};
///
/// assert_eq!(cached_texts_per_statement(), 8);
/// set_cached_texts_per_statement(0); // never keep a varying UPDATE prepared
/// assert_eq!(cached_texts_per_statement(), 0);
/// # set_cached_texts_per_statement(8);
/// ```
pub fn set_cached_texts_per_statement(limit: usize) {
    LIMIT.store(limit, Ordering::Relaxed);
}

/// The limit [`set_cached_texts_per_statement`] set (8 by default).
pub fn cached_texts_per_statement() -> usize {
    LIMIT.load(Ordering::Relaxed)
}

/// True when `text`, a text of `statement` on `backend`, may be kept in the statement
/// cache: it was admitted before, or the statement has room for one more text.
pub(crate) fn admit(statement: &'static str, backend: &'static str, text: &str) -> bool {
    admit_within(cached_texts_per_statement(), statement, backend, text)
}

fn admit_within(limit: usize, statement: &'static str, backend: &'static str, text: &str) -> bool {
    let key = (statement, backend);
    // The map holds no invariant a panicking holder could break: keep using it.
    {
        let map = admitted().read().unwrap_or_else(PoisonError::into_inner);
        match map.get(&key) {
            Some(texts) if texts.contains(text) => return true,
            Some(texts) if texts.len() >= limit => return false,
            None if limit == 0 => return false,
            _ => {}
        }
    }
    let mut map = admitted().write().unwrap_or_else(PoisonError::into_inner);
    let texts = map.entry(key).or_default();
    if texts.contains(text) {
        return true;
    }
    if texts.len() >= limit {
        return false;
    }
    texts.insert(text.to_owned());
    true
}

#[cfg(test)]
mod tests {
    use super::admit_within;

    #[test]
    fn the_first_texts_of_a_statement_are_admitted_up_to_the_limit() {
        let texts: Vec<String> = (0..20).map(|i| format!("UPDATE t SET c{i} = ?")).collect();
        let admit = |statement, backend, text| admit_within(8, statement, backend, text);
        for text in &texts[..8] {
            assert!(admit("test::A", "Pg", text), "{text}");
        }
        for text in &texts[8..] {
            assert!(!admit("test::A", "Pg", text), "{text}");
        }
        // Admitted texts stay admitted, even under a lower limit.
        assert!(admit("test::A", "Pg", &texts[0]));
        assert!(admit_within(0, "test::A", "Pg", &texts[0]));
        // Another statement, or the same one on another backend, has its own room.
        assert!(admit("test::B", "Pg", &texts[19]));
        assert!(admit("test::A", "Mysql", &texts[19]));
        // A limit of zero admits nothing new.
        assert!(!admit_within(0, "test::C", "Pg", &texts[0]));
        assert!(!admit_within(0, "test::A", "Pg", &texts[9]));
    }
}
