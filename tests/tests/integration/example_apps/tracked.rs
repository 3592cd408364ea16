//! A tracked save of the edited columns, and a three-way merge on conflict.

use diesel::prelude::*;
use diesel_occ::prelude::*;
use diesel_occ_examples::schema::articles;

use super::super::assert_told;
use super::app_backend::Pool;
use super::app_backend::tracked::{self, Article, Edit};
use super::{Conn, app_backend};

fn article(pool: &Pool) -> Article {
    let mut conn = pool.get().unwrap();
    tracked::create(&mut conn, "a-1", "Draft", "First version.").unwrap()
}

fn stored(pool: &Pool) -> Article {
    Article::find(&mut pool.get().unwrap(), "a-1".to_owned()).unwrap()
}

#[test]
fn an_unconflicted_save_writes_only_the_edited_columns() {
    let (_db, pool) = app_db!();
    let read = article(&pool);
    let mut conn = pool.get().unwrap();
    let mut draft = tracked::open(&mut conn, "a-1").unwrap();
    // A writer that bypasses the protocol changes the body and keeps the token:
    // a full save would overwrite it, a tracked save of the title does not.
    diesel::update(articles::table.find("a-1"))
        .set(articles::body.eq("Changed behind our back."))
        .execute(&mut conn)
        .unwrap();
    draft.edit().title = "Final".into();
    assert_eq!(tracked::save(&mut conn, &mut draft).unwrap(), Edit::Saved);
    let now = stored(&pool);
    assert_eq!([now.title, now.body], ["Final", "Changed behind our back."]);
    assert_ne!(now.version, read.version, "a fresh token");
    // The draft holds the token it wrote.
    assert_eq!(now.version, draft.version);
}

#[test]
fn edits_to_different_fields_merge() {
    let (_db, pool) = app_db!();
    article(&pool);
    let mut conn = pool.get().unwrap();
    let mut alice = tracked::open(&mut conn, "a-1").unwrap();
    let mut bob = tracked::open(&mut conn, "a-1").unwrap();
    bob.edit().body = "Bob's body.".into();
    assert_eq!(tracked::save(&mut conn, &mut bob).unwrap(), Edit::Saved);
    alice.edit().title = "Alice's title".into();
    let merged = tracked::save(&mut conn, &mut alice).unwrap();
    let theirs = vec!["body"];
    assert_eq!(merged, Edit::Merged { theirs });
    let now = stored(&pool);
    assert_eq!([now.title, now.body], ["Alice's title", "Bob's body."]);
    assert_eq!(now.version, alice.version);
    // The merge's save advanced the token again.
    assert_ne!(now.version, bob.version);
}

#[test]
fn overlapping_edits_keep_theirs_for_the_overlap_only() {
    let (_db, pool) = app_db!();
    article(&pool);
    let mut conn = pool.get().unwrap();
    let mut carol = tracked::open(&mut conn, "a-1").unwrap();
    let mut dave = tracked::open(&mut conn, "a-1").unwrap();
    dave.edit().title = "Dave's title".into();
    tracked::save(&mut conn, &mut dave).unwrap();
    carol.edit().title = "Carol's title".into();
    carol.edit().body = "Carol's body.".into();
    let kept = tracked::save(&mut conn, &mut carol).unwrap();
    let overlap = vec!["title"];
    assert_eq!(kept, Edit::KeptTheirs { overlap });
    let now = stored(&pool);
    assert_eq!([now.title, now.body], ["Dave's title", "Carol's body."]);
}

#[test]
fn a_deleted_article_is_a_conflict() {
    let (_db, pool) = app_db!();
    article(&pool);
    let mut conn = pool.get().unwrap();
    let mut draft = tracked::open(&mut conn, "a-1").unwrap();
    let row = articles::table.find("a-1");
    diesel::delete(row).execute(&mut conn).unwrap();
    draft.edit().title = "Too late".into();
    let saved = tracked::save(&mut conn, &mut draft);
    assert_matches!(saved, Err(diesel_occ::Error::Conflict(conflict)) if conflict.is_deleted());
}

#[test]
fn walkthrough_tells_the_whole_story() {
    let (_db, pool) = app_db!();
    let mut out = Vec::new();
    tracked::walkthrough(&pool, &mut out).unwrap();
    let told = [
        "-> Merged { theirs: [\"body\"] }",
        "stored: \"Optimistic locking\" / \"Second version, by bob.\"",
        "-> KeptTheirs { overlap: [\"title\"] }",
        "stored: \"Optimistic concurrency\" / \"Third version, by carol.\"",
    ];
    assert_told(out, &told);
}
