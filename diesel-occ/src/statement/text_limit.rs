//! How many distinct SQL texts of one statement Diesel's statement cache keeps on each
//! connection: the bound on a [`CachedUpdate`](super::CachedUpdate) whose text varies
//! from call to call (an `update_by_key` PATCH that skips its `None` fields, a
//! `save_checked_where` condition built at run time), and on the insert of an upsert.
//!
//! Diesel's cache never evicts, and on MySQL and MariaDB every statement it keeps holds
//! one of the server's `max_prepared_stmt_count` slots, shared by all connections. A
//! PATCH of k optional fields has 2^k texts. So the first
//! [`CACHED_TEXTS_PER_STATEMENT`] texts of each statement (by Rust type and backend)
//! are admitted to the cache, and every other text is prepared for one execution and
//! closed, as Diesel's own UPDATE is. The admitted texts are the same for every
//! connection of the process, so a connection keeps at most that many prepared
//! statements per statement type, whatever texts it runs.
//!
//! The bound is a property of the statement, not a setting: nothing a caller does
//! changes it for another. The texts admitted so far are remembered for the process
//! (Diesel gives no place to keep them beside each connection); the memory is keyed by
//! the statement's Rust type, so only code writing the same statement of the same
//! table shares it, and it holds at most [`CACHED_TEXTS_PER_STATEMENT`] texts per
//! statement type.

use std::collections::{HashMap, HashSet};
use std::sync::{OnceLock, PoisonError, RwLock};

/// How many distinct SQL texts of one statement whose text varies each connection keeps
/// prepared: the first 8 texts the process runs of each such statement (its Rust type,
/// on its backend); the others are prepared for one execution, then closed.
///
/// It bounds the UPDATEs of [`update_by_key`](crate::VersionColumnDsl::update_by_key),
/// [`save_checked_where`](crate::CheckedDsl::save_checked_where) and
/// [`upsert_checked`](crate::InsertDsl::upsert_checked) (blocking and async), and any
/// [`CachedUpdate`](super::CachedUpdate) marked [`bounded`](super::CachedUpdate::bounded).
/// A checked save's own UPDATE, whose text is fixed, is not counted.
///
/// ```
/// // On MySQL, a pool of 20 connections writing 30 entity types by PATCH keeps at most
/// // 20 * 30 * 8 prepared UPDATEs: within `max_prepared_stmt_count`'s default of 16382.
/// assert!(20 * 30 * diesel_occ::statement::CACHED_TEXTS_PER_STATEMENT <= 16_382);
/// ```
pub const CACHED_TEXTS_PER_STATEMENT: usize = 8;

/// The admitted texts, by statement type and backend type.
type Admitted = HashMap<(&'static str, &'static str), HashSet<String>>;

fn admitted() -> &'static RwLock<Admitted> {
    static ADMITTED: OnceLock<RwLock<Admitted>> = OnceLock::new();
    ADMITTED.get_or_init(Default::default)
}

/// True when `text`, a text of `statement` on `backend`, may be kept in the statement
/// cache: it was admitted before, or the statement has room for one more text.
pub(crate) fn admit(statement: &'static str, backend: &'static str, text: &str) -> bool {
    let key = (statement, backend);
    // The map holds no invariant a panicking holder could break: keep using it.
    {
        let map = admitted().read().unwrap_or_else(PoisonError::into_inner);
        match map.get(&key) {
            Some(texts) if texts.contains(text) => return true,
            Some(texts) if texts.len() >= CACHED_TEXTS_PER_STATEMENT => return false,
            _ => {}
        }
    }
    let mut map = admitted().write().unwrap_or_else(PoisonError::into_inner);
    let texts = map.entry(key).or_default();
    if texts.contains(text) {
        return true;
    }
    if texts.len() >= CACHED_TEXTS_PER_STATEMENT {
        return false;
    }
    texts.insert(text.to_owned());
    true
}

#[cfg(test)]
mod tests {
    use super::{CACHED_TEXTS_PER_STATEMENT, admit};

    #[test]
    fn the_first_texts_of_a_statement_are_admitted_up_to_the_bound() {
        let texts: Vec<String> = (0..20).map(|i| format!("UPDATE t SET c{i} = ?")).collect();
        let (first, others) = texts.split_at(CACHED_TEXTS_PER_STATEMENT);
        for text in first {
            assert!(admit("test::A", "Pg", text), "{text}");
        }
        for text in others {
            assert!(!admit("test::A", "Pg", text), "{text}");
        }
        // Admitted texts stay admitted.
        assert!(admit("test::A", "Pg", &texts[0]));
        // Another statement, or the same one on another backend, has its own room.
        assert!(admit("test::B", "Pg", &texts[19]));
        assert!(admit("test::A", "Mysql", &texts[19]));
    }
}
