//! `xmin` tokens, on blocking and async connections alike: read, compared and returned
//! in one statement, stale tokens as typed conflicts, its own bypass guard, races,
//! tracked merges and batches, and a save in a transaction that rolls back.

flavour_prelude!();

use diesel::QueryDsl;
use diesel_occ::testing::Race;
use diesel_occ::xmin::XminToken;
use diesel_occ::{ConflictState, Error, SaveOutcome, Tracked};
use diesel_occ_tests::expect_conflict;
use diesel_occ_tests::statements::{StatementCounter, sql_only};

use super::super::{Document, NewDocument};
use super::schema;

/// Document 1, "Title" and "Body"; returns a connection.
#[flavour]
async fn seed(db: &TestDb<Conn>) -> Conn {
    let mut conn = db.conn().await;
    let new = NewDocument {
        id: 1,
        title: "Title",
        body: "Body",
    };
    insert_rows!(&mut conn, schema::documents::table, new);
    conn
}

#[flavour]
async fn stored(conn: &mut Conn) -> Document {
    Document::find(conn, 1).await.expect("document 1")
}

#[flavour]
async fn stored_xmin(conn: &mut Conn) -> XminToken {
    use schema::documents::{table, xmin};
    let query = table.find(1).select(xmin);
    query.get_result(conn).await.expect("xmin")
}

#[flavour(test)]
async fn xmin_is_read_compared_and_returned_in_one_statement() {
    let db = db!();
    let mut conn = seed(&db).await;
    let mut doc = stored(&mut conn).await;
    let read = doc.xmin;
    assert_eq!(read, stored_xmin(&mut conn).await);

    doc.body = "Edited".into();
    let log = StatementCounter::install_in_flavour(&mut conn);
    doc.save_checked(&mut conn).await.expect("save");
    let statements = log.take_sql();
    assert_eq!(statements.len(), 1, "one statement: {statements:?}");
    let sql = sql_only(&statements[0]);
    assert!(sql.contains("RETURNING \"documents\".\"xmin\""), "{sql}");
    let assigned = sql.contains("SET \"xmin\"") || sql.contains(", \"xmin\" =");
    assert!(!assigned, "xmin is never assigned: {sql}");
    assert_ne!(doc.xmin, read, "a new transaction id");
    let database_assigned = stored_xmin(&mut conn).await;
    assert_eq!(doc.xmin, database_assigned, "the database's token");
}

#[flavour(test)]
async fn stale_xmin_is_a_typed_conflict_for_save_and_delete() {
    let db = db!();
    let mut conn = seed(&db).await;
    let mut first = stored(&mut conn).await;
    let second = first.clone();
    first.title = "First".into();
    first.save_checked(&mut conn).await.unwrap();

    let mut stale = second.clone();
    stale.title = "Second".into();
    let conflict = expect_conflict(stale.save_checked(&mut conn).await);
    assert_eq!(conflict.expected::<XminToken>(), Some(second.xmin));
    assert_eq!(conflict.current::<XminToken>(), Some(first.xmin));
    assert_eq!(stale.xmin, second.xmin, "untouched");
    let deleted = second.delete_checked(&mut conn).await;
    assert!(deleted.unwrap_err().is_conflict());
    // Found by a client's token, e.g. an ETag.
    let etag = first.xmin.encode();
    let token = XminToken::decode(&etag).unwrap();
    let by_etag = Document::find_checked(&mut conn, 1, &token).await.unwrap();
    assert_eq!(by_etag, first);
    let deleted = first.delete_checked(&mut conn).await;
    deleted.expect("delete with the current xmin");
}

#[flavour(test)]
async fn xmin_is_its_own_bypass_guard() {
    let db = db!();
    let mut conn = seed(&db).await;
    let mut doc = stored(&mut conn).await;
    raw_sql(&db, "UPDATE documents SET body = 'Raw' WHERE id = 1").await;
    doc.title = "Mine".into();
    let conflict = expect_conflict(doc.save_checked(&mut conn).await);
    assert!(matches!(conflict.state(), ConflictState::Stale { .. }));
}

#[flavour(test)]
async fn xmin_two_writers_from_one_version_exactly_one_wins() {
    let db = db!();
    seed(&db).await;
    let report = Race::new(2)
        .run_in_flavour(
            async |_| {
                let mut conn = db.conn().await;
                let doc = stored(&mut conn).await;
                (conn, doc)
            },
            async |writer, (mut conn, mut doc): (Conn, Document)| {
                doc.body = format!("Body by {writer}");
                let result = doc.save_checked(&mut conn).await;
                (result.map_err(|e| e.is_conflict()), doc)
            },
        )
        .await;
    let outcomes = report.into_values().unwrap();
    let winners: Vec<_> = outcomes.iter().filter(|(r, _)| r.is_ok()).collect();
    assert_eq!(winners.len(), 1, "{outcomes:?}");
    assert!(outcomes.iter().any(|(r, _)| *r == Err(true)));
    let stored = stored(&mut db.conn().await).await;
    assert_eq!(&stored, &winners[0].1);
}

#[flavour(test)]
async fn xmin_tracked_merge_and_batch_save() {
    let db = db!();
    let mut conn = seed(&db).await;
    let mut mine = Tracked::new(stored(&mut conn).await);
    let mut theirs = stored(&mut conn).await;
    theirs.body = "Their body".into();
    theirs.save_checked(&mut conn).await.unwrap();

    mine.edit().title = "My title".into();
    let log = StatementCounter::install_in_flavour(&mut conn);
    let outcome = mine.save_merging(&mut conn).await.expect("merge");
    assert!(matches!(outcome, SaveOutcome::Merged { .. }), "{outcome:?}");
    let last = log.take_sql().pop().unwrap();
    let writes_body = sql_only(&last).contains("\"body\"");
    assert!(!writes_body, "the merged save writes my field only: {last}");
    let stored = stored(&mut conn).await;
    let fields = (stored.title.as_str(), stored.body.as_str());
    assert_eq!(fields, ("My title", "Their body"));
    assert_eq!(mine.current(), &stored);

    let mut batch = [stored.clone()];
    batch[0].body = "Batch".into();
    batch.save_all_checked(&mut conn).await.unwrap();
    assert_eq!(batch[0].xmin, stored_xmin(&mut conn).await);
    let mut stale = [stored];
    let error = stale.save_all_checked(&mut conn).await.unwrap_err();
    let indices = error.as_batch_conflict().unwrap().indices();
    assert_eq!(indices.collect::<Vec<_>>(), [0]);
}

/// A generated token in a transaction that rolls back: the save inside it reads the
/// transaction's own `xmin` back, which no committed row will ever hold. The entity
/// gets the token it read back, so it saves while the row is unchanged and conflicts,
/// with the real current token, once another writer has saved.
#[flavour(test)]
async fn xmin_rolled_back_save_is_restored_then_conflicts() {
    let db = db!();
    let mut conn = seed(&db).await;
    let read = stored(&mut conn).await;
    let mut mine = read.clone();

    // 1. Saved inside a transaction that rolls back.
    mine.body = "Rolled back".into();
    let outcome = transaction(&mut conn, &mut mine, async |conn, mine| {
        mine.save_checked(conn).await?;
        assert_ne!(mine.xmin, read.xmin, "the transaction's own xmin");
        Err::<(), Error>(diesel::result::Error::RollbackTransaction.into())
    })
    .await;
    assert!(matches!(outcome, Err(Error::Database(_))), "{outcome:?}");
    assert_eq!(stored(&mut conn).await, read);
    assert_eq!(mine.xmin, read.xmin, "the token it read, restored");

    // The restored entity saves while nobody else wrote...
    let mut restored = mine.clone();
    let saved = restored.save_checked(&mut db.conn().await).await;
    saved.expect("the restored token matches the unchanged row");
    assert_eq!(restored.xmin, stored_xmin(&mut conn).await);

    // 2. ...and once another writer saved (here: the restored entity's own save), the
    // rolled-back entity's next save is a typed conflict that reports the row's token.
    let error = mine.save_checked(&mut conn).await.unwrap_err();
    let conflict = error.as_conflict().expect("a conflict");
    let current = restored.xmin.to_value();
    assert_eq!(conflict.state(), &ConflictState::Stale { current });
    assert_eq!(stored(&mut conn).await, restored, "their write stands");
}

#[flavour(test)]
async fn xmin_tracked_save_without_edits_still_checks_and_advances() {
    let db = db!();
    let mut conn = seed(&db).await;
    let mut tracked = Tracked::new(stored(&mut conn).await);
    let read = tracked.xmin;
    tracked.save_checked(&mut conn).await.expect("no edits");
    assert_ne!(tracked.xmin, read);
    assert_eq!(tracked.xmin, stored_xmin(&mut conn).await);
    let mut stale = Tracked::new(Document {
        xmin: read,
        ..tracked.current().clone()
    });
    let error = stale.save_checked(&mut conn).await.unwrap_err();
    assert!(error.is_conflict());
}
