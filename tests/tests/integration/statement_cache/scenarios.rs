//! Bounded prepared statements, in both flavours.

flavour_prelude!();

use diesel_occ::Tracked;

use super::super::{
    CREATE, Count, MYSQL_OPEN, MYSQL_SERVER, PATTERNS, PG_OPEN, SEED, Status, Wide, assert_bounded,
    condition, mysql_open, patch, status_value, values,
};
use diesel_occ_tests::Backend;
use diesel_occ_tests::statements::StatementCounter;

/// The counts before a test's writes: Diesel's cache (counted from here on), and the
/// server's (see [`server_counts`]).
type Before = (StatementCounter, (Option<i64>, Option<i64>));

/// The statements the server holds open for this session, and (on MariaDB) for the
/// whole server; `None` where the backend has no server to ask.
#[flavour]
async fn server_counts(conn: &mut Conn) -> (Option<i64>, Option<i64>) {
    match Conn::BACKEND {
        Backend::Postgres => {
            let count = diesel::sql_query(PG_OPEN).get_result::<Count>(conn).await;
            (Some(count.expect("pg_prepared_statements").count), None)
        }
        Backend::Mysql => {
            let session = diesel::sql_query(MYSQL_OPEN).load::<Status>(conn).await;
            let server = diesel::sql_query(MYSQL_SERVER).load::<Status>(conn).await;
            let server = status_value(&server.expect("global status"), "Prepared_stmt_count");
            let session = mysql_open(&session.expect("session status"));
            (Some(session), Some(server))
        }
        Backend::Sqlite => (None, None),
    }
}

/// Creates the wide row, then counts.
#[flavour]
async fn wide_row_counted(conn: &mut Conn) -> Before {
    run_sql(conn, CREATE).await;
    run_sql(conn, SEED).await;
    let statements = StatementCounter::install_in_flavour(conn);
    (statements, server_counts(conn).await)
}

/// The row after one write per pattern, each writing the columns of its pattern: column
/// i was last written by the last pattern with bit i set, and the token moved once per
/// write.
#[flavour]
async fn assert_every_pattern_written(conn: &mut Conn) {
    let stored = Wide::find(conn, 1).await.expect("row");
    let last = (PATTERNS - 1) as i32;
    assert_eq!(stored.get(), values(PATTERNS - 1, last));
    assert_eq!(stored.version, 1 + PATTERNS as i32);
}

/// The three counts after the writes stay within the bound.
#[flavour]
async fn assert_bounded_since(before: Before, conn: &mut Conn, what: &str) {
    let (statements, (open_before, server_before)) = before;
    let cached = statements.take_cached().len();
    let (open, server) = server_counts(conn).await;
    assert_bounded(what, cached, (open_before, open), (server_before, server));
}

#[flavour(test)]
async fn tracked_saves_of_every_column_set_keep_the_prepared_statements_bounded() {
    let (_db, mut conn) = db_and_conn!();
    let before = wide_row_counted(&mut conn).await;
    let mut tracked = Tracked::new(Wide::find(&mut conn, 1).await.expect("row"));
    for pattern in 0..PATTERNS {
        // Every column in `pattern` changes, the others keep their value.
        let mut edited = tracked.get();
        for (column, value) in edited.iter_mut().zip(values(pattern, 1)) {
            if value.is_some() {
                *column = Some(column.unwrap_or(0) + 1);
            }
        }
        tracked.edit().set(edited);
        assert_eq!(tracked.changed().len(), pattern.count_ones() as usize);
        tracked.save_checked(&mut conn).await.expect("tracked save");
    }
    assert_bounded_since(before, &mut conn, "tracked saves").await;
    let stored = Wide::find(&mut conn, 1).await.expect("row");
    assert_eq!(stored, *tracked.current());
    assert_eq!(stored.version, 1 + PATTERNS as i32);
}

#[flavour(test)]
async fn upserts_of_every_none_pattern_keep_the_prepared_statements_bounded() {
    let (_db, mut conn) = db_and_conn!();
    let before = wide_row_counted(&mut conn).await;
    let mut row = Wide::find(&mut conn, 1).await.expect("row");
    // Every 16th pattern: 256 texts of each statement, far beyond the bound.
    for pattern in (0..PATTERNS).step_by(16) {
        // A new row of the `None` pattern (the insert's text varies), then a PUT of
        // the same pattern on it (the update's text varies).
        row.id = 2 + pattern as i32;
        row.set(values(pattern, pattern as i32));
        let inserted = row.upsert_checked(&mut conn, None).await.expect("create");
        let put = row.upsert_checked(&mut conn, Some(inserted.token())).await;
        assert!(!put.expect("put").is_inserted());
    }
    assert_bounded_since(before, &mut conn, "upserts").await;
}

#[flavour(test)]
async fn full_saves_of_every_none_pattern_keep_the_prepared_statements_bounded() {
    let (_db, mut conn) = db_and_conn!();
    let before = wide_row_counted(&mut conn).await;
    let mut row = Wide::find(&mut conn, 1).await.expect("row");
    for pattern in 0..PATTERNS {
        // `None` leaves its column alone: one SQL text per pattern.
        row.set(values(pattern, pattern as i32));
        row.save_checked(&mut conn).await.expect("save");
    }
    assert_bounded_since(before, &mut conn, "full saves").await;
    assert_every_pattern_written(&mut conn).await;
}

#[flavour(test)]
async fn patches_by_key_of_every_column_set_keep_the_prepared_statements_bounded() {
    let (_db, mut conn) = db_and_conn!();
    let before = wide_row_counted(&mut conn).await;
    let mut token = 1;
    for pattern in 0..PATTERNS {
        // A PATCH of the fields in `pattern`: one SQL text per pattern.
        token = Wide::update_by_key(&mut conn, 1, &token, patch(pattern, pattern as i32))
            .await
            .expect("patch");
    }
    assert_bounded_since(before, &mut conn, "patches by key").await;
    assert_every_pattern_written(&mut conn).await;
}

#[flavour(test)]
async fn saves_under_every_condition_keep_the_prepared_statements_bounded() {
    let (_db, mut conn) = db_and_conn!();
    let before = wide_row_counted(&mut conn).await;
    let mut row = Wide::find(&mut conn, 1).await.expect("row");
    for pattern in 0..PATTERNS {
        // The full save, under a condition with one SQL text per pattern.
        row.set(values(PATTERNS - 1, pattern as i32));
        let saved = row.save_checked_where(&mut conn, condition(pattern)).await;
        saved.expect("conditional save");
    }
    assert_bounded_since(before, &mut conn, "conditional saves").await;
    let stored = Wide::find(&mut conn, 1).await.expect("row");
    assert_eq!(stored, row);
    assert_eq!(stored.version, 1 + PATTERNS as i32);
}
