//! [`Fields`]: a set of an entity's tracked fields, by index and by name.

use std::fmt;
use std::marker::PhantomData;

use super::*;

/// A set of an entity's tracked fields (a bit per entry of [`Tracking::FIELDS`]).
///
/// ```
/// # include!(concat!(env!("CARGO_MANIFEST_DIR"), "/src/doctest_setup.rs"));
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
    /// # include!(concat!(env!("CARGO_MANIFEST_DIR"), "/src/doctest_setup.rs"));
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
/// # include!(concat!(env!("CARGO_MANIFEST_DIR"), "/src/doctest_setup.rs"));
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
    pub(super) index: usize,
    pub(super) field_count: usize,
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
