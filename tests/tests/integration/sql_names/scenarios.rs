//! SQL names, in both flavours.

flavour_prelude!();

use diesel_occ::schema_check::SchemaCheck;

use super::super::{BadItem, NamedItem, SameItem, SchemaItem, assert_reported, create};

#[flavour(test)]
async fn the_schema_check_reads_the_columns_by_their_sql_names() {
    let (_db, mut conn) = db_and_conn!();
    run_sql(&mut conn, &create(Conn::BACKEND)).await;
    let check = SchemaCheck::new().entity::<NamedItem>();
    let check = check.entity::<SchemaItem>();
    let fitting = check.clone().entity::<SameItem>();
    let fitting = fitting.run_in_flavour(&mut conn).await;
    fitting.expect("every token column fits");
    let fix = assert_reported(check.entity::<BadItem>().run_in_flavour(&mut conn).await);
    // The DDL in the message is the fix: run, it makes the column fit.
    run_sql(&mut conn, &fix).await;
    let fixed = SchemaCheck::new().entity::<BadItem>();
    let fixed = fixed.run_in_flavour(&mut conn).await;
    fixed.expect("the column fits once fixed");
}

/// The hot-row memory through the blocking retry helper.
#[flavour(blocking, test)]
fn conflicts_and_the_hot_row_memory_name_the_table_by_its_sql_name() {
    use std::time::Duration;

    use diesel_occ::blocking;
    use diesel_occ::retry::{HotRows, RetryPolicy};

    let db = db!();
    let mut conn = db.conn();
    conn.batch_execute(&create(Conn::BACKEND)).expect("tables");
    assert_eq!(NamedItem::sql_table_name(), "occ_named_items");
    assert_eq!(SchemaItem::sql_table_name(), "occ_app.occ_schema_items");

    let memory = HotRows::new();
    let policy = RetryPolicy::new().max_attempts(1);
    let policy = policy.escalate_hot_rows_with(&memory, 1, Duration::from_secs(3600));
    let source = || Ok::<_, diesel::ConnectionError>(db.conn());
    let mut other = db.conn();
    let _ = blocking::retry(&source, &policy, |conn, attempt| {
        let mut row: NamedItem = attempt.find(conn, 1)?;
        let mut theirs = NamedItem::find(&mut other, 1)?;
        theirs.save_checked(&mut other)?;
        row.save_checked(conn)
    });
    // A conflict names the table and key by their SQL names.
    let mut stale = NamedItem::find(&mut conn, 1).expect("row");
    let mut theirs = NamedItem::find(&mut other, 1).expect("row");
    theirs.save_checked(&mut other).expect("their save");
    let error = stale.save_checked(&mut conn).unwrap_err();
    let conflict = error.as_conflict().expect("a conflict");
    assert_eq!(conflict.table(), "occ_named_items", "{error}");
    assert_eq!(conflict.key().columns(), ["id"], "{error}");
    // The row is hot under every Rust name of its SQL table.
    assert!(memory.is_hot::<NamedItem>(&1));
    assert!(memory.is_hot::<SameItem>(&1));
}
