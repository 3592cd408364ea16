//! SQL names on an async connection (diesel-async).

use diesel_async::SimpleAsyncConnection;
use diesel_occ::schema_check::SchemaCheck;
use diesel_occ_tests::AsyncTestConnection;

use super::super::{BadItem, NamedItem, SameItem, SchemaItem, assert_reported, create};
use super::AsyncConn as Conn;

#[tokio::test]
async fn the_schema_check_reads_the_columns_by_their_sql_names() {
    let db = async_test_db!();
    let mut conn = db.conn().await;
    conn.batch_execute(&create(Conn::BACKEND)).await.expect("tables");
    SchemaCheck::new()
        .entity::<NamedItem>()
        .entity::<SameItem>()
        .entity::<SchemaItem>()
        .run_async(&mut conn)
        .await
        .expect("every token column fits");
    assert_reported(
        SchemaCheck::new()
            .entity::<NamedItem>()
            .entity::<BadItem>()
            .entity::<SchemaItem>()
            .run_async(&mut conn)
            .await,
    );
}
