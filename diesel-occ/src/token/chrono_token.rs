//! chrono's timestamp tokens (feature `chrono`): `NaiveDateTime` and `DateTime<Utc>`.

use chrono::{DateTime, NaiveDateTime, Timelike, Utc};

use super::timestamp::{
    Timestamp, initial_timestamp, next_timestamp, text_forms, timestamp_token, try_fresh_timestamp,
    validate_timestamp,
};
use super::{InvalidToken, TimestampText, TokenKind, TokenValue, VersionToken};
use super::{checked_text, malformed};

/// A naive token's client form.
pub(super) const NAIVE_FORMAT: &str = "%Y-%m-%dT%H:%M:%S%.6f";
/// A UTC token's client form.
pub(super) const UTC_FORMAT: &str = "%Y-%m-%dT%H:%M:%S%.6fZ";

impl Timestamp for NaiveDateTime {
    fn now() -> Self {
        Utc::now().naive_utc()
    }

    fn micros(self) -> i64 {
        self.and_utc().timestamp_micros()
    }

    fn from_micros(micros: i64) -> Option<Self> {
        DateTime::from_timestamp_micros(micros).map(|t| t.naive_utc())
    }

    fn seconds_text(self) -> String {
        self.format("%F %T").to_string()
    }

    fn subsec_nanos(self) -> u32 {
        self.nanosecond()
    }
}

impl Timestamp for DateTime<Utc> {
    fn now() -> Self {
        Utc::now()
    }

    fn micros(self) -> i64 {
        self.timestamp_micros()
    }

    fn from_micros(micros: i64) -> Option<Self> {
        DateTime::from_timestamp_micros(micros)
    }

    fn seconds_text(self) -> String {
        self.naive_utc().seconds_text()
    }

    fn subsec_nanos(self) -> u32 {
        self.nanosecond()
    }
}

timestamp_token! {
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
    #[cfg_attr(docsrs, doc(cfg(feature = "chrono")))]
    // Diesel reads a naive timestamp with an offset by ignoring the offset.
    NaiveDateTime {
        applies_offset: false,
        value: Timestamp(|t| t),
        decode: |text| NaiveDateTime::parse_from_str(text, NAIVE_FORMAT).map_err(|_| malformed()),
    }
}

timestamp_token! {
    /// A timestamp token, the instant: as `NaiveDateTime`'s, including the rule that
    /// nothing but diesel-occ sets it to "now".
    #[cfg_attr(docsrs, doc(cfg(feature = "chrono")))]
    // Diesel writes `+00:00` and reads any offset, applying it (no offset is UTC).
    DateTime<Utc> {
        applies_offset: true,
        value: TimestampUtc(|t| t),
        decode: |text| {
            DateTime::parse_from_rfc3339(text)
                .map(|t| t.with_timezone(&Utc))
                .map_err(|_| malformed())
        },
    }
}
