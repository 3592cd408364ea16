//! The entities of the skipped-column scenarios, shared by both flavours of `scenarios.rs`.

use diesel::prelude::{Queryable, Selectable};
use diesel_occ::Versioned;

use super::schema;

pub(super) use diesel_occ_tests::entities::Article;

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
