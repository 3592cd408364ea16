//! What a three-way comparison finds and how a merge resolves it: [`ThreeWay`], [`Overlap`], [`Prefer`] and [`SaveOutcome`].

use super::*;

/// Which side keeps an overlapping field in [`Tracked::rebase`]: see [`Overlap`] for
/// an example.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Prefer {
    /// Client wins: every edited field keeps my value.
    Mine,
    /// Store wins: a field both sides changed keeps the value in the database; my
    /// other edits are kept.
    Theirs,
}

/// A field-level comparison of the values as read (base), my edits and the row as it
/// is now (theirs), borrowed from a [`Tracked`] entity: see [`Tracked::three_way`].
///
/// The values themselves stay typed: read them from [`base`](Self::base),
/// [`mine`](Self::mine) and [`theirs`](Self::theirs).
///
/// ```
/// # include!(concat!(env!("CARGO_MANIFEST_DIR"), "/src/doctest_setup.rs"));
/// use diesel_occ::Tracked;
/// use diesel_occ::prelude::*;
///
/// # fn main() -> Result<(), diesel_occ::Error> {
/// let mut conn = connection();
/// let mut mine = Tracked::new(Article::find(&mut conn, 1)?);
/// let mut theirs = Article::find(&mut conn, 1)?;
/// theirs.title = "Their title".into();
/// theirs.body = "Their body".into();
/// theirs.save_checked(&mut conn)?;
///
/// mine.edit().title = "My title".into();
/// let current = mine.load_current(&mut conn)?;
/// let diff = mine.three_way(&current);
/// assert!(diff.only_mine().is_empty());
/// assert_eq!(diff.only_theirs().names().collect::<Vec<_>>(), ["body"]);
/// assert_eq!(diff.conflicting().names().collect::<Vec<_>>(), ["title"]);
/// assert_eq!(
///     (diff.base().title.as_str(), diff.mine().title.as_str(), diff.theirs().title.as_str()),
///     ("Title", "My title", "Their title")
/// );
/// # Ok(())
/// # }
/// ```
#[derive(Debug)]
pub struct ThreeWay<'a, T> {
    pub(super) base: &'a T,
    pub(super) mine: &'a T,
    pub(super) theirs: &'a T,
}

impl<'a, T: Tracking> ThreeWay<'a, T> {
    /// The values as read.
    pub fn base(&self) -> &'a T {
        self.base
    }

    /// My edited values.
    pub fn mine(&self) -> &'a T {
        self.mine
    }

    /// The row as it is now.
    pub fn theirs(&self) -> &'a T {
        self.theirs
    }

    /// Fields I changed.
    pub fn mine_changed(&self) -> Fields<T> {
        self.mine.changed_from(self.base)
    }

    /// Fields they changed.
    pub fn theirs_changed(&self) -> Fields<T> {
        self.theirs.changed_from(self.base)
    }

    /// Fields only I changed.
    pub fn only_mine(&self) -> Fields<T> {
        self.mine_changed().difference(self.theirs_changed())
    }

    /// Fields only they changed.
    pub fn only_theirs(&self) -> Fields<T> {
        self.theirs_changed().difference(self.mine_changed())
    }

    /// Fields we both changed (to the same value or not).
    pub fn both(&self) -> Fields<T> {
        self.mine_changed().intersection(self.theirs_changed())
    }

    /// Fields we both changed, to different values: what blocks a merge.
    pub fn conflicting(&self) -> Fields<T> {
        self.both()
            .intersection(self.mine.changed_from(self.theirs))
    }
}

/// Edits that overlap the row's current state: fields both sides changed to different
/// values. Holds the three versions, typed, so the caller can decide (client wins,
/// store wins, or show both to the user).
///
/// ```
/// # include!(concat!(env!("CARGO_MANIFEST_DIR"), "/src/doctest_setup.rs"));
/// use diesel_occ::prelude::*;
/// use diesel_occ::{Prefer, SaveOutcome, Tracked};
///
/// # fn main() -> Result<(), diesel_occ::Error> {
/// let mut conn = connection();
/// let mut mine = Tracked::new(Article::find(&mut conn, 1)?);
/// let mut theirs = Article::find(&mut conn, 1)?;
/// theirs.title = "Their title".into();
/// theirs.save_checked(&mut conn)?;
///
/// mine.edit().title = "My title".into();
/// mine.edit().body = "My body".into();
/// let SaveOutcome::Overlap(overlap) = mine.save_merging(&mut conn)? else {
///     unreachable!("both changed the title");
/// };
/// assert_eq!(overlap.fields().names().collect::<Vec<_>>(), ["title"]);
/// assert_eq!(overlap.mine().title, "My title");
/// assert_eq!(overlap.theirs().title, "Their title");
///
/// // Store wins on the title, my body edit is kept; saved with their token.
/// mine.rebase(overlap.into_theirs(), Prefer::Theirs);
/// mine.save_checked(&mut conn)?;
/// let stored = Article::find(&mut conn, 1)?;
/// assert_eq!((stored.title.as_str(), stored.body.as_str()), ("Their title", "My body"));
/// # Ok(())
/// # }
/// ```
#[derive(Debug, Clone)]
pub struct Overlap<T: Tracking> {
    pub(super) base: T,
    pub(super) mine: T,
    pub(super) theirs: T,
    pub(super) fields: Fields<T>,
}

impl<T: Tracking> Overlap<T> {
    /// The fields both sides changed to different values.
    pub fn fields(&self) -> Fields<T> {
        self.fields
    }

    /// The values as read.
    pub fn base(&self) -> &T {
        &self.base
    }

    /// My edited values.
    pub fn mine(&self) -> &T {
        &self.mine
    }

    /// The row as it is now.
    pub fn theirs(&self) -> &T {
        &self.theirs
    }

    /// The row as it is now, to [`rebase`](Tracked::rebase) onto.
    pub fn into_theirs(self) -> T {
        self.theirs
    }
}

/// What [`TrackedDsl::save_merging`](crate::TrackedDsl::save_merging) did.
///
/// ```
/// # include!(concat!(env!("CARGO_MANIFEST_DIR"), "/src/doctest_setup.rs"));
/// use diesel_occ::prelude::*;
/// use diesel_occ::{SaveOutcome, Tracked};
///
/// # fn main() -> Result<(), diesel_occ::Error> {
/// let mut conn = connection();
/// let mut article = Tracked::new(Article::find(&mut conn, 1)?);
/// article.edit().body = "Edited".into();
/// match article.save_merging(&mut conn)? {
///     SaveOutcome::Saved => {}
///     SaveOutcome::Merged { theirs } => println!("merged over {theirs:?}"),
///     SaveOutcome::Overlap(overlap) => println!("ask the user about {:?}", overlap.fields()),
/// }
/// assert_eq!(article.version, 2);
/// # Ok(())
/// # }
/// ```
#[derive(Debug, Clone)]
#[must_use]
pub enum SaveOutcome<T: Tracking> {
    /// Saved at once: nobody else had written the row.
    Saved,
    /// Somebody had written the row, on other fields: the edits were applied on top
    /// of their values and saved with their token. Carries the fields they changed.
    Merged {
        /// The fields the other writer changed, now part of the entity.
        theirs: Fields<T>,
    },
    /// Somebody changed some of the same fields to other values: nothing was written,
    /// the tracked entity is as it was. The caller decides.
    Overlap(Overlap<T>),
}
