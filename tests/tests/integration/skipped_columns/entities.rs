//! The entities of the skipped-column scenarios, shared by both flavours of `scenarios.rs`.

use diesel::prelude::{Insertable, Queryable, Selectable};
use diesel_occ::Versioned;

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

/// The same table, with Diesel's own way of keeping a column out of saves.
#[derive(Debug, Clone, PartialEq, Queryable, Selectable, Versioned)]
#[diesel(table_name = schema::wiki_articles)]
pub(super) struct ArticleSkipUpdate {
    pub(super) id: i32,
    pub(super) title: String,
    pub(super) body: String,
    pub(super) summary: Option<String>,
    #[diesel(skip_update)]
    pub(super) views: i32,
    #[occ(version)]
    pub(super) version: i32,
}
