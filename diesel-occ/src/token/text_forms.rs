//! [`TimestampText`]: the texts a timestamp token may be stored as on SQLite. Always
//! compiled: [`VersionToken::text_forms`](super::VersionToken::text_forms) and the
//! guarded write's predicate name it whatever timestamp crates are on.

/// Which texts in a SQLite column a timestamp token matches: every text that SQLite's
/// date functions read and that Diesel reads back as exactly this token, whatever its
/// form (`T` or a space, a fraction of any length, seconds or none, `Z` or an offset).
/// [`TokenEq`](crate::statement::TokenEq) compares the text's whole seconds, through
/// `strftime`, and its fraction, as text, with these. Not public API.
#[doc(hidden)]
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TimestampText {
    /// The token's whole seconds, `%Y-%m-%d %H:%M:%S`.
    pub(crate) seconds: String,
    /// Its fraction of a second without trailing zeros (`.25`), empty for none.
    pub(crate) fraction: String,
    /// Whether a UTC offset in the text moves the instant, as Diesel reads a
    /// `DateTime<Utc>` or an `OffsetDateTime`; a `NaiveDateTime` or a
    /// `PrimitiveDateTime` is read as the clock time written, offset ignored.
    pub(crate) applies_offset: bool,
}

impl TimestampText {
    /// The texts of a token whose whole seconds read `seconds` (`%Y-%m-%d %H:%M:%S`)
    /// and whose fraction is `nanos` nanoseconds.
    #[cfg(any(feature = "chrono", feature = "time"))]
    pub(super) fn new(seconds: String, nanos: u32, applies_offset: bool) -> Self {
        let nanos = format!("{nanos:09}");
        let digits = nanos.trim_end_matches('0');
        TimestampText {
            seconds,
            fraction: if digits.is_empty() {
                String::new()
            } else {
                format!(".{digits}")
            },
            applies_offset,
        }
    }
}

/// The texts a check column's value (`#[occ(check)]`) matches on SQLite, as for a token
/// ([`VersionToken::text_forms`](super::VersionToken::text_forms)): `Some` for a timestamp
/// a token can be (chrono's `NaiveDateTime` and `DateTime<Utc>`, time's
/// `PrimitiveDateTime` and `OffsetDateTime`, with their features) or a `Some` of one,
/// `None` for any other value, which is compared as it is. The derive names the field's
/// type, which is no generic parameter, so the type alone decides. Not public API.
#[doc(hidden)]
pub fn check_text_forms<T: 'static>(value: &T) -> Option<TimestampText> {
    #[allow(unused_variables)]
    let value: &dyn std::any::Any = value;
    /// Returns the forms of `value` when it is one of `$ty` or an `Option` of one.
    #[allow(unused_macros)]
    macro_rules! forms_of {
        ($($ty:ty),*) => {$(
            if let Some(t) = value.downcast_ref::<$ty>() {
                return super::VersionToken::text_forms(t);
            }
            if let Some(t) = value.downcast_ref::<Option<$ty>>() {
                return t.as_ref().and_then(super::VersionToken::text_forms);
            }
        )*};
    }
    #[cfg(feature = "chrono")]
    forms_of!(chrono::NaiveDateTime, chrono::DateTime<chrono::Utc>);
    #[cfg(feature = "time")]
    forms_of!(time::PrimitiveDateTime, time::OffsetDateTime);
    None
}
