//! What the blocking and async batch scenarios share: the SQL that seeds the tables and
//! plays the other writer (plain SQL, so both flavours run the very same set-up through
//! `batch_execute`), and what a successful batch sends.

use diesel_occ_tests::Backend;
use diesel_occ_tests::statements::{sql_only, updates};

/// `ids` as `a, b, c`.
fn list(ids: impl IntoIterator<Item = impl ToString>) -> String {
    let ids: Vec<String> = ids.into_iter().map(|id| id.to_string()).collect();
    ids.join(", ")
}

/// Accounts 1..=n, balance 100, version 1: one INSERT per 500 rows.
pub(super) fn seed_accounts(n: i32) -> Vec<String> {
    let ids: Vec<i32> = (1..=n).collect();
    let insert = |ids: &[i32]| {
        let rows = list(ids.iter().map(|id| format!("({id}, 100, FALSE, 1)")));
        format!("INSERT INTO accounts (id, balance, deleted, version) VALUES {rows}")
    };
    ids.chunks(500).map(insert).collect()
}

/// Another writer that committed before the batch: the accounts in `stale` hold balance
/// `balance` and version 2, those in `deleted` are gone.
pub(super) fn other_writer(stale: &[i32], balance: i32, deleted: &[i32]) -> String {
    let (stale, deleted) = (list(stale), list(deleted));
    format!(
        "UPDATE accounts SET balance = {balance}, version = version + 1 WHERE id IN ({stale}); \
         DELETE FROM accounts WHERE id IN ({deleted});"
    )
}

/// A UUID literal: `uuid` on PostgreSQL, 16 bytes elsewhere.
fn uuid(backend: Backend, n: u8) -> String {
    let hex = format!("{:032x}", u128::from(n));
    if backend == Backend::Postgres {
        format!("'{hex}'::uuid")
    } else {
        format!("X'{hex}'")
    }
}

/// Rows 1..=3 of `table` (one entity shape of `entities.rs`), every token distinct.
pub(super) fn seed(table: &str, backend: Backend) -> String {
    let rows = match table {
        "tickets" => {
            let [a, b, c] = [1, 2, 3].map(|n| uuid(backend, n));
            format!("(id, seat, version) VALUES (1, 'A1', {a}), (2, 'A2', {b}), (3, 'A3', {c})")
        }
        "stamped" => "(id, value, updated_at) VALUES (1, 1, '2024-01-02 03:04:05.123456'), \
             (2, 2, '2024-01-02 03:04:05.000001'), (3, 3, '2024-01-02 03:04:05.999999')"
            .into(),
        "order_lines" => "(order_id, line_no, quantity, version) VALUES \
             (1, 1, 1, 1), (1, 2, 2, 1), (2, 1, 3, 1)"
            .into(),
        "notes" => {
            "(note_id, note_text, rev) VALUES (1, 'one', 1), (2, 'two', 1), (3, 'three', 1)".into()
        }
        "work_items" => "(id, payload, status, lease_owner, lease_expires_at, fence, version) \
             VALUES (1, 'a', 'PROCESSING', 'w1', 5, 1, 1), (2, 'b', 'PROCESSING', 'w2', 6, 1, 1), \
             (3, 'c', 'PROCESSING', 'w3', 7, 1, 1)"
            .into(),
        "counters" => "(id, value, label, version) VALUES \
             (1, 1, 'one', 1), (2, 2, 'two', 1), (3, 3, NULL, 1)"
            .into(),
        _ => unreachable!("{table}"),
    };
    format!("INSERT INTO {table} {rows}")
}

/// Another writer that committed after the batch read its rows: the second row of
/// `table` holds a new token (and a value the batch never writes).
pub(super) fn bump_second(table: &str, backend: Backend) -> String {
    let set = match table {
        "tickets" => format!("seat = 'B2', version = {} WHERE id = 2", uuid(backend, 9)),
        "stamped" => "value = 99, updated_at = '2024-01-02 03:04:05.000002' WHERE id = 2".into(),
        "order_lines" => {
            "quantity = 99, version = version + 10 WHERE order_id = 1 AND line_no = 2".into()
        }
        "notes" => "note_text = 'other', rev = rev + 10 WHERE note_id = 2".into(),
        "work_items" => "payload = 'other', version = version + 10 WHERE id = 2".into(),
        "counters" => "value = 99, version = version + 10 WHERE id = 2".into(),
        _ => unreachable!("{table}"),
    };
    format!("UPDATE {table} SET {set}")
}

/// What a successful batch of `n` entities on `table` sends: on PostgreSQL `BEGIN`, ONE
/// `UPDATE ... FROM (VALUES ...)` holding a row per entity, and `COMMIT`; on MySQL and
/// SQLite `BEGIN`, one UPDATE per entity and `COMMIT`.
pub(super) fn assert_batch_statements(
    backend: Backend,
    table: &str,
    statements: &[String],
    n: usize,
) {
    let (first, last) = (statements.first(), statements.last());
    assert_eq!(first.map(String::as_str), Some("BEGIN"), "{statements:?}");
    assert_eq!(last.map(String::as_str), Some("COMMIT"), "{statements:?}");
    let body = &statements[1..statements.len() - 1];
    if backend != Backend::Postgres {
        assert_eq!(updates(body).len(), n, "one UPDATE per entity");
        assert_eq!(body.len(), n, "{statements:?}");
        return;
    }
    let [statement] = body else {
        panic!("one statement for the whole batch: {statements:?}");
    };
    let sql = sql_only(statement).trim_end();
    let update = format!("UPDATE \"{table}\" SET ");
    assert!(sql.starts_with(&update), "{sql}");
    assert_eq!(sql.matches("UPDATE").count(), 1, "{sql}");
    let values = sql.split(" FROM (VALUES ").nth(1).expect("a VALUES list");
    assert!(values.starts_with("(0, "), "{sql}");
    let (last, past) = (format!("({}, ", n - 1), format!("({n}, "));
    assert!(values.contains(&last), "a row per entity: {sql}");
    assert!(!values.contains(&past), "a row per entity: {sql}");
    assert!(sql.ends_with("RETURNING \"occ_v\".\"occ_pos\""), "{sql}");
}
