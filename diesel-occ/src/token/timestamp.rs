//! Timestamp tokens of any date-time crate: a fresh token strictly after the old one at
//! the column's precision. The arithmetic runs on microseconds since the Unix epoch, so
//! chrono's and time's tokens advance exactly alike.

use super::{InvalidToken, InvalidTokenReason, TimestampText};

/// The finest precision PostgreSQL and MariaDB keep: microseconds.
pub(super) const MAX_PRECISION: u8 = 6;

/// A date-time type a timestamp token can be: the few conversions the token arithmetic
/// needs. Implemented for chrono's and time's types, with their features.
pub(crate) trait Timestamp: Copy + Sized {
    /// The clock, in UTC.
    fn now() -> Self;
    /// Microseconds since the Unix epoch, rounded down (nanoseconds dropped).
    fn micros(self) -> i64;
    /// The value `micros` microseconds after the epoch; `None` outside the type's range.
    fn from_micros(micros: i64) -> Option<Self>;
    /// The whole seconds as SQLite's `strftime('%Y-%m-%d %H:%M:%S')` writes them, in UTC
    /// for a type with an offset.
    fn seconds_text(self) -> String;
    /// The nanoseconds past the whole second.
    fn subsec_nanos(self) -> u32;
}

/// One step at `precision` fractional digits, in microseconds: 1 s, 100 ms, ..., 1 µs
/// (and 1 µs past 6).
pub(crate) fn step_micros(precision: u8) -> i64 {
    10_i64.pow(u32::from(MAX_PRECISION.saturating_sub(precision)))
}

/// `micros` rounded down to a multiple of `unit`, before the epoch too (where a
/// truncation would round towards zero, upwards).
fn floor_micros(micros: i64, unit: i64) -> i64 {
    // `rem_euclid` is in `0..unit`: the difference leaves i64 only within a step of
    // its minimum, far outside every date-time type's range.
    micros.saturating_sub(micros.rem_euclid(unit))
}

/// `t` rounded down to a multiple of one step at `precision`; `t` itself in the unlikely
/// case the floor lies before the type's range.
pub(super) fn floor_at<T: Timestamp>(t: T, precision: u8) -> T {
    T::from_micros(floor_micros(t.micros(), step_micros(precision))).unwrap_or(t)
}

/// `now` at `precision` fractional digits, and strictly after `old` at that precision:
/// a multiple of the column's unit, so the column stores it exactly and it never
/// rounds or truncates back onto `old`. `None` when no such value exists: `old` is in
/// the last step of the type's range.
pub(super) fn fresh_timestamp<T: Timestamp>(old: T, now: T, precision: u8) -> Option<T> {
    let unit = step_micros(precision.min(MAX_PRECISION));
    let next = floor_micros(old.micros(), unit).checked_add(unit)?;
    T::from_micros(floor_micros(now.micros(), unit).max(next))
}

/// [`fresh_timestamp`] from now, or the out-of-range error.
pub(super) fn try_fresh_timestamp<T: Timestamp>(old: T, precision: u8) -> Result<T, InvalidToken> {
    fresh_timestamp(old, T::now(), precision)
        .ok_or(InvalidToken::new(InvalidTokenReason::OutOfRange))
}

/// [`fresh_timestamp`] from now; at the end of the type's range, where nothing is later
/// than `old`, now (see [`VersionToken::next_token_at`](super::VersionToken::next_token_at)).
pub(super) fn next_timestamp<T: Timestamp>(old: T, precision: u8) -> T {
    let now = T::now();
    fresh_timestamp(old, now, precision)
        .unwrap_or_else(|| floor_at(now, precision.min(MAX_PRECISION)))
}

/// A timestamp token is valid when a fresh token can follow it at every precision:
/// the whole-second step, the coarsest, exists.
pub(super) fn validate_timestamp<T: Timestamp>(t: T) -> Result<(), InvalidToken> {
    fresh_timestamp(t, t, 0)
        .map(|_| ())
        .ok_or(InvalidToken::new(InvalidTokenReason::OutOfRange))
}

/// A token for a new row: now, at microseconds.
// Microseconds, not whole seconds: a bulk update advances a timestamp token to
// `initial()`, which must differ from a token written earlier in the same second.
pub(super) fn initial_timestamp<T: Timestamp>() -> T {
    floor_at(T::now(), MAX_PRECISION)
}

/// The clock at `precision` fractional digits (at most microseconds), rounded down.
pub(crate) fn clock_at<T: Timestamp>(precision: u8) -> T {
    floor_at(T::now(), precision.min(MAX_PRECISION))
}

/// The texts SQLite may hold `t` as; `applies_offset` as [`TimestampText`] says.
pub(super) fn text_forms<T: Timestamp>(t: T, applies_offset: bool) -> TimestampText {
    TimestampText::new(t.seconds_text(), t.subsec_nanos(), applies_offset)
}

/// `VersionToken` for a timestamp type: every method delegates to this module's generic
/// functions, so the four timestamp types differ only in what the call says: whether
/// Diesel applies an offset it reads (`applies_offset`, for the SQLite text forms), the
/// `TokenValue` variant and how the value is stored in it, and how client text parses.
macro_rules! timestamp_token {
    (
        $(#[$attr:meta])*
        $ty:ty {
            applies_offset: $offset:literal,
            value: $variant:ident($stored:expr),
            decode: $decode:expr $(,)?
        }
    ) => {
        $(#[$attr])*
        ///
        /// The writer's clock at the column's precision, after the old token. After a
        /// failover that lost commits it differs from the lost token when made at
        /// another tick; see
        /// [which kind where a failover can happen](VersionToken#which-kind-where-a-failover-can-happen).
        impl VersionToken for $ty {
            const KIND: TokenKind = TokenKind::Timestamp;

            /// Now, at microseconds.
            fn initial() -> Self {
                initial_timestamp()
            }

            fn initial_at(precision: u8) -> Self {
                $crate::token::timestamp::clock_at(precision)
            }

            fn next_token(&self) -> Self {
                self.next_token_at(0)
            }

            fn next_token_at(&self, precision: u8) -> Self {
                next_timestamp(*self, precision)
            }

            fn try_next_token_at(&self, precision: u8) -> Result<Self, InvalidToken> {
                try_fresh_timestamp(*self, precision)
            }

            fn text_forms(&self) -> Option<TimestampText> {
                Some(text_forms(*self, $offset))
            }

            fn to_value(&self) -> TokenValue {
                TokenValue::$variant(($stored)(*self))
            }

            fn from_value(value: &TokenValue) -> Option<Self> {
                match value {
                    TokenValue::$variant(t) => Some(*t),
                    _ => None,
                }
            }

            fn validate(&self) -> Result<(), InvalidToken> {
                validate_timestamp(*self)
            }

            fn decode(text: &str) -> Result<Self, InvalidToken> {
                let token: Self = ($decode)(checked_text(text)?)?;
                token.validate()?;
                Ok(token)
            }
        }
    };
}
pub(super) use timestamp_token;
