//! A tracked save and a three-way merge: two editors change the same article.
//!
//! An editor loads the article and wraps it in [`Tracked`], which keeps the values as
//! read beside the edited ones; edits go through [`Tracked::edit`]. Its save writes only the columns that were edited,
//! guarded by the token that was read:
//! `UPDATE articles SET title = ?, version = <fresh> WHERE id = ? AND version = <read>`.
//!
//! When another editor saved first, [`save_merging`](TrackedDsl::save_merging) loads the
//! row as it is now and compares three versions of each field: as read (base), mine
//! and theirs. Edits to different fields are merged and saved once more with their
//! token ([`SaveOutcome::Merged`]); a field both editors changed to different values is
//! an [`Overlap`](diesel_occ::Overlap) that nothing overwrites: the caller decides,
//! here by keeping their value for that field ([`Prefer::Theirs`]) and the rest of mine.

use std::io::Write;

use diesel::prelude::*;
use diesel_occ::prelude::*;
use diesel_occ::{Error as OccError, Prefer, SaveOutcome, Tracked, UuidToken};

use super::{Conn, Pool};
use crate::repository::Repository;
use crate::schema::articles;

/// Articles are created and read through this repository; the tracked saves are the
/// checked writes of [`Tracked`] itself.
const ARTICLES: Repository<Article> = Repository::new();

/// An article, as its editors see it. `#[occ(track)]` lets [`Tracked`] compare fields.
#[derive(Debug, Clone, PartialEq, Queryable, Selectable, Insertable, Versioned)]
#[diesel(table_name = articles)]
#[occ(track)]
pub struct Article {
    /// The key.
    pub id: String,
    /// The title.
    pub title: String,
    /// The text.
    pub body: String,
    /// The concurrency token.
    #[occ(version)]
    pub version: UuidToken,
}

/// A new article: the row without its token, which the repository's create adds.
#[derive(Debug, Insertable)]
#[diesel(table_name = articles)]
struct NewArticle<'a> {
    id: &'a str,
    title: &'a str,
    body: &'a str,
}

/// How an editor's save ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Edit {
    /// Nobody else had written: the edited columns were saved.
    Saved,
    /// Somebody had written other fields: mine were applied on top of theirs and saved.
    Merged {
        /// The fields the other editor had changed.
        theirs: Vec<&'static str>,
    },
    /// Somebody had changed some of the same fields: their values were kept for those,
    /// mine for the others, and the result saved.
    KeptTheirs {
        /// The fields both editors changed.
        overlap: Vec<&'static str>,
    },
}

/// Adds an article.
pub fn create(conn: &mut Conn, id: &str, title: &str, body: &str) -> Result<Article, OccError> {
    let version = ARTICLES.create_from(conn, NewArticle { id, title, body })?;
    Ok(Article {
        id: id.to_owned(),
        title: title.to_owned(),
        body: body.to_owned(),
        version,
    })
}

/// Loads an article for editing.
pub fn open(conn: &mut Conn, id: &str) -> Result<Tracked<Article>, OccError> {
    Ok(Tracked::new(ARTICLES.get(conn, id.to_owned())?))
}

/// Saves an editor's changes: only the edited columns, guarded by the token that was
/// read; on a conflict, merged with the row as it is now and saved again. A deleted
/// article, or a second conflict during the merge's save, is the error.
pub fn save(conn: &mut Conn, draft: &mut Tracked<Article>) -> Result<Edit, OccError> {
    match draft.save_merging(conn)? {
        SaveOutcome::Saved => Ok(Edit::Saved),
        SaveOutcome::Merged { theirs } => Ok(Edit::Merged {
            theirs: theirs.names().collect(),
        }),
        SaveOutcome::Overlap(overlap) => {
            let fields = overlap.fields().names().collect();
            draft.rebase(overlap.into_theirs(), Prefer::Theirs);
            draft.save_checked(conn)?;
            Ok(Edit::KeptTheirs { overlap: fields })
        }
    }
}

/// Empties the articles table.
pub fn reset(conn: &mut Conn) -> QueryResult<()> {
    diesel::delete(articles::table).execute(conn).map(drop)
}

/// The walkthrough: edits to different fields merge; edits to the same field do not.
pub fn walkthrough(pool: &Pool, out: &mut dyn Write) -> crate::AppResult {
    let mut conn = pool.get()?;
    reset(&mut conn)?;
    create(&mut conn, "a-1", "Draft", "First version.")?;

    let mut alice = open(&mut conn, "a-1")?;
    let mut bob = open(&mut conn, "a-1")?;
    writeln!(out, "  alice and bob open \"Draft\"")?;
    bob.edit().body = "Second version, by bob.".into();
    let edit = save(&mut conn, &mut bob)?;
    writeln!(out, "  {:<40} -> {edit:?}", "bob edits the body and saves")?;
    alice.edit().title = "Optimistic locking".into();
    let edit = save(&mut conn, &mut alice)?;
    writeln!(
        out,
        "  {:<40} -> {edit:?}",
        "alice edits the title and saves"
    )?;
    let stored = ARTICLES.get(&mut conn, "a-1".to_owned())?;
    writeln!(out, "  stored: {:?} / {:?}", stored.title, stored.body)?;

    let mut carol = open(&mut conn, "a-1")?;
    let mut dave = open(&mut conn, "a-1")?;
    dave.edit().title = "Optimistic concurrency".into();
    save(&mut conn, &mut dave)?;
    carol.edit().title = "Versioned rows".into();
    carol.edit().body = "Third version, by carol.".into();
    let edit = save(&mut conn, &mut carol)?;
    writeln!(
        out,
        "  {:<40} -> {edit:?}",
        "dave saves a title; carol edits both"
    )?;
    let stored = ARTICLES.get(&mut conn, "a-1".to_owned())?;
    writeln!(out, "  stored: {:?} / {:?}", stored.title, stored.body)?;
    Ok(())
}
