//! Timestamp tokens: a fresh token strictly after the old one at the column's precision, and the text forms SQLite may store it in.

use crate::error::{InvalidToken, InvalidTokenReason};
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

/// The text forms of `t` that SQLite's date functions accept and Diesel reads back as
/// exactly `t`, with the given suffixes, except Diesel's own (`%F %T%.f`, no suffix).
pub(super) fn text_forms(t: NaiveDateTime, suffixes: &[&str], own: &str) -> Vec<String> {
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
