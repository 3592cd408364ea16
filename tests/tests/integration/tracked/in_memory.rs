//! The tracked entity's logic without a database: field sets, three-way
//! classification, merge and rebase.

use diesel::prelude::*;
use diesel_occ::{Fields, Prefer, Tracked};

diesel::table! {
    notes (id) {
        id -> Integer,
        title -> Text,
        body -> Text,
        tag -> Nullable<Text>,
        version -> Integer,
    }
}

#[derive(Debug, Clone, PartialEq, Queryable, Selectable, diesel_occ::Versioned)]
#[diesel(table_name = notes)]
#[occ(track)]
struct Note {
    id: i32,
    title: String,
    body: String,
    tag: Option<String>,
    #[occ(version)]
    version: i32,
}

fn note() -> Note {
    let (title, body) = ("t".into(), "b".into());
    Note {
        id: 1,
        title,
        body,
        tag: None,
        version: 1,
    }
}

fn names(fields: Fields<Note>) -> Vec<&'static str> {
    fields.names().collect()
}

/// Title, body and token: what a merge or rebase decides.
fn decided(note: &Note) -> (&str, &str, i32) {
    (&note.title, &note.body, note.version)
}

#[test]
fn field_sets() {
    assert_eq!(names(Fields::all()), ["title", "body", "tag"]);
    assert!(Fields::<Note>::none().is_empty());
    let shown = format!("{:?}", Fields::<Note>::all());
    assert_eq!(shown, r#"{"title", "body", "tag"}"#);
    assert!(!Fields::<Note>::named("tag").unwrap().contains("title"));
}

#[test]
fn the_same_edit_on_both_sides_is_not_an_overlap() {
    let mut mine = Tracked::new(note());
    mine.edit().tag = Some("x".into());
    mine.edit().title = "mine".into();
    let mut theirs = note();
    theirs.tag = Some("x".into());
    theirs.body = "theirs".into();
    theirs.version = 2;
    let diff = mine.three_way(&theirs);
    assert_eq!(names(diff.both()), ["tag"]);
    assert!(diff.conflicting().is_empty());

    let only_theirs = mine.merge(theirs.clone()).expect("no overlap");
    assert_eq!(names(only_theirs), ["body"]);
    assert_eq!(mine.original(), &theirs, "rebased onto theirs");
    assert_eq!(decided(&mine), ("mine", "theirs", 2));
    let left = names(mine.changed());
    assert_eq!(left, ["title"], "only my edit is left to write");
}

#[test]
fn overlap_leaves_the_tracked_entity_alone_and_rebase_picks_a_side() {
    let mut mine = Tracked::new(note());
    mine.edit().title = "mine".into();
    mine.edit().body = "my body".into();
    let mut theirs = note();
    theirs.title = "theirs".into();
    theirs.version = 2;
    let before = mine.clone();
    let overlap = mine.merge(theirs.clone()).unwrap_err();
    assert_eq!(names(overlap.fields()), ["title"]);
    assert_eq!(mine, before);

    let mut client_wins = mine.clone();
    client_wins.rebase(theirs.clone(), Prefer::Mine);
    assert_eq!(decided(&client_wins), ("mine", "my body", 2));
    let mut store_wins = mine;
    store_wins.rebase(theirs, Prefer::Theirs);
    assert_eq!(decided(&store_wins), ("theirs", "my body", 2));
    assert_eq!(names(store_wins.changed()), ["body"]);
}

#[test]
fn nothing_edited_means_no_changed_field() {
    let tracked = Tracked::new(note());
    assert!(tracked.is_unchanged());
    assert!(tracked.changed().is_empty());
}
