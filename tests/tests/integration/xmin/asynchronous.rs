//! `xmin` tokens on an async connection (diesel-async).

use diesel::prelude::*;
use diesel_async::RunQueryDsl;
use diesel_occ::asynchronous::prelude::*;
use diesel_occ::xmin::XminToken;
use diesel_occ::{SaveOutcome, Tracked};
use diesel_occ_tests::AsyncTestDb;

use super::super::{Document, NewDocument};
use super::{AsyncConn as Conn, schema};

/// Document 1, "Title" and "Body".
async fn seed(db: &AsyncTestDb<Conn>) {
    diesel::insert_into(schema::documents::table)
        .values(NewDocument {
            id: 1,
            title: "Title",
            body: "Body",
        })
        .execute(&mut db.conn().await)
        .await
        .expect("insert document");
}

async fn stored_xmin(conn: &mut Conn) -> XminToken {
    schema::documents::table
        .find(1)
        .select(schema::documents::xmin)
        .get_result(conn)
        .await
        .expect("xmin")
}

/// A generated token in a transaction that rolls back (see the blocking twin).
#[tokio::test]
async fn xmin_rolled_back_save_is_restored_then_conflicts_async() {
    let db = async_test_db!();
    seed(&db).await;
    let mut conn = db.conn().await;
    let read = Document::find(&mut conn, 1).await.unwrap();
    let mut mine = read.clone();

    mine.body = "Rolled back".into();
    let outcome =
        diesel_occ::asynchronous::transaction(&mut conn, &mut mine, async |conn, mine| {
            mine.save_checked(conn).await?;
            assert_ne!(
                mine.xmin, read.xmin,
                "the transaction's own xmin, read back"
            );
            Err::<(), diesel_occ::Error>(diesel::result::Error::RollbackTransaction.into())
        })
        .await;
    assert!(outcome.is_err(), "{outcome:?}");
    assert_eq!(Document::find(&mut conn, 1).await.unwrap(), read);
    assert_eq!(mine.xmin, read.xmin, "the token it read, restored");

    let mut other = db.conn().await;
    let mut restored = mine.clone();
    restored
        .save_checked(&mut other)
        .await
        .expect("the restored token matches the unchanged row");
    assert_eq!(restored.xmin, stored_xmin(&mut db.conn().await).await);

    let error = mine.save_checked(&mut conn).await.unwrap_err();
    assert_eq!(
        error
            .as_conflict()
            .expect("a conflict")
            .current::<XminToken>(),
        Some(restored.xmin)
    );
    assert_eq!(Document::find(&mut conn, 1).await.unwrap(), restored);
}

#[tokio::test]
async fn xmin_on_the_async_connection() {
    let db = async_test_db!();
    seed(&db).await;
    let mut conn = db.conn().await;
    let mut doc = Document::find(&mut conn, 1).await.unwrap();
    let stale = doc.clone();
    doc.body = "Async".into();
    doc.save_checked(&mut conn).await.expect("save");
    assert_ne!(doc.xmin, stale.xmin);
    assert_eq!(
        doc.xmin,
        stored_xmin(&mut db.conn().await).await,
        "read back with RETURNING"
    );

    let mut stale = Tracked::new(stale);
    stale.edit().title = "Merged".into();
    let outcome = stale.save_merging(&mut conn).await.expect("merge");
    assert!(matches!(outcome, SaveOutcome::Merged { .. }), "{outcome:?}");
    let stored = Document::find(&mut conn, 1).await.unwrap();
    assert_eq!(
        (stored.title.as_str(), stored.body.as_str()),
        ("Merged", "Async")
    );
    assert_eq!(stale.xmin, stored.xmin);
    let mut batch = [stored];
    batch[0].body = "Batch".into();
    batch.save_all_checked(&mut conn).await.unwrap();
    assert_eq!(batch[0].xmin, stored_xmin(&mut db.conn().await).await);
}
