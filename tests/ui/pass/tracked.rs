//! `#[occ(track)]`: `Tracking` with renamed columns, a composite key, `Option` fields
//! and skipped columns, used through `Tracked`.
use diesel::prelude::*;
use diesel_occ::prelude::*;
use diesel_occ::{Fields, Tracked, Tracking};

diesel::table! {
    notes (owner, note_no) {
        owner -> Integer,
        note_no -> Integer,
        note_text -> Text,
        tag -> Nullable<Text>,
        views -> Integer,
        rev -> BigInt,
    }
}

#[derive(Debug, Clone, PartialEq, Queryable, Selectable, Versioned)]
#[diesel(table_name = notes, primary_key(owner, note_no))]
#[occ(track)]
pub struct Note {
    pub owner: i32,
    pub note_no: i32,
    #[diesel(column_name = note_text)]
    pub text: String,
    pub tag: Option<String>,
    #[occ(skip)]
    pub views: i32,
    #[occ(version)]
    #[diesel(column_name = rev)]
    pub revision: i64,
}

fn main() {
    assert_eq!(Note::FIELDS, &["text", "tag"]);
    let note = Note {
        owner: 1,
        note_no: 2,
        text: "a".into(),
        tag: None,
        views: 0,
        revision: 1,
    };
    let mut tracked = Tracked::new(note);
    tracked.edit().tag = Some("b".into());
    tracked.edit().views = 3;
    assert_eq!(tracked.changed(), Fields::named("tag").unwrap());
    let _save = |conn: &mut SqliteConnection| TrackedDsl::save_checked(&mut tracked, conn);
}
