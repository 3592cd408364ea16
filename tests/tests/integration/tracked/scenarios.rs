//! Tracked saves, three-way diffs and merges, in both flavours.

flavour_prelude!();

use diesel::prelude::*;
use diesel_occ::testing::Race;
use diesel_occ::{ConflictState, Fields, Prefer, SaveOutcome, Tracked};
use diesel_occ_tests::statements::{StatementCounter, sql_only};

use super::entities::{Article, Merging, expect_conflict};
use super::schema;

#[flavour]
async fn seed_article(db: &TestDb<Conn>) {
    let mut conn = db.conn().await;
    insert_rows!(&mut conn, schema::wiki_articles::table, Article::seed());
}

/// A connection of its own and the article read on it, tracked.
#[flavour]
async fn read_tracked(db: &TestDb<Conn>) -> (Conn, Tracked<Article>) {
    let mut conn = db.conn().await;
    let tracked = Tracked::new(article(&mut conn).await);
    (conn, tracked)
}

/// Seeds the article; returns a connection and the article read twice, tracked.
#[flavour]
async fn seeded(db: &TestDb<Conn>) -> (Conn, Tracked<Article>, Tracked<Article>) {
    seed_article(db).await;
    let (mut conn, mine) = read_tracked(db).await;
    let theirs = Tracked::new(article(&mut conn).await);
    (conn, mine, theirs)
}

fn names(fields: Fields<Article>) -> Vec<&'static str> {
    fields.names().collect()
}

#[flavour]
async fn article(conn: &mut Conn) -> Article {
    Article::find(conn, 1).await.expect("article row")
}

// ---- tracked saves ------------------------------------------------------------

#[flavour(test)]
async fn tracked_save_writes_only_the_edited_columns_in_one_statement() {
    let db = db!();
    let (mut conn, mut tracked, _) = seeded(&db).await;
    // Another writer changes `body` without touching the token: a full-row save would
    // overwrite it, a tracked save of `title` must not.
    raw_sql(&db, "UPDATE wiki_articles SET body = 'Bypass' WHERE id = 1").await;

    tracked.edit().title = "New title".into();
    assert_eq!(names(tracked.changed()), ["title"]);
    let log = StatementCounter::install_in_flavour(&mut conn);
    tracked.save_checked(&mut conn).await.expect("tracked save");
    let statements = log.take_sql();
    assert_eq!(statements.len(), 1, "one statement: {statements:?}");
    let sql = sql_only(&statements[0]);
    assert!(sql.contains("title"), "writes the edited column: {sql}");
    assert!(!sql.contains("body"), "not the others: {sql}");
    assert!(!sql.contains("summary"), "not the others: {sql}");

    assert_eq!(tracked.version, 2);
    let base = tracked.original();
    assert_eq!(base, tracked.current(), "saved values become the base");
    let stored = article(&mut conn).await;
    assert_eq!(stored.title, "New title");
    assert_eq!(stored.body, "Bypass", "the other write kept");
    assert_eq!(stored.version, 2);
}

#[flavour(test)]
async fn tracked_save_writes_none_as_null_and_conflicts_like_a_full_save() {
    let db = db!();
    let (mut conn, mut mine, mut theirs) = seeded(&db).await;

    theirs.edit().summary = None;
    theirs.save_checked(&mut conn).await.expect("their save");
    let summary = article(&mut conn).await.summary;
    assert_eq!(summary, None, "an edit to None is written");

    mine.edit().body = "Mine".into();
    let before = mine.clone();
    let conflict = expect_conflict(mine.save_checked(&mut conn).await);
    assert_eq!(conflict.current::<i32>(), Some(2));
    assert_eq!(conflict.expected::<i32>(), Some(1));
    assert_eq!(mine, before, "the tracked entity is untouched");
}

#[flavour(test)]
async fn three_way_diff_names_only_mine_only_theirs_and_both() {
    let db = db!();
    let (mut conn, mut mine, mut theirs) = seeded(&db).await;

    theirs.edit().body = "Their body".into();
    theirs.edit().summary = Some("Their summary".into());
    theirs.save_checked(&mut conn).await.expect("their save");

    mine.edit().title = "My title".into();
    mine.edit().summary = Some("My summary".into());
    expect_conflict(mine.save_checked(&mut conn).await);
    let current = mine.load_current(&mut conn).await.expect("current row");
    let diff = mine.three_way(&current);
    assert_eq!(names(diff.only_mine()), ["title"]);
    assert_eq!(names(diff.only_theirs()), ["body"]);
    assert_eq!(names(diff.both()), ["summary"]);
    assert_eq!(names(diff.conflicting()), ["summary"]);
    // Typed access to the three versions.
    assert_eq!(diff.base().summary.as_deref(), Some("Summary"));
    assert_eq!(diff.mine().summary.as_deref(), Some("My summary"));
    assert_eq!(diff.theirs().summary.as_deref(), Some("Their summary"));
    assert_eq!(diff.theirs().version, 2);
}

// ---- merge --------------------------------------------------------------------

/// Two tracked writers from one version, released by a barrier; writer 0 edits with
/// `edit(0)`, writer 1 with `edit(1)`; both `save_merging`.
#[flavour]
async fn race_tracked(
    db: &TestDb<Conn>,
    edit: impl Fn(usize, &mut Article) + Sync,
) -> Vec<Merging> {
    let report = Race::new(2)
        .run_in_flavour(
            async |_| read_tracked(db).await,
            async |writer, (mut conn, mut tracked): (Conn, Tracked<Article>)| {
                edit(writer, tracked.edit());
                let outcome = tracked.save_merging(&mut conn).await;
                (outcome, tracked)
            },
        )
        .await;
    report.into_values().unwrap()
}

#[flavour(test)]
async fn non_overlapping_edits_merge_and_both_survive() {
    let db = db!();
    seed_article(&db).await;
    let outcomes = race_tracked(&db, |writer, a| match writer {
        0 => a.title = "Title by 0".into(),
        _ => a.body = "Body by 1".into(),
    })
    .await;
    let saved = |(o, _): &&Merging| matches!(o, Ok(SaveOutcome::Saved));
    let merged: Vec<_> = outcomes
        .iter()
        .filter_map(|(o, t)| match o {
            Ok(SaveOutcome::Merged { theirs }) => Some((theirs, t)),
            _ => None,
        })
        .collect();
    let counts = (outcomes.iter().filter(saved).count(), merged.len());
    assert_eq!(counts, (1, 1), "one saved, one merged: {outcomes:?}");
    let (theirs, merger) = merged[0];
    assert_eq!(theirs.len(), 1, "the merger saw the other's one field");

    let stored = article(&mut db.conn().await).await;
    assert_eq!(stored.title, "Title by 0");
    assert_eq!(stored.body, "Body by 1");
    assert_eq!(stored.version, 3, "two writes");
    assert_eq!(merger.current(), &stored, "the merger holds the row");
}

#[flavour(test)]
async fn control_full_row_saves_lose_the_other_field() {
    // The same race with plain full-row writes and no token: both succeed and one edit
    // is overwritten with the stale value it was read with.
    let db = db!();
    seed_article(&db).await;
    let report = Race::new(2)
        .in_order()
        .run_in_flavour(
            async |_| {
                let mut conn = db.conn().await;
                let row = article(&mut conn).await;
                (conn, row)
            },
            async |writer, (mut conn, mut row): (Conn, Article)| {
                use schema::wiki_articles::{body, table, title};
                match writer {
                    0 => row.title = "Title by 0".into(),
                    _ => row.body = "Body by 1".into(),
                }
                let full_row = (title.eq(&row.title), body.eq(&row.body));
                let update = diesel::update(table.find(row.id)).set(full_row);
                update.execute(&mut conn).await.expect("plain update")
            },
        )
        .await;
    report.into_values().unwrap();
    let stored = article(&mut db.conn().await).await;
    assert_eq!(stored.body, "Body by 1");
    assert_eq!(stored.title, "Title", "writer 0's title was lost");
}

#[flavour(test)]
async fn overlapping_edits_return_both_values_and_write_nothing() {
    let db = db!();
    seed_article(&db).await;
    let outcomes = race_tracked(&db, |writer, a| {
        a.title = format!("Title by {writer}");
        if writer == 1 {
            a.body = "Body by 1".into();
        }
    })
    .await;
    let saved = |(o, _): &Merging| matches!(o, Ok(SaveOutcome::Saved));
    let winner = outcomes.iter().position(saved).expect("one writer saved");
    let loser = 1 - winner;
    let (outcome, tracked) = &outcomes[loser];
    let Ok(SaveOutcome::Overlap(overlap)) = outcome else {
        panic!("expected an overlap, got {outcome:?}");
    };
    assert_eq!(names(overlap.fields()), ["title"]);
    assert_eq!(overlap.mine().title, format!("Title by {loser}"));
    assert_eq!(overlap.theirs().title, format!("Title by {winner}"));
    assert_eq!(overlap.base().title, "Title");
    assert_eq!(tracked.version, 1, "the loser is untouched");
    let stored = article(&mut db.conn().await).await;
    assert_eq!(stored.title, format!("Title by {winner}"));
    assert_eq!(stored.version, 2, "only the winner wrote");
}

/// Writer 1 edits title and body, writer 0 the title only; writer 0 saves first (the
/// writers write in order), so writer 1 overlaps on `title` and resolves with `prefer`.
#[flavour]
async fn resolve_overlap(db: &TestDb<Conn>, prefer: Prefer) -> Article {
    seed_article(db).await;
    let report = Race::new(2)
        .in_order()
        .run_in_flavour(
            async |_| read_tracked(db).await,
            async |writer, (mut conn, mut tracked): (Conn, Tracked<Article>)| {
                if writer == 0 {
                    tracked.edit().title = "Title by 0".into();
                    let saved = tracked.save_checked(&mut conn).await;
                    saved.expect("writer 0 saves first");
                    return None;
                }
                // Writer 1 saves after writer 0 has committed.
                tracked.edit().title = "Title by 1".into();
                tracked.edit().body = "Body by 1".into();
                let Ok(SaveOutcome::Overlap(overlap)) = tracked.save_merging(&mut conn).await
                else {
                    panic!("expected an overlap");
                };
                tracked.rebase(overlap.into_theirs(), prefer);
                let resolved = tracked.save_checked(&mut conn).await;
                resolved.expect("resolved save");
                Some(tracked.into_inner())
            },
        )
        .await;
    let outcomes = report.into_values().unwrap();
    let resolved = outcomes.into_iter().flatten().next();
    let resolved = resolved.expect("writer 1 resolved");
    let stored = article(&mut db.conn().await).await;
    assert_eq!(stored, resolved, "the row holds the resolution");
    assert_eq!(stored.version, 3);
    stored
}

#[flavour(test)]
async fn overlap_resolved_client_wins() {
    let db = db!();
    let stored = resolve_overlap(&db, Prefer::Mine).await;
    assert_eq!(stored.title, "Title by 1");
    assert_eq!(stored.body, "Body by 1");
}

#[flavour(test)]
async fn overlap_resolved_store_wins() {
    let db = db!();
    let stored = resolve_overlap(&db, Prefer::Theirs).await;
    assert_eq!(stored.title, "Title by 0", "their title kept");
    assert_eq!(stored.body, "Body by 1", "my other edit kept");
}

#[flavour(test)]
async fn merged_save_can_conflict_again_and_a_deleted_row_is_reported() {
    let db = db!();
    let (mut conn, mut mine, other) = seeded(&db).await;
    let mut other = other.into_inner();
    other.body = "Other".into();
    other.save_checked(&mut conn).await.expect("other save");

    mine.edit().title = "Mine".into();
    expect_conflict(mine.save_checked(&mut conn).await);
    let current = mine.load_current(&mut conn).await.expect("current");
    let theirs = mine.merge(current).expect("no overlap");
    assert_eq!(names(theirs), ["body"]);
    assert_eq!(mine.version, 2, "rebased onto their token");
    // A third writer gets in between the merge and its save.
    let mut third = article(&mut conn).await;
    third.summary = None;
    third.save_checked(&mut conn).await.expect("third save");
    let conflict = expect_conflict(mine.save_checked(&mut conn).await);
    assert_eq!(conflict.expected::<i32>(), Some(2));
    assert_eq!(conflict.current::<i32>(), Some(3));

    // The row is deleted: save_merging reports the deleted conflict.
    let delete = diesel::delete(schema::wiki_articles::table);
    delete.execute(&mut conn).await.unwrap();
    let conflict = expect_conflict(mine.save_merging(&mut conn).await);
    assert_eq!(conflict.state(), &ConflictState::Deleted);
}
