//! Tracked entities: the values as read beside the values being edited, a save that
//! writes only what changed, and a three-way diff and merge after a conflict.

use std::ops::Deref;

use crate::token::{TokenKind, VersionToken};
use crate::versioned::VersionedParts;

/// An entity that can be [`Tracked`]: field-by-field comparison and copy, and a guarded
/// UPDATE of a chosen set of fields.
///
/// `#[derive(Versioned)]` implements it when the struct carries `#[occ(track)]`. Every
/// field a checked save writes (not the key, the token or `#[occ(skip)]` /
/// `#[diesel(skip_update)]` fields) must implement `PartialEq` and `Clone`; it is opt-in
/// so entities with a field that cannot be compared still derive [`Versioned`](crate::Versioned).
///
/// ```
/// # include!(concat!(env!("CARGO_MANIFEST_DIR"), "/src/doctest_setup.rs"));
/// use diesel_occ::Tracking;
///
/// # fn main() {
/// // `#[occ(track)] struct Article { id, title, body, #[occ(version)] version }`
/// assert_eq!(Article::FIELDS, &["title", "body"]);
/// # }
/// ```
pub trait Tracking: VersionedParts {
    /// The names of the fields a tracked save can write, in declaration order.
    const FIELDS: &'static [&'static str];

    /// `UPDATE t SET <some fields>, token = <fresh> WHERE <key> AND token = <original>`.
    type FieldsUpdateStatement;

    /// The fields whose value differs from `original`'s.
    fn changed_from(&self, original: &Self) -> Fields<Self>;

    /// Copies these fields' values from `from`.
    fn copy_fields(&mut self, from: &Self, fields: Fields<Self>);

    /// The guarded UPDATE writing exactly `fields` (each with its current value, `None`
    /// written as NULL) and `fresh` as the token. `original` is the entity as read: an
    /// entity without a version column (`#[occ(check)]`) is guarded by its check
    /// columns' values there; a token entity's own token is the original one already.
    fn fields_update_statement(
        &self,
        original: &Self,
        fields: Fields<Self>,
        fresh: &Self::Token,
    ) -> Self::FieldsUpdateStatement;

    /// The token a write guarded by this entity's values expects, for the conflict:
    /// its token, or for an entity without a version column its check columns' values
    /// (which [`token`](crate::Versioned::token) cannot lend). Not public API.
    #[doc(hidden)]
    fn expected_token(&self) -> Self::Token {
        self.token().clone()
    }
}

/// An entity with the values as read kept beside the values being edited.
///
/// It derefs to the edited entity. Its checked save
/// ([`TrackedDsl::save_checked`](crate::TrackedDsl::save_checked), or the async twin)
/// writes only the fields that differ from the values as read, plus a fresh token, in
/// one statement (with nothing edited: the token alone, or for a database-generated
/// token every tracked field unchanged, so the row still gets a new one); after a
/// conflict, [`three_way`](Self::three_way) compares the read
/// values, the edits and the row as it is now field by field, and
/// [`merge`](Self::merge) rebases the edits onto the current row when they do not
/// overlap.
///
/// Its tracked saves come from [`TrackedDsl`](crate::TrackedDsl), in both preludes.
/// `Tracked` derefs to the entity for reading only, and [`edit`](Self::edit) gives it
/// for writing: so no method of the entity that writes (a full `save_checked`) is ever
/// reached through `Deref` in its place, whichever traits are in scope.
///
/// ```
/// # include!(concat!(env!("CARGO_MANIFEST_DIR"), "/src/doctest_setup.rs"));
/// use diesel_occ::prelude::*;
/// use diesel_occ::{SaveOutcome, Tracked};
///
/// # fn main() -> Result<(), diesel_occ::Error> {
/// let mut conn = connection();
/// let mut mine = Tracked::new(Article::find(&mut conn, 1)?);
/// let mut theirs = Tracked::new(Article::find(&mut conn, 1)?);
///
/// theirs.edit().body = "Their body".into();
/// theirs.save_checked(&mut conn)?; // UPDATE article SET body = ?, version = 2 WHERE ...
///
/// mine.edit().title = "My title".into();
/// assert_eq!(mine.changed().names().collect::<Vec<_>>(), ["title"]);
/// // Conflict: the edits do not overlap, so they are applied on top of the current
/// // row and saved with its token.
/// match mine.save_merging(&mut conn)? {
///     SaveOutcome::Merged { theirs } => assert!(theirs.contains("body")),
///     other => panic!("expected a merge, got {other:?}"),
/// }
/// let stored = Article::find(&mut conn, 1)?;
/// assert_eq!((stored.title.as_str(), stored.body.as_str()), ("My title", "Their body"));
/// assert_eq!(stored.version, 3);
/// # Ok(())
/// # }
/// ```
#[derive(Debug, Clone, PartialEq)]
pub struct Tracked<T> {
    original: T,
    current: T,
}

impl<T: Tracking + Clone> Tracked<T> {
    /// Starts tracking an entity as read.
    pub fn new(entity: T) -> Self {
        Tracked {
            original: entity.clone(),
            current: entity,
        }
    }

    /// The values as read (or as last saved).
    pub fn original(&self) -> &T {
        &self.original
    }

    /// The edited entity.
    pub fn current(&self) -> &T {
        &self.current
    }

    /// The entity, for editing: the edits are what [`changed`](Self::changed) reports
    /// and what a tracked save writes.
    ///
    /// `Tracked` derefs to the entity for reading but not for writing, so that a
    /// method of the entity that writes (a full `save_checked`, say) cannot be reached
    /// through it by accident: `tracked.save_checked(conn)` is always the tracked save.
    pub fn edit(&mut self) -> &mut T {
        &mut self.current
    }

    /// The edited entity, without the values as read.
    pub fn into_inner(self) -> T {
        self.current
    }

    /// The fields edited since the values were read.
    pub fn changed(&self) -> Fields<T> {
        self.current.changed_from(&self.original)
    }

    /// True when no field was edited.
    pub fn is_unchanged(&self) -> bool {
        self.changed().is_empty()
    }

    /// Compares the values as read (base), the edits (mine) and `theirs`, the row as
    /// it is now (see [`TrackedDsl::load_current`](crate::TrackedDsl::load_current)).
    pub fn three_way<'a>(&'a self, theirs: &'a T) -> ThreeWay<'a, T> {
        ThreeWay {
            base: &self.original,
            mine: &self.current,
            theirs,
        }
    }

    /// Rebases the edits onto `theirs` when they do not overlap: the values as read
    /// become `theirs` (its token included) and the edited fields are applied on top,
    /// so the next save writes exactly the edits, guarded by their token.
    ///
    /// When a field was changed on both sides to different values, nothing changes
    /// and the overlap is returned for the caller to decide
    /// ([`rebase`](Self::rebase) with [`Prefer::Mine`] or [`Prefer::Theirs`], or ask).
    pub fn merge(&mut self, theirs: T) -> Result<Fields<T>, Overlap<T>> {
        let diff = self.three_way(&theirs);
        let conflicting = diff.conflicting();
        let only_theirs = diff.only_theirs();
        if !conflicting.is_empty() {
            return Err(Overlap {
                base: self.original.clone(),
                mine: self.current.clone(),
                theirs,
                fields: conflicting,
            });
        }
        self.rebase(theirs, Prefer::Mine);
        Ok(only_theirs)
    }

    /// Rebases the edits onto `theirs` whatever the overlap: the values as read become
    /// `theirs`, and each edited field keeps my value, except that with
    /// [`Prefer::Theirs`] a field they changed too keeps theirs.
    pub fn rebase(&mut self, theirs: T, prefer: Prefer) {
        let diff = self.three_way(&theirs);
        let keep = match prefer {
            Prefer::Mine => diff.mine_changed(),
            Prefer::Theirs => diff.only_mine(),
        };
        let mut rebased = theirs.clone();
        rebased.copy_fields(&self.current, keep);
        self.original = theirs;
        self.current = rebased;
    }

    /// What a tracked save writes: the edited fields. With nothing edited, an
    /// application-assigned token is written alone; a generated token has no assignment
    /// to write, so every tracked field is written with its unchanged value (the UPDATE
    /// still checks the token and makes the database assign a new one), and so is an
    /// entity without a version column (the UPDATE still checks its check columns).
    pub(crate) fn fields_to_write(&self) -> Fields<T> {
        let changed = self.changed();
        let no_token_assignment =
            T::GENERATED_TOKEN || <T::Token as VersionToken>::KIND == TokenKind::Columns;
        if changed.is_empty() && no_token_assignment {
            Fields::all()
        } else {
            changed
        }
    }

    /// After the transaction of a save rolled back: the values as read are those of
    /// before it again, and the edited entity takes their token.
    pub(crate) fn restore_original(&mut self, original: T) {
        self.current.set_token(original.token().clone());
        self.original = original;
    }

    /// After a successful save: the saved values become the values as read.
    pub(crate) fn saved(&mut self, token: T::Token) {
        self.current.set_token(token);
        self.original = self.current.clone();
    }
}

impl<T> Deref for Tracked<T> {
    type Target = T;

    fn deref(&self) -> &T {
        &self.current
    }
}

mod fields;
mod merge;
#[cfg(test)]
mod tests;

pub use fields::{FieldIndexOutOfRange, Fields};
pub use merge::{Overlap, Prefer, SaveOutcome, ThreeWay};
