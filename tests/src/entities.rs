//! The test entities that many subjects share, declared once: a subject declares its
//! own only for a table or shape no other subject uses.
//!
//! Their tables are the same on every backend ([`crate::schema::counters`],
//! [`crate::schema::accounts`], [`crate::schema::stamped`],
//! [`crate::schema::wiki_articles`]), so one declaration serves the blocking and async
//! scenarios of all three.

use chrono::NaiveDateTime;
use diesel::{Insertable, Queryable, Selectable};
use diesel_occ::Versioned;

/// A row of `counters`: an integer token, and a `label` that whole writes keep equal to
/// `value` as text ([`Counter::increment`]), so a torn write shows
/// ([`Counter::assert_whole`]). Tracked (`#[occ(track)]`) for the subjects that save
/// only edited columns.
#[derive(Debug, Clone, PartialEq, Queryable, Selectable, Insertable, Versioned)]
#[diesel(table_name = crate::schema::counters)]
#[occ(track)]
pub struct Counter {
    /// The key.
    pub id: i32,
    /// What the writers change.
    pub value: i32,
    /// `value` as text after a whole write; NULL in a row that none has written.
    pub label: Option<String>,
    /// The token.
    #[occ(version)]
    pub version: i32,
}

impl Counter {
    /// A row as seeded before any write: `value`, no label, token 1.
    pub fn new(id: i32, value: i32) -> Self {
        Self {
            id,
            value,
            label: None,
            version: 1,
        }
    }

    /// A row as `value` whole writes from zero leave it: labelled, token `value + 1`.
    pub fn whole(id: i32, value: i32) -> Self {
        Self {
            id,
            value,
            label: Some(value.to_string()),
            version: value + 1,
        }
    }

    /// One whole write's edit: `value` up by one, `label` with it.
    pub fn increment(&mut self) {
        self.value += 1;
        self.label = Some(self.value.to_string());
    }

    /// Asserts the row was written only by whole writes, each advancing the token by
    /// one from [`Counter::whole`]'s start.
    ///
    /// # Panics
    ///
    /// When `label` is not `value` as text, or the token is not `value + 1`.
    pub fn assert_whole(&self) {
        assert_eq!(
            self.label.as_deref(),
            Some(self.value.to_string().as_str()),
            "value and label come from one write: {self:?}"
        );
        assert_eq!(
            self.version,
            self.value + 1,
            "one token step per write: {self:?}"
        );
    }
}

/// A row of `accounts`: an integer token and a soft-delete flag.
#[derive(Debug, Clone, PartialEq, Queryable, Selectable, Insertable, Versioned)]
#[diesel(table_name = crate::schema::accounts)]
pub struct Account {
    /// The key.
    pub id: i32,
    /// What the writers change.
    pub balance: i32,
    /// Set by a soft delete.
    pub deleted: bool,
    /// The token.
    #[occ(version)]
    pub version: i32,
}

impl Account {
    /// An account as inserted: `balance`, not deleted, token 1.
    pub fn new(id: i32, balance: i32) -> Self {
        Self {
            id,
            balance,
            deleted: false,
            version: 1,
        }
    }
}

/// A row of `stamped`: a timestamp token the library assigns from the clock.
#[derive(Debug, Clone, PartialEq, Queryable, Selectable, Insertable, Versioned)]
#[diesel(table_name = crate::schema::stamped)]
pub struct Stamped {
    /// The key.
    pub id: i32,
    /// What the writers change.
    pub value: i32,
    /// The token.
    #[occ(version)]
    pub updated_at: NaiveDateTime,
}

/// A row of `wiki_articles`, tracked, with a column (`views`) that atomic SQL keeps and
/// checked saves never write (`#[occ(skip)]`).
#[derive(Debug, Clone, PartialEq, Queryable, Selectable, Insertable, Versioned)]
#[diesel(table_name = crate::schema::wiki_articles)]
#[occ(track)]
pub struct Article {
    /// The key.
    pub id: i32,
    /// A column the writers edit.
    pub title: String,
    /// Another.
    pub body: String,
    /// A nullable one.
    pub summary: Option<String>,
    /// Maintained by atomic SQL elsewhere: never written by a checked save.
    #[occ(skip)]
    pub views: i32,
    /// The token.
    #[occ(version)]
    pub version: i32,
}

impl Article {
    /// Article 1 as the scenarios seed it: "Title", "Body", "Summary", no views, token 1.
    pub fn seed() -> Self {
        Article {
            id: 1,
            title: "Title".into(),
            body: "Body".into(),
            summary: Some("Summary".into()),
            views: 0,
            version: 1,
        }
    }
}
