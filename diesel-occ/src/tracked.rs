//! Tracked entities: the values as read beside the values being edited, a save that
//! writes only what changed, and a three-way diff and merge after a conflict.

use std::fmt;
use std::marker::PhantomData;
use std::ops::Deref;

use crate::statement::VersionedParts;

/// An entity that can be [`Tracked`]: field-by-field comparison and copy, and a guarded
/// UPDATE of a chosen set of fields.
///
/// `#[derive(Versioned)]` implements it when the struct carries `#[occ(track)]`. Every
/// field a checked save writes (not the key, the token or `#[occ(skip)]` /
/// `#[diesel(skip_update)]` fields) must implement `PartialEq` and `Clone`; it is opt-in
/// so entities with a field that cannot be compared still derive [`Versioned`](crate::Versioned).
///
/// ```
/// # include!("tracked_doctest_setup.rs");
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
    /// written as NULL) and `fresh` as the token.
    fn fields_update_statement(
        &self,
        fields: Fields<Self>,
        fresh: &Self::Token,
    ) -> Self::FieldsUpdateStatement;
}

/// A set of an entity's tracked fields (a bit per entry of [`Tracking::FIELDS`]).
///
/// ```
/// # include!("tracked_doctest_setup.rs");
/// use diesel_occ::Fields;
///
/// # fn main() {
/// let title = Fields::<Article>::named("title").unwrap();
/// let both = title.union(Fields::named("body").unwrap());
/// assert_eq!(both.names().collect::<Vec<_>>(), ["title", "body"]);
/// assert!(both.contains("body"));
/// assert_eq!(both.difference(title).len(), 1);
/// assert!(Fields::<Article>::named("version").is_none()); // the token is not tracked
/// # }
/// ```
pub struct Fields<T> {
    bits: u64,
    entity: PhantomData<fn() -> T>,
}

impl<T: Tracking> Fields<T> {
    /// No field.
    pub fn none() -> Self {
        Self::from_bits(0)
    }

    /// Every tracked field (the first 64, for a hand-written [`Tracking`] with more:
    /// the derive refuses more than 64).
    pub fn all() -> Self {
        // The bits below bit `n`, or all of them when there is no bit `n`.
        Self::from_bits(bit(T::FIELDS.len()).map_or(u64::MAX, |b| b.wrapping_sub(1)))
    }

    /// The one field with this name, if it is tracked.
    pub fn named(name: &str) -> Option<Self> {
        let index = T::FIELDS.iter().position(|f| *f == name)?;
        Self::none().with_index(index).ok()
    }

    fn from_bits(bits: u64) -> Self {
        Fields {
            bits,
            entity: PhantomData,
        }
    }

    /// This set plus the field at `index` in [`Tracking::FIELDS`], or
    /// [`FieldIndexOutOfRange`] when there is no such field (or it is past the 64th,
    /// which a set cannot hold).
    ///
    /// ```
    /// # include!("tracked_doctest_setup.rs");
    /// use diesel_occ::Fields;
    ///
    /// # fn main() {
    /// // `Article::FIELDS` is `["title", "body"]`.
    /// let body = Fields::<Article>::none().with_index(1).unwrap();
    /// assert!(body.contains("body"));
    /// let error = Fields::<Article>::none().with_index(2).unwrap_err();
    /// assert_eq!((error.index(), error.field_count()), (2, 2));
    /// assert!(Fields::<Article>::none().with_index(64).is_err());
    /// # }
    /// ```
    pub fn with_index(self, index: usize) -> Result<Self, FieldIndexOutOfRange> {
        match bit(index) {
            Some(bit) if index < T::FIELDS.len() => Ok(Self::from_bits(self.bits | bit)),
            _ => Err(FieldIndexOutOfRange {
                index,
                field_count: T::FIELDS.len(),
            }),
        }
    }

    /// True when the field at `index` in [`Tracking::FIELDS`] is in the set (false for
    /// any index past the fields).
    pub fn contains_index(&self, index: usize) -> bool {
        bit(index).is_some_and(|bit| self.bits & bit != 0)
    }

    /// True when the field with this name is in the set.
    pub fn contains(&self, name: &str) -> bool {
        T::FIELDS
            .iter()
            .position(|f| *f == name)
            .is_some_and(|i| self.contains_index(i))
    }

    /// True when the set is empty.
    pub fn is_empty(&self) -> bool {
        self.bits == 0
    }

    /// How many fields are in the set.
    pub fn len(&self) -> usize {
        self.bits.count_ones() as usize
    }

    /// The names of the fields in the set, in declaration order.
    pub fn names(&self) -> impl Iterator<Item = &'static str> + '_ {
        T::FIELDS
            .iter()
            .enumerate()
            .filter(|(i, _)| self.contains_index(*i))
            .map(|(_, name)| *name)
    }

    /// Fields in either set.
    pub fn union(self, other: Self) -> Self {
        Self::from_bits(self.bits | other.bits)
    }

    /// Fields in both sets.
    pub fn intersection(self, other: Self) -> Self {
        Self::from_bits(self.bits & other.bits)
    }

    /// Fields in this set and not in `other`.
    pub fn difference(self, other: Self) -> Self {
        Self::from_bits(self.bits & !other.bits)
    }
}

/// The bit of the field at `index`; `None` past the 64th field.
fn bit(index: usize) -> Option<u64> {
    u32::try_from(index).ok().and_then(|i| 1_u64.checked_shl(i))
}

/// [`Fields::with_index`] was given an index past the entity's tracked fields, or past
/// the 64th.
///
/// ```
/// # include!("tracked_doctest_setup.rs");
/// use diesel_occ::Fields;
///
/// # fn main() {
/// let error = Fields::<Article>::none().with_index(7).unwrap_err();
/// assert_eq!(
///     error.to_string(),
///     "field index 7 is out of range: the entity tracks 2 fields, a set holds at most 64"
/// );
/// # }
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error(
    "field index {index} is out of range: the entity tracks {field_count} fields, a set holds at most 64"
)]
pub struct FieldIndexOutOfRange {
    index: usize,
    field_count: usize,
}

impl FieldIndexOutOfRange {
    /// The index that was asked for.
    pub fn index(&self) -> usize {
        self.index
    }

    /// How many fields the entity tracks ([`Tracking::FIELDS`]'s length).
    pub fn field_count(&self) -> usize {
        self.field_count
    }
}

impl<T> Clone for Fields<T> {
    fn clone(&self) -> Self {
        *self
    }
}

impl<T> Copy for Fields<T> {}

impl<T> PartialEq for Fields<T> {
    fn eq(&self, other: &Self) -> bool {
        self.bits == other.bits
    }
}

impl<T> Eq for Fields<T> {}

impl<T: Tracking> fmt::Debug for Fields<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_set().entries(self.names()).finish()
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
/// Bring [`TrackedDsl`](crate::TrackedDsl) into scope (it is in both preludes): without
/// it, `tracked.save_checked(..)` reaches the entity through `Deref` and runs its full
/// save, which writes every column and leaves the values as read behind.
///
/// ```
/// # include!("tracked_doctest_setup.rs");
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
    /// still checks the token and makes the database assign a new one).
    pub(crate) fn fields_to_write(&self) -> Fields<T> {
        let changed = self.changed();
        if changed.is_empty() && T::GENERATED_TOKEN {
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
/// # include!("tracked_doctest_setup.rs");
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
    base: &'a T,
    mine: &'a T,
    theirs: &'a T,
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
/// # include!("tracked_doctest_setup.rs");
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
    base: T,
    mine: T,
    theirs: T,
    fields: Fields<T>,
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
/// # include!("tracked_doctest_setup.rs");
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::versioned::Versioned;

    /// A hand-written `Tracking` with more fields than a set holds (the derive refuses
    /// more than 64), to reach every index edge.
    #[derive(Debug, Clone, PartialEq)]
    struct Wide;

    impl Versioned for Wide {
        type Table = ();
        type Token = i32;
        type Key = ();
        type UpdateStatement = ();
        type DeleteStatement = ();
        type TokenQuery = ();
        type FindQuery = ();
        const TABLE_NAME: &'static str = "wide";
        const TOKEN_COLUMN: &'static str = "version";
        const KEY_COLUMNS: &'static [&'static str] = &[];

        fn token(&self) -> &i32 {
            &1
        }
        fn set_token(&mut self, _: i32) {}
        fn key(&self) {}
        fn key_values(_: &()) -> Vec<String> {
            Vec::new()
        }
        fn update_statement(&self, _: &i32) {}
        fn delete_statement(&self) {}
        fn token_query(_: ()) {}
        fn find_query(_: ()) {}
    }

    impl VersionedParts for Wide {
        type TokenColumn = ();
        type Guarded = ();
        type TokenAssignment = ();
        const GENERATED_TOKEN: bool = false;

        fn guarded(&self) {}
        fn token_assignment(_: &i32) {}
    }

    impl Tracking for Wide {
        const FIELDS: &'static [&'static str] = &[
            "f0", "f1", "f2", "f3", "f4", "f5", "f6", "f7", "f8", "f9", "f10", "f11", "f12", "f13",
            "f14", "f15", "f16", "f17", "f18", "f19", "f20", "f21", "f22", "f23", "f24", "f25",
            "f26", "f27", "f28", "f29", "f30", "f31", "f32", "f33", "f34", "f35", "f36", "f37",
            "f38", "f39", "f40", "f41", "f42", "f43", "f44", "f45", "f46", "f47", "f48", "f49",
            "f50", "f51", "f52", "f53", "f54", "f55", "f56", "f57", "f58", "f59", "f60", "f61",
            "f62", "f63", "f64", "f65", "f66", "f67", "f68", "f69",
        ];
        type FieldsUpdateStatement = ();

        fn changed_from(&self, _: &Self) -> Fields<Self> {
            Fields::none()
        }
        fn copy_fields(&mut self, _: &Self, _: Fields<Self>) {}
        fn fields_update_statement(&self, _: Fields<Self>, _: &i32) {}
    }

    #[test]
    fn an_index_past_the_fields_or_the_64th_is_an_error() {
        let none = Fields::<Wide>::none();
        let last = none.with_index(63).unwrap();
        assert!(last.contains("f63"));
        assert_eq!(last.len(), 1);
        for index in [64, 69, 70, usize::MAX] {
            assert_eq!(
                none.with_index(index),
                Err(FieldIndexOutOfRange {
                    index,
                    field_count: 70
                }),
                "index {index}"
            );
            assert!(
                !Fields::<Wide>::all().contains_index(index),
                "index {index}"
            );
        }
        assert_eq!(Fields::<Wide>::all().len(), 64);
        assert!(Fields::<Wide>::named("f64").is_none());
        assert!(!Fields::<Wide>::all().contains("f64"));
    }
}
