//! What the blocking and async batch scenarios share: the SQL that seeds the tables and
//! plays the other writer (plain SQL, so both flavours run the very same set-up through
//! `batch_execute`), and what a successful batch sends.

use diesel_occ_tests::Backend;
use diesel_occ_tests::statements::{sql_only, updates};

/// Accounts 1..=n, balance 100, version 1: one INSERT per 500 rows.
pub(super) fn seed_accounts(n: i32) -> Vec<String> {
    let ids: Vec<i32> = (1..=n).collect();
    ids.chunks(500)
        .map(|chunk| {
            let rows: Vec<String> = chunk
                .iter()
                .map(|id| format!("({id}, 100, FALSE, 1)"))
                .collect();
            format!(
                "INSERT INTO accounts (id, balance, deleted, version) VALUES {}",
                rows.join(", ")
            )
        })
        .collect()
}

/// Another writer that committed before the batch: the accounts in `stale` hold balance
/// `balance` and version 2, those in `deleted` are gone.
pub(super) fn other_writer(stale: &[i32], balance: i32, deleted: &[i32]) -> String {
    let list = |ids: &[i32]| {
        let ids: Vec<String> = ids.iter().map(i32::to_string).collect();
        ids.join(", ")
    };
    let mut sql = String::new();
    if !stale.is_empty() {
        sql += &format!(
            "UPDATE accounts SET balance = {balance}, version = version + 1 WHERE id IN ({});",
            list(stale)
        );
    }
    if !deleted.is_empty() {
        sql += &format!("DELETE FROM accounts WHERE id IN ({});", list(deleted));
    }
    sql
}

/// The tables of one entity kind (see `entities.rs`), three rows each.
#[derive(Debug, Clone, Copy)]
pub(super) enum Kind {
    Tickets,
    Stamped,
    OrderLines,
    Notes,
    WorkItems,
    Counters,
}

impl Kind {
    /// The kind's table.
    pub(super) fn table(self) -> &'static str {
        match self {
            Kind::Tickets => "tickets",
            Kind::Stamped => "stamped",
            Kind::OrderLines => "order_lines",
            Kind::Notes => "notes",
            Kind::WorkItems => "work_items",
            Kind::Counters => "counters",
        }
    }
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

/// Rows 1..=3 of `kind`'s table, every token distinct.
pub(super) fn seed(kind: Kind, backend: Backend) -> String {
    match kind {
        Kind::Tickets => format!(
            "INSERT INTO tickets (id, seat, version) VALUES (1, 'A1', {}), (2, 'A2', {}), (3, 'A3', {})",
            uuid(backend, 1),
            uuid(backend, 2),
            uuid(backend, 3)
        ),
        Kind::Stamped => "INSERT INTO stamped (id, value, updated_at) VALUES \
             (1, 1, '2024-01-02 03:04:05.123456'), (2, 2, '2024-01-02 03:04:05.000001'), \
             (3, 3, '2024-01-02 03:04:05.999999')"
            .into(),
        Kind::OrderLines => {
            "INSERT INTO order_lines (order_id, line_no, quantity, version) VALUES \
             (1, 1, 1, 1), (1, 2, 2, 1), (2, 1, 3, 1)"
                .into()
        }
        Kind::Notes => "INSERT INTO notes (note_id, note_text, rev) VALUES \
             (1, 'one', 1), (2, 'two', 1), (3, 'three', 1)"
            .into(),
        Kind::WorkItems => "INSERT INTO work_items \
             (id, payload, status, lease_owner, lease_expires_at, fence, version) VALUES \
             (1, 'a', 'PROCESSING', 'w1', 5, 1, 1), (2, 'b', 'PROCESSING', 'w2', 6, 1, 1), \
             (3, 'c', 'PROCESSING', 'w3', 7, 1, 1)"
            .into(),
        Kind::Counters => "INSERT INTO counters (id, value, label, version) VALUES \
             (1, 1, 'one', 1), (2, 2, 'two', 1), (3, 3, NULL, 1)"
            .into(),
    }
}

/// Another writer that committed after the batch read its rows: the second row of
/// `kind`'s table holds a new token (and a value the batch never writes).
pub(super) fn bump_second(kind: Kind, backend: Backend) -> String {
    match kind {
        Kind::Tickets => format!(
            "UPDATE tickets SET seat = 'B2', version = {} WHERE id = 2",
            uuid(backend, 9)
        ),
        Kind::Stamped => "UPDATE stamped SET value = 99, updated_at = '2024-01-02 03:04:05.000002' \
             WHERE id = 2"
            .into(),
        Kind::OrderLines => {
            "UPDATE order_lines SET quantity = 99, version = version + 10 WHERE order_id = 1 AND line_no = 2"
                .into()
        }
        Kind::Notes => "UPDATE notes SET note_text = 'other', rev = rev + 10 WHERE note_id = 2".into(),
        Kind::WorkItems => "UPDATE work_items SET payload = 'other', version = version + 10 WHERE id = 2".into(),
        Kind::Counters => "UPDATE counters SET value = 99, version = version + 10 WHERE id = 2".into(),
    }
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
    if backend == Backend::Postgres {
        let [statement] = body else {
            panic!("one statement for the whole batch: {statements:?}");
        };
        let sql = sql_only(statement).trim_end();
        assert!(
            sql.starts_with(&format!("UPDATE \"{table}\" SET ")),
            "{sql}"
        );
        assert_eq!(sql.matches("UPDATE").count(), 1, "{sql}");
        let values = sql.split(" FROM (VALUES ").nth(1).expect("a VALUES list");
        assert!(values.starts_with("(0, "), "{sql}");
        assert!(
            values.contains(&format!("({}, ", n - 1)),
            "a row per entity: {sql}"
        );
        assert!(
            !values.contains(&format!("({}, ", n)),
            "a row per entity: {sql}"
        );
        assert!(sql.ends_with("RETURNING \"occ_v\".\"occ_pos\""), "{sql}");
    } else {
        assert_eq!(updates(body).len(), n, "one UPDATE per entity");
        assert_eq!(body.len(), n, "{statements:?}");
    }
}
