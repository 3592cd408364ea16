//! The entities of the tracked-save scenarios, shared by both flavours of `scenarios.rs`.

use diesel::prelude::{Insertable, Queryable, Selectable};
use diesel_occ::{ConcurrencyConflict, Error, SaveOutcome, Tracked, Versioned};

use super::schema;

#[derive(Debug, Clone, PartialEq, Queryable, Selectable, Insertable, Versioned)]
#[diesel(table_name = schema::wiki_articles)]
#[occ(track)]
pub(super) struct Article {
    pub(super) id: i32,
    pub(super) title: String,
    pub(super) body: String,
    pub(super) summary: Option<String>,
    /// Maintained by atomic SQL elsewhere: never written by a checked save.
    #[occ(skip)]
    pub(super) views: i32,
    #[occ(version)]
    pub(super) version: i32,
}

pub(super) fn expect_conflict<T: std::fmt::Debug>(result: Result<T, Error>) -> ConcurrencyConflict {
    match result {
        Err(Error::Conflict(conflict)) => conflict,
        other => panic!("expected a concurrency conflict, got {other:?}"),
    }
}

pub(super) type Merging = (Result<SaveOutcome<Article>, Error>, Tracked<Article>);
