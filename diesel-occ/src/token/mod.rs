//! Concurrency tokens: what may be one, how a fresh one is made, how one is written
//! out for a client (an ETag, a form field) and read back.

use std::fmt;

use chrono::{DateTime, NaiveDateTime, SubsecRound, TimeDelta, Utc};
use uuid::Uuid;

use crate::error::{InvalidToken, InvalidTokenReason};

pub(crate) mod uuid_token;

/// Longest encoded token accepted from a client; every token this crate issues is shorter.
pub const MAX_ENCODED_LEN: usize = 64;

/// A type that can be a concurrency token.
///
/// Only equality matters: a checked write succeeds when the row still holds the token
/// that was read, and always stores a fresh one that differs from it.
///
/// | type | fresh token | client form |
/// |---|---|---|
/// | `i16`, `i32`, `i64` | old + 1, wrapping | decimal |
/// | [`uuid::Uuid`], [`UuidToken`](crate::UuidToken) | random v4, never nil | hyphenated |
/// | [`NaiveDateTime`], [`DateTime<Utc>`] | now at the column's precision, strictly after the old one | RFC 3339 |
///
/// A timestamp token advances at whole seconds unless the entity declares how many
/// fractional digits its column stores (`#[occ(version, precision = 6)]`): a whole-second
/// token is stored exactly by every `DATETIME`, `TIMESTAMP(n)` and text column, so a fresh
/// token can never be rounded back onto the old one and let a stale writer match. On
/// SQLite, which stores timestamps as text, a guarded write matches every text form
/// Diesel reads back as the token (`T` or space, any fraction digits, `Z` or `+00:00`),
/// so rows written by other tools save.
///
/// ```
/// use diesel_occ::VersionToken;
///
/// assert_eq!(i16::MAX.next_token(), i16::MIN);
/// assert_eq!(i64::decode("42").unwrap(), 42);
/// assert!(uuid::Uuid::decode("00000000-0000-0000-0000-000000000000").is_err());
/// ```
#[diagnostic::on_unimplemented(
    message = "`{Self}` cannot be a concurrency token",
    label = "not a concurrency token type",
    note = "a token is i16, i32, i64, uuid::Uuid, diesel_occ::UuidToken, chrono::NaiveDateTime or chrono::DateTime<Utc>"
)]
pub trait VersionToken: Clone + PartialEq + fmt::Debug + Send + Sync + 'static {
    /// A token for a new row.
    fn initial() -> Self;

    /// A fresh token that differs from `self` at every precision the database may store:
    /// for timestamps, [`next_token_at(0)`](Self::next_token_at), whole seconds.
    fn next_token(&self) -> Self;

    /// A fresh token for a column that stores `precision` fractional digits of a second
    /// (0 to 6; larger values count as 6). Only timestamps use the precision: the fresh
    /// token is a multiple of `10^-precision` seconds, strictly after `self` at that
    /// precision, so the column stores it exactly and it never equals the old token.
    ///
    /// ```
    /// use chrono::NaiveDateTime;
    /// use diesel_occ::VersionToken;
    ///
    /// // A token from a clock that runs ahead: the fresh one is the next millisecond.
    /// let old = "2999-01-01T00:00:00.123".parse::<NaiveDateTime>().unwrap();
    /// assert_eq!(old.next_token_at(3).to_string(), "2999-01-01 00:00:00.124");
    /// assert_eq!(old.next_token_at(0).to_string(), "2999-01-01 00:00:01");
    /// assert_eq!(41_i32.next_token_at(0), 42);
    /// ```
    ///
    /// A timestamp in the last second of chrono's range has no later value: there the
    /// result is now, earlier than `self`. The checked operations use
    /// [`try_next_token_at`](Self::try_next_token_at), which refuses such a token.
    fn next_token_at(&self, precision: u8) -> Self {
        let _ = precision;
        self.next_token()
    }

    /// [`next_token_at`](Self::next_token_at), or [`InvalidTokenReason::OutOfRange`]
    /// for a token no fresh one can follow (a timestamp in the last second of chrono's
    /// range). Counters wrap and UUIDs are random: for them it never fails.
    ///
    /// ```
    /// use chrono::NaiveDateTime;
    /// use diesel_occ::{InvalidTokenReason, VersionToken};
    ///
    /// let end = NaiveDateTime::MAX;
    /// assert_eq!(end.try_next_token_at(6).unwrap_err().reason, InvalidTokenReason::OutOfRange);
    /// assert_eq!(i16::MAX.try_next_token_at(0), Ok(i16::MIN));
    /// ```
    fn try_next_token_at(&self, precision: u8) -> Result<Self, InvalidToken> {
        Ok(self.next_token_at(precision))
    }

    /// The other text forms SQLite may hold this token in and Diesel reads back as
    /// exactly this token (for timestamps: `T` for the space, other fraction digits, a
    /// `Z` or `+00:00` suffix), which a guarded write on SQLite also matches. Empty for
    /// tokens with one form.
    #[doc(hidden)]
    fn text_forms(&self) -> Vec<String> {
        Vec::new()
    }

    /// What kind of column holds this token, for
    /// [`SchemaCheck`](crate::schema_check::SchemaCheck).
    const KIND: TokenKind = TokenKind::Other;

    /// The token as an untyped value, for errors and logs.
    fn to_value(&self) -> TokenValue;

    /// The typed token back from an untyped value, if it is of this kind.
    fn from_value(value: &TokenValue) -> Option<Self>;

    /// Rejects values that can never be valid tokens: the nil UUID, and a timestamp no
    /// fresh token can follow (see [`try_next_token_at`](Self::try_next_token_at)).
    fn validate(&self) -> Result<(), InvalidToken> {
        Ok(())
    }

    /// The token as text for a client: an ETag's content or a form field.
    fn encode(&self) -> String {
        self.to_value().to_string()
    }

    /// Reads a token a client sent back; empty, oversized, malformed, nil and
    /// [out-of-range](InvalidTokenReason::OutOfRange) tokens are typed errors.
    fn decode(text: &str) -> Result<Self, InvalidToken>;
}

/// The kind of column a token needs, as [`VersionToken::KIND`] says and
/// [`SchemaCheck`](crate::schema_check::SchemaCheck) verifies.
///
/// ```
/// use diesel_occ::{TokenKind, VersionToken};
///
/// assert_eq!(<i64 as VersionToken>::KIND, TokenKind::BigInt);
/// assert_eq!(<chrono::NaiveDateTime as VersionToken>::KIND, TokenKind::Timestamp);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum TokenKind {
    /// A 16-bit integer column (`SMALLINT`).
    SmallInt,
    /// A 32-bit integer column (`INTEGER`, `INT`).
    Integer,
    /// A 64-bit integer column (`BIGINT`).
    BigInt,
    /// A UUID: PostgreSQL `uuid`, or 16 bytes (`BINARY(16)`, `BLOB`) for
    /// [`UuidToken`](crate::UuidToken) elsewhere.
    Uuid,
    /// A date and time (`TIMESTAMP`, `DATETIME`, SQLite text).
    Timestamp,
    /// Anything else: not checked.
    Other,
}

impl fmt::Display for TokenKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            TokenKind::SmallInt => "a 16-bit integer",
            TokenKind::Integer => "a 32-bit integer",
            TokenKind::BigInt => "a 64-bit integer",
            TokenKind::Uuid => "a UUID",
            TokenKind::Timestamp => "a timestamp",
            TokenKind::Other => "a token",
        })
    }
}

/// A token of any kind, for errors and logs.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum TokenValue {
    /// An integer counter.
    Integer(i64),
    /// A UUID.
    Uuid(Uuid),
    /// A timestamp without time zone.
    Timestamp(NaiveDateTime),
    /// A UTC timestamp.
    TimestampUtc(DateTime<Utc>),
}

impl fmt::Display for TokenValue {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            TokenValue::Integer(n) => write!(f, "{n}"),
            TokenValue::Uuid(u) => write!(f, "{}", u.hyphenated()),
            TokenValue::Timestamp(t) => write!(f, "{}", t.format(NAIVE_FORMAT)),
            TokenValue::TimestampUtc(t) => write!(f, "{}", t.format(UTC_FORMAT)),
        }
    }
}

const NAIVE_FORMAT: &str = "%Y-%m-%dT%H:%M:%S%.6f";
const UTC_FORMAT: &str = "%Y-%m-%dT%H:%M:%S%.6fZ";

/// Common checks on client text before it is parsed.
fn checked_text(text: &str) -> Result<&str, InvalidToken> {
    if text.len() > MAX_ENCODED_LEN {
        return Err(InvalidToken::new(InvalidTokenReason::TooLong));
    }
    let text = text.trim();
    if text.is_empty() {
        return Err(InvalidToken::new(InvalidTokenReason::Empty));
    }
    Ok(text)
}

fn malformed() -> InvalidToken {
    InvalidToken::new(InvalidTokenReason::Malformed)
}

macro_rules! integer_token {
    ($($int:ty => $kind:ident),*) => {$(
        impl VersionToken for $int {
            const KIND: TokenKind = TokenKind::$kind;

            fn initial() -> Self {
                1
            }

            fn next_token(&self) -> Self {
                self.wrapping_add(1)
            }

            fn to_value(&self) -> TokenValue {
                TokenValue::Integer(i64::from(*self))
            }

            fn from_value(value: &TokenValue) -> Option<Self> {
                match value {
                    TokenValue::Integer(n) => <$int>::try_from(*n).ok(),
                    _ => None,
                }
            }

            fn decode(text: &str) -> Result<Self, InvalidToken> {
                let text = checked_text(text)?;
                // `parse` would accept a leading `+`; a token has one spelling.
                if text.starts_with('+') {
                    return Err(malformed());
                }
                text.parse().map_err(|_| malformed())
            }
        }
    )*};
}

integer_token!(i16 => SmallInt, i32 => Integer, i64 => BigInt);

impl VersionToken for Uuid {
    const KIND: TokenKind = TokenKind::Uuid;

    fn initial() -> Self {
        Uuid::new_v4()
    }

    fn next_token(&self) -> Self {
        // A v4 UUID is never nil; redraw in the astronomically unlikely case of a repeat.
        let mut fresh = Uuid::new_v4();
        while fresh == *self {
            fresh = Uuid::new_v4();
        }
        fresh
    }

    fn to_value(&self) -> TokenValue {
        TokenValue::Uuid(*self)
    }

    fn from_value(value: &TokenValue) -> Option<Self> {
        match value {
            TokenValue::Uuid(u) => Some(*u),
            _ => None,
        }
    }

    fn validate(&self) -> Result<(), InvalidToken> {
        if self.is_nil() {
            Err(InvalidToken::new(InvalidTokenReason::Nil))
        } else {
            Ok(())
        }
    }

    fn decode(text: &str) -> Result<Self, InvalidToken> {
        let uuid = Uuid::try_parse(checked_text(text)?).map_err(|_| malformed())?;
        uuid.validate()?;
        Ok(uuid)
    }
}

/// The finest precision PostgreSQL and MariaDB keep: microseconds.
const MAX_PRECISION: u8 = 6;

/// One step at `precision` fractional digits: 1 s, 100 ms, ..., 1 µs (and 1 µs past 6).
fn unit(precision: u8) -> TimeDelta {
    TimeDelta::microseconds(10_i64.pow(u32::from(MAX_PRECISION.saturating_sub(precision))))
}

/// `t` rounded down to a multiple of [`unit`]`(precision)`, before the epoch too (where
/// chrono's truncation would round towards zero, upwards).
fn floor_at(t: NaiveDateTime, precision: u8) -> NaiveDateTime {
    let unit = unit(precision).num_microseconds().unwrap_or(1);
    let micros = t.and_utc().timestamp_micros();
    micros
        .checked_sub(micros.rem_euclid(unit))
        .and_then(DateTime::from_timestamp_micros)
        .map_or(t.trunc_subsecs(u16::from(precision)), |d| d.naive_utc())
}

/// `now` at `precision` fractional digits, and strictly after `old` at that precision:
/// a multiple of the column's unit, so the column stores it exactly and it never
/// rounds or truncates back onto `old`. `None` when no such value exists: `old` is in
/// the last step of chrono's range.
fn fresh_timestamp(old: NaiveDateTime, now: NaiveDateTime, precision: u8) -> Option<NaiveDateTime> {
    let precision = precision.min(MAX_PRECISION);
    let floor = floor_at(old, precision).checked_add_signed(unit(precision))?;
    Some(floor_at(now, precision).max(floor))
}

/// [`fresh_timestamp`] from now, or the out-of-range error.
fn try_fresh_timestamp(old: NaiveDateTime, precision: u8) -> Result<NaiveDateTime, InvalidToken> {
    fresh_timestamp(old, Utc::now().naive_utc(), precision)
        .ok_or(InvalidToken::new(InvalidTokenReason::OutOfRange))
}

/// [`fresh_timestamp`] from now; at the end of chrono's range, where nothing is later
/// than `old`, now (see [`VersionToken::next_token_at`]).
fn next_timestamp(old: NaiveDateTime, precision: u8) -> NaiveDateTime {
    let now = Utc::now().naive_utc();
    fresh_timestamp(old, now, precision)
        .unwrap_or_else(|| floor_at(now, precision.min(MAX_PRECISION)))
}

/// A timestamp token is valid when a fresh token can follow it at every precision:
/// the whole-second step, the coarsest, exists.
fn validate_timestamp(t: NaiveDateTime) -> Result<(), InvalidToken> {
    fresh_timestamp(t, t, 0)
        .map(|_| ())
        .ok_or(InvalidToken::new(InvalidTokenReason::OutOfRange))
}

/// The clock at `precision` fractional digits (at most microseconds), rounded down.
pub(crate) fn clock_at(precision: u8) -> NaiveDateTime {
    floor_at(Utc::now().naive_utc(), precision.min(MAX_PRECISION))
}

/// One step at `precision` fractional digits (at most microseconds), in microseconds.
pub(crate) fn step_micros(precision: u8) -> i64 {
    unit(precision.min(MAX_PRECISION))
        .num_microseconds()
        .unwrap_or(1)
}

/// The text forms of `t` that SQLite's date functions accept and Diesel reads back as
/// exactly `t`, with the given suffixes, except Diesel's own (`%F %T%.f`, no suffix).
fn text_forms(t: NaiveDateTime, suffixes: &[&str], own: &str) -> Vec<String> {
    let nanos = t.and_utc().timestamp_subsec_nanos();
    let digits = format!("{nanos:09}");
    let mut fractions = vec![
        t.format("%.f").to_string(),
        format!(".{digits}"),
        format!(".{}", digits.trim_end_matches('0')),
    ];
    if let Some(micros) = digits.get(..6).filter(|_| nanos % 1_000 == 0) {
        fractions.push(format!(".{micros}"));
    }
    if let Some(millis) = digits.get(..3).filter(|_| nanos % 1_000_000 == 0) {
        fractions.push(format!(".{millis}"));
    }
    if nanos == 0 {
        fractions.push(String::new());
    }
    let date = t.format("%F");
    let mut times: Vec<String> = fractions
        .iter()
        .filter(|fraction| fraction.as_str() != ".")
        .map(|fraction| format!("{}{fraction}", t.format("%T")))
        .collect();
    if nanos == 0 && t.format("%S").to_string() == "00" {
        times.push(t.format("%R").to_string());
    }
    let mut forms = Vec::new();
    for separator in [' ', 'T'] {
        for time in &times {
            for suffix in suffixes {
                let form = format!("{date}{separator}{time}{suffix}");
                if form != own && !forms.contains(&form) {
                    forms.push(form);
                }
            }
        }
    }
    forms
}

impl VersionToken for NaiveDateTime {
    const KIND: TokenKind = TokenKind::Timestamp;

    /// Now, at microseconds.
    // Microseconds, not whole seconds: a bulk update advances a timestamp token to
    // `initial()`, which must differ from a token written earlier in the same second.
    fn initial() -> Self {
        floor_at(Utc::now().naive_utc(), MAX_PRECISION)
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

    // Diesel reads a naive timestamp with an offset by ignoring the offset.
    fn text_forms(&self) -> Vec<String> {
        let own = self.format("%F %T%.f").to_string();
        text_forms(*self, &["", "Z", "+00:00"], &own)
    }

    fn to_value(&self) -> TokenValue {
        TokenValue::Timestamp(*self)
    }

    fn from_value(value: &TokenValue) -> Option<Self> {
        match value {
            TokenValue::Timestamp(t) => Some(*t),
            _ => None,
        }
    }

    fn validate(&self) -> Result<(), InvalidToken> {
        validate_timestamp(*self)
    }

    fn decode(text: &str) -> Result<Self, InvalidToken> {
        let token = NaiveDateTime::parse_from_str(checked_text(text)?, NAIVE_FORMAT)
            .map_err(|_| malformed())?;
        token.validate()?;
        Ok(token)
    }
}

impl VersionToken for DateTime<Utc> {
    const KIND: TokenKind = TokenKind::Timestamp;

    /// Now, at microseconds (see `NaiveDateTime`'s).
    fn initial() -> Self {
        floor_at(Utc::now().naive_utc(), MAX_PRECISION).and_utc()
    }

    fn next_token(&self) -> Self {
        self.next_token_at(0)
    }

    fn next_token_at(&self, precision: u8) -> Self {
        next_timestamp(self.naive_utc(), precision).and_utc()
    }

    fn try_next_token_at(&self, precision: u8) -> Result<Self, InvalidToken> {
        try_fresh_timestamp(self.naive_utc(), precision).map(|t| t.and_utc())
    }

    // Diesel writes `+00:00` and reads any offset, applying it; UTC forms only.
    fn text_forms(&self) -> Vec<String> {
        let own = self.format("%F %T%.f+00:00").to_string();
        text_forms(self.naive_utc(), &["Z", "+00:00"], &own)
    }

    fn to_value(&self) -> TokenValue {
        TokenValue::TimestampUtc(*self)
    }

    fn from_value(value: &TokenValue) -> Option<Self> {
        match value {
            TokenValue::TimestampUtc(t) => Some(*t),
            _ => None,
        }
    }

    fn validate(&self) -> Result<(), InvalidToken> {
        validate_timestamp(self.naive_utc())
    }

    fn decode(text: &str) -> Result<Self, InvalidToken> {
        let token = DateTime::parse_from_rfc3339(checked_text(text)?)
            .map(|t| t.with_timezone(&Utc))
            .map_err(|_| malformed())?;
        token.validate()?;
        Ok(token)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counters_wrap_at_their_maximum() {
        assert_eq!(i16::MAX.next_token(), i16::MIN);
        assert_eq!(i32::MAX.next_token(), i32::MIN);
        assert_eq!(i64::MAX.next_token(), i64::MIN);
        assert_eq!(41_i32.next_token(), 42);
    }

    #[test]
    fn fresh_uuid_differs_and_is_never_nil() {
        let old = Uuid::new_v4();
        let fresh = old.next_token();
        assert_ne!(fresh, old);
        assert!(!fresh.is_nil());
        assert!(Uuid::nil().next_token().validate().is_ok());
    }

    #[test]
    fn fresh_timestamp_is_strictly_later_at_microseconds() {
        let now =
            NaiveDateTime::parse_from_str("2026-01-01T00:00:00.000001", NAIVE_FORMAT).unwrap();
        // The clock has not moved past the old token: the floor wins.
        assert_eq!(fresh(now, now, 6).to_string(), "2026-01-01 00:00:00.000002");
        // A token from the future (clock skew) still advances.
        let later = now + TimeDelta::seconds(5);
        assert_eq!(fresh(later, now, 6), later + TimeDelta::microseconds(1));
        // Nanoseconds are dropped: the database would drop them.
        let noisy = now + TimeDelta::nanoseconds(999);
        assert_eq!(fresh(now - TimeDelta::seconds(1), noisy, 6), now);
    }

    /// [`fresh_timestamp`] where a fresh token exists.
    fn fresh(old: NaiveDateTime, now: NaiveDateTime, precision: u8) -> NaiveDateTime {
        fresh_timestamp(old, now, precision).unwrap()
    }

    fn at(text: &str) -> NaiveDateTime {
        NaiveDateTime::parse_from_str(text, NAIVE_FORMAT).unwrap()
    }

    #[test]
    fn fresh_timestamp_is_a_whole_step_of_the_declared_precision() {
        let old = at("2026-01-01T00:00:00.999999");
        let now = at("2026-01-01T00:00:00.400000");
        // The clock is behind the token: one step past the old token's own step.
        assert_eq!(fresh(old, now, 0), at("2026-01-01T00:00:01.000000"));
        assert_eq!(fresh(old, now, 3), at("2026-01-01T00:00:01.000000"));
        assert_eq!(fresh(old, now, 1), at("2026-01-01T00:00:01.000000"));
        // The clock is ahead: now, truncated to the step.
        let now = at("2026-01-01T00:00:07.654321");
        assert_eq!(fresh(old, now, 0), at("2026-01-01T00:00:07.000000"));
        assert_eq!(fresh(old, now, 2), at("2026-01-01T00:00:07.650000"));
        // Larger precisions count as microseconds.
        assert_eq!(fresh(old, now, 9), now);
    }

    #[test]
    fn a_fresh_timestamp_never_rounds_back_onto_the_old_one() {
        // Whatever the column keeps (truncating or rounding to 0..=6 digits), the
        // whole-second token differs from every old token the column could hold.
        let old = at("2026-01-01T00:00:00.000000");
        for now in ["2026-01-01T00:00:00.000000", "2026-01-01T00:00:00.700000"] {
            let fresh = fresh(old, at(now), 0);
            for digits in 0..=6 {
                assert_ne!(fresh.trunc_subsecs(digits), old);
                assert_ne!(fresh.round_subsecs(digits), old);
            }
        }
    }

    #[test]
    fn timestamps_before_the_epoch_floor_downwards() {
        let old = at("1960-01-01T00:00:00.500000");
        assert_eq!(floor_at(old, 0), at("1960-01-01T00:00:00.000000"));
        assert_eq!(
            fresh(old, at("1950-01-01T00:00:00.000000"), 0),
            at("1960-01-01T00:00:01.000000")
        );
    }

    #[test]
    fn the_end_of_time_is_an_out_of_range_token() {
        let now = at("2026-01-01T00:00:00.000000");
        let reason = |r: Result<(), InvalidToken>| r.map_err(|e| e.reason);
        let out_of_range = Err(InvalidTokenReason::OutOfRange);
        for precision in [0, 3, 6] {
            let old = floor_at(NaiveDateTime::MAX, precision);
            assert_eq!(fresh_timestamp(old, now, precision), None);
            assert_eq!(
                reason(old.try_next_token_at(precision).map(drop)),
                out_of_range
            );
            let utc = old.and_utc();
            assert_eq!(
                reason(utc.try_next_token_at(precision).map(drop)),
                out_of_range
            );
            // The infallible form does not panic either: now, at the precision.
            assert!(old.next_token_at(precision) < old);
        }
        // The last second is refused at every precision: whole seconds cannot follow.
        let last_second = floor_at(NaiveDateTime::MAX, 0);
        assert_eq!(reason(last_second.validate()), out_of_range);
        assert_eq!(reason(last_second.and_utc().validate()), out_of_range);
        let decoded = NaiveDateTime::decode(&last_second.encode());
        assert_eq!(reason(decoded.map(drop)), out_of_range);
        let before = last_second - TimeDelta::seconds(1);
        assert_eq!(NaiveDateTime::decode(&before.encode()), Ok(before));
        assert_eq!(before.try_next_token_at(0), Ok(last_second));
    }

    #[test]
    fn every_text_form_reads_back_as_the_token() {
        for text in [
            "2024-01-02T03:04:05.000000",
            "2024-01-02T03:04:05.500000",
            "2024-01-02T03:04:05.123456",
            "2024-01-02T03:04:00.000000",
        ] {
            let token = at(text);
            let forms = token.text_forms();
            assert!(!forms.contains(&token.format("%F %T%.f").to_string()));
            assert!(forms.contains(&token.format("%FT%T%.f").to_string()));
            for form in forms {
                let read = [
                    "%F %T%.f",
                    "%FT%T%.f",
                    "%F %T%.fZ",
                    "%FT%T%.fZ",
                    "%F %T%.f%:z",
                    "%FT%T%.f%:z",
                    "%F %R",
                    "%FT%R",
                    "%F %RZ",
                    "%FT%RZ",
                    "%F %R%:z",
                    "%FT%R%:z",
                ]
                .iter()
                .find_map(|format| NaiveDateTime::parse_from_str(&form, format).ok());
                assert_eq!(read, Some(token), "{form}");
            }
        }
        assert!(7_i32.text_forms().is_empty());
    }

    #[test]
    fn tokens_round_trip_through_their_client_form() {
        let uuid = Uuid::new_v4();
        assert_eq!(Uuid::decode(&uuid.encode()).unwrap(), uuid);
        let naive = NaiveDateTime::initial();
        assert_eq!(NaiveDateTime::decode(&naive.encode()).unwrap(), naive);
        let utc = DateTime::<Utc>::initial();
        assert_eq!(DateTime::<Utc>::decode(&utc.encode()).unwrap(), utc);
        assert_eq!(i16::decode(&i16::MIN.encode()).unwrap(), i16::MIN);
    }

    #[test]
    fn bad_client_tokens_are_typed_errors() {
        let reason = |r: Result<i64, InvalidToken>| r.unwrap_err().reason;
        assert_eq!(reason(i64::decode("")), InvalidTokenReason::Empty);
        assert_eq!(reason(i64::decode("  ")), InvalidTokenReason::Empty);
        assert_eq!(reason(i64::decode("+1")), InvalidTokenReason::Malformed);
        assert_eq!(reason(i64::decode("1e3")), InvalidTokenReason::Malformed);
        assert_eq!(
            reason(i64::decode(&"9".repeat(65))),
            InvalidTokenReason::TooLong
        );
        assert_eq!(
            Uuid::decode("00000000-0000-0000-0000-000000000000")
                .unwrap_err()
                .reason,
            InvalidTokenReason::Nil
        );
        assert_eq!(
            i16::decode("40000").unwrap_err().reason,
            InvalidTokenReason::Malformed
        );
    }

    #[test]
    fn values_only_convert_to_their_own_kind() {
        assert_eq!(i16::from_value(&TokenValue::Integer(70_000)), None);
        assert_eq!(Uuid::from_value(&TokenValue::Integer(1)), None);
        assert_eq!(i32::from_value(&7_i32.to_value()), Some(7));
    }
}
