//! Timestamp tokens: a fresh token strictly after the old one at the column's precision, and the texts SQLite may store it as.

use super::{InvalidToken, InvalidTokenReason};
use chrono::{DateTime, NaiveDateTime, SubsecRound, TimeDelta, Utc};

use super::*;

/// The finest precision PostgreSQL and MariaDB keep: microseconds.
const MAX_PRECISION: u8 = 6;

/// One step at `precision` fractional digits: 1 s, 100 ms, ..., 1 µs (and 1 µs past 6).
pub(super) fn unit(precision: u8) -> TimeDelta {
    TimeDelta::microseconds(10_i64.pow(u32::from(MAX_PRECISION.saturating_sub(precision))))
}

/// `t` rounded down to a multiple of [`unit`]`(precision)`, before the epoch too (where
/// chrono's truncation would round towards zero, upwards).
pub(super) fn floor_at(t: NaiveDateTime, precision: u8) -> NaiveDateTime {
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
pub(super) fn fresh_timestamp(
    old: NaiveDateTime,
    now: NaiveDateTime,
    precision: u8,
) -> Option<NaiveDateTime> {
    let precision = precision.min(MAX_PRECISION);
    let floor = floor_at(old, precision).checked_add_signed(unit(precision))?;
    Some(floor_at(now, precision).max(floor))
}

/// [`fresh_timestamp`] from now, or the out-of-range error.
pub(super) fn try_fresh_timestamp(
    old: NaiveDateTime,
    precision: u8,
) -> Result<NaiveDateTime, InvalidToken> {
    fresh_timestamp(old, Utc::now().naive_utc(), precision)
        .ok_or(InvalidToken::new(InvalidTokenReason::OutOfRange))
}

/// [`fresh_timestamp`] from now; at the end of chrono's range, where nothing is later
/// than `old`, now (see [`VersionToken::next_token_at`]).
pub(super) fn next_timestamp(old: NaiveDateTime, precision: u8) -> NaiveDateTime {
    let now = Utc::now().naive_utc();
    fresh_timestamp(old, now, precision)
        .unwrap_or_else(|| floor_at(now, precision.min(MAX_PRECISION)))
}

/// A timestamp token is valid when a fresh token can follow it at every precision:
/// the whole-second step, the coarsest, exists.
pub(super) fn validate_timestamp(t: NaiveDateTime) -> Result<(), InvalidToken> {
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
    /// `DateTime<Utc>`; a `NaiveDateTime` is read as the clock time written, offset
    /// ignored.
    pub(crate) applies_offset: bool,
}

impl TimestampText {
    fn new(t: NaiveDateTime, applies_offset: bool) -> Self {
        let nanos = format!("{:09}", t.and_utc().timestamp_subsec_nanos());
        let digits = nanos.trim_end_matches('0');
        TimestampText {
            seconds: t.format("%F %T").to_string(),
            fraction: if digits.is_empty() {
                String::new()
            } else {
                format!(".{digits}")
            },
            applies_offset,
        }
    }
}

/// A timestamp token, the clock time in UTC.
///
/// It only moves forward: a checked write stores `max(now, old + one unit)` at the
/// column's precision (`#[occ(version, precision = N)]`), so on a busy row a
/// whole-second token runs ahead of the clock, and a token never returns to a value it
/// held before, which a stale entity may still hold.
///
/// **Rule: nothing but diesel-occ sets the token to "now".** A writer that does (MySQL's
/// `ON UPDATE CURRENT_TIMESTAMP`, a trigger or an application writing `now()`) can move
/// a token that ran ahead of the clock back onto such a value, and the stale entity's
/// save then wins. diesel-occ refuses or guards where it can see it:
/// [`SchemaCheck`](crate::schema_check::SchemaCheck) reports a token column with
/// `ON UPDATE CURRENT_TIMESTAMP`, and the PostgreSQL
/// bypass guard (feature `bypass-guard`) moves a write that leaves the token where it was
/// or moves it back to the clock or one unit past the old token (a trigger of your own
/// that sets the token runs after it when its name sorts after the guard's
/// `occ_guard_...`, and undoes that). Keep a "last modified" time in a column of its
/// own.
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
    fn text_forms(&self) -> Option<TimestampText> {
        Some(TimestampText::new(*self, false))
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

/// A timestamp token, the instant: as `NaiveDateTime`'s, including the rule that
/// nothing but diesel-occ sets it to "now".
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

    // Diesel writes `+00:00` and reads any offset, applying it (no offset is UTC).
    fn text_forms(&self) -> Option<TimestampText> {
        Some(TimestampText::new(self.naive_utc(), true))
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
