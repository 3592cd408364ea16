//! The key check, in both flavours.

flavour_prelude!();

use diesel::{ExpressionMethods, QueryDsl};
use diesel_occ::Error;
use diesel_occ::schema_check::SchemaCheck;
use diesel_occ_tests::Backend;

use super::super::{
    GeneratedItem, ITEMS, LINES, LINES_KEYED_ELSEWHERE, LooseItem, LooseLine, SchemaLooseKey,
    assert_no_values_or_queries, assert_unenforced, expected_fix, item, line, loose_items,
    schema_table,
};

/// The schema check of the entities given, run on `conn`.
#[flavour]
macro_rules! check {
    ($conn:expr, $($entity:ty),+) => {
        SchemaCheck::new()$(.entity::<$entity>())+.run_in_flavour($conn).await
    };
}

/// How many rows of `loose_items` have key `id`.
#[flavour]
async fn items_with_key(conn: &mut Conn, id: i32) -> i64 {
    let count = loose_items::table.filter(loose_items::id.eq(id)).count();
    count.get_result(conn).await.expect("count")
}

#[flavour(test)]
async fn a_key_without_a_unique_index_is_reported_with_its_fix() {
    let (_db, mut conn) = db_and_conn!();
    run_sql(&mut conn, ITEMS).await;
    let key = assert_unenforced(check!(&mut conn, LooseItem), "loose_items", &["id"]);
    let fix = expected_fix(Conn::BACKEND, "loose_items", &["id"], false);
    assert_eq!(key.fix, fix);
    // A token the database assigns does not exempt the key; two entities of one key
    // report it once.
    assert_unenforced(check!(&mut conn, GeneratedItem), "loose_items", &["id"]);
    let both = check!(&mut conn, LooseItem, GeneratedItem);
    assert_unenforced(both, "loose_items", &["id"]);

    // Why: the database takes the key twice.
    let mut first = item(1);
    let mut second = item(1);
    first.insert_checked(&mut conn).await.expect("the first");
    let again = second.insert_checked(&mut conn).await;
    again.expect("the same key again");
    assert_eq!(items_with_key(&mut conn, 1).await, 2);

    // The fix runs once the duplicate is gone; then the check passes and the key is
    // taken.
    run_sql(&mut conn, "DELETE FROM loose_items").await;
    run_sql(&mut conn, &key.fix).await;
    check!(&mut conn, LooseItem, GeneratedItem).expect("the key is kept unique");
    first.insert_checked(&mut conn).await.expect("the first");
    let taken = second.insert_checked(&mut conn).await;
    assert!(matches!(taken, Err(Error::UniqueViolation(_))), "{taken:?}");
    assert_eq!(items_with_key(&mut conn, 1).await, 1);
}

#[flavour(test)]
async fn a_unique_index_on_exactly_the_key_passes() {
    let (_db, mut conn) = db_and_conn!();
    run_sql(&mut conn, ITEMS).await;
    let index = "CREATE UNIQUE INDEX loose_items_by_id ON loose_items (id)";
    run_sql(&mut conn, index).await;
    check!(&mut conn, LooseItem).expect("a unique index on the key");
}

#[flavour(test)]
async fn a_composite_key_passes_with_a_unique_index_in_another_column_order() {
    let (_db, mut conn) = db_and_conn!();
    run_sql(&mut conn, LINES).await;
    let index = "CREATE UNIQUE INDEX loose_lines_by_line ON loose_lines (line_no, order_id)";
    run_sql(&mut conn, index).await;
    check!(&mut conn, LooseLine).expect("the key's columns in another order");
}

#[flavour(test)]
async fn a_unique_index_on_more_columns_than_the_key_is_reported() {
    let (_db, mut conn) = db_and_conn!();
    run_sql(&mut conn, LINES).await;
    let indexes = "CREATE UNIQUE INDEX loose_lines_wide ON loose_lines \
        (order_id, line_no, quantity); \
        CREATE INDEX loose_lines_plain ON loose_lines (order_id, line_no)";
    run_sql(&mut conn, indexes).await;
    let columns = ["order_id", "line_no"];
    let key = assert_unenforced(check!(&mut conn, LooseLine), "loose_lines", &columns);
    let fix = expected_fix(Conn::BACKEND, "loose_lines", &columns, false);
    assert_eq!(key.fix, fix);

    // Why: the wider index lets the key in twice.
    let first = line(1, 1).insert_checked(&mut conn).await;
    first.expect("the first");
    let mut again = line(1, 1);
    again.quantity = 2;
    let inserted = again.insert_checked(&mut conn).await;
    inserted.expect("the same key again");
    run_sql(&mut conn, "DELETE FROM loose_lines").await;
    run_sql(&mut conn, &key.fix).await;
    check!(&mut conn, LooseLine).expect("the key is kept unique");
}

#[flavour(test)]
async fn a_table_keyed_on_other_columns_gets_a_unique_index_as_its_fix() {
    let (_db, mut conn) = db_and_conn!();
    run_sql(&mut conn, LINES_KEYED_ELSEWHERE).await;
    let columns = ["order_id", "line_no"];
    let key = assert_unenforced(check!(&mut conn, LooseLine), "loose_lines", &columns);
    let fix = expected_fix(Conn::BACKEND, "loose_lines", &columns, true);
    assert_eq!(key.fix, fix);
    run_sql(&mut conn, &key.fix).await;
    check!(&mut conn, LooseLine).expect("the key is kept unique");
}

#[flavour(test)]
async fn a_partial_unique_index_does_not_count() {
    if Conn::BACKEND == Backend::Mysql {
        // MySQL and MariaDB have no partial indexes.
        return;
    }
    let (_db, mut conn) = db_and_conn!();
    run_sql(&mut conn, ITEMS).await;
    let index = "CREATE UNIQUE INDEX loose_items_positive ON loose_items (id) WHERE value > 0";
    run_sql(&mut conn, index).await;
    assert_unenforced(check!(&mut conn, LooseItem), "loose_items", &["id"]);
}

#[flavour(test)]
async fn a_key_in_a_schema_is_looked_up_there() {
    let (_db, mut conn) = db_and_conn!();
    run_sql(&mut conn, &schema_table(Conn::BACKEND)).await;
    let key = assert_unenforced(check!(&mut conn, SchemaLooseKey), "occ_loose_keys", &["id"]);
    assert_eq!(key.schema, Some("occ_app"));
    let fix = match Conn::BACKEND {
        Backend::Postgres => r#"ALTER TABLE "occ_app"."occ_loose_keys" ADD PRIMARY KEY ("id")"#,
        Backend::Mysql => "ALTER TABLE `occ_app`.`occ_loose_keys` ADD PRIMARY KEY (`id`)",
        Backend::Sqlite => {
            r#"CREATE UNIQUE INDEX "occ_app"."occ_loose_keys_id_key" ON "occ_loose_keys" ("id")"#
        }
    };
    assert_eq!(key.fix, fix);
    // The schema is the test's own on PostgreSQL and SQLite, shared on MariaDB.
    if Conn::BACKEND != Backend::Mysql {
        run_sql(&mut conn, &key.fix).await;
        check!(&mut conn, SchemaLooseKey).expect("the key is kept unique");
    }
}

#[flavour(test)]
async fn the_error_shows_neither_values_nor_the_catalog_queries() {
    let (_db, mut conn) = db_and_conn!();
    run_sql(&mut conn, ITEMS).await;
    item(1).insert_checked(&mut conn).await.expect("insert");
    item(1).insert_checked(&mut conn).await.expect("insert");
    let error = check!(&mut conn, LooseItem).expect_err("the key is not kept unique");
    assert_no_values_or_queries(&error);
}
