//! The `time` crate's timestamp tokens (feature `time`): `PrimitiveDateTime` and
//! `OffsetDateTime`, advanced, written out and matched on SQLite exactly as chrono's
//! `NaiveDateTime` and `DateTime<Utc>`.

use std::fmt;

use time::format_description::well_known::Rfc3339;
use time::macros::format_description;
use time::{OffsetDateTime, PrimitiveDateTime, UtcOffset};

use super::timestamp::{
    Timestamp, initial_timestamp, next_timestamp, text_forms, timestamp_token, try_fresh_timestamp,
    validate_timestamp,
};
use super::{InvalidToken, InvalidTokenReason, TimestampText, TokenKind, TokenValue};
use super::{VersionToken, checked_text, malformed};

/// `t` at UTC; `t` itself when UTC would leave the type's range (a value within a day of
/// its end, with an offset).
fn at_utc(t: OffsetDateTime) -> OffsetDateTime {
    t.checked_to_offset(UtcOffset::UTC).unwrap_or(t)
}

/// Writes `t` as chrono's `%Y-%m-%dT%H:%M:%S%.6f`: the client form of both kinds.
fn write_clock(f: &mut fmt::Formatter<'_>, t: PrimitiveDateTime) -> fmt::Result {
    let year = t.year();
    if year < 0 {
        f.write_str("-")?;
    }
    write!(
        f,
        "{:04}-{:02}-{:02}T{:02}:{:02}:{:02}.{:06}",
        year.unsigned_abs(),
        u8::from(t.month()),
        t.day(),
        t.hour(),
        t.minute(),
        t.second(),
        t.microsecond()
    )
}

/// A `PrimitiveDateTime` token's client form: `2024-01-02T03:04:05.123456`.
pub(super) fn write_primitive(f: &mut fmt::Formatter<'_>, t: PrimitiveDateTime) -> fmt::Result {
    write_clock(f, t)
}

/// An `OffsetDateTime` token's client form, at UTC: `2024-01-02T03:04:05.123456Z`.
pub(super) fn write_offset(f: &mut fmt::Formatter<'_>, t: OffsetDateTime) -> fmt::Result {
    let t = at_utc(t);
    write_clock(f, PrimitiveDateTime::new(t.date(), t.time()))?;
    f.write_str("Z")
}

/// The whole seconds as `strftime('%Y-%m-%d %H:%M:%S')` writes them.
fn seconds_text(t: PrimitiveDateTime) -> String {
    format!(
        "{:04}-{:02}-{:02} {:02}:{:02}:{:02}",
        t.year(),
        u8::from(t.month()),
        t.day(),
        t.hour(),
        t.minute(),
        t.second()
    )
}

impl Timestamp for OffsetDateTime {
    fn now() -> Self {
        OffsetDateTime::now_utc()
    }

    fn micros(self) -> i64 {
        // The type's range (years -9999 to 9999) is far inside i64 microseconds.
        i64::try_from(self.unix_timestamp_nanos().div_euclid(1_000)).unwrap_or(i64::MAX)
    }

    fn from_micros(micros: i64) -> Option<Self> {
        OffsetDateTime::from_unix_timestamp_nanos(i128::from(micros).saturating_mul(1_000)).ok()
    }

    fn seconds_text(self) -> String {
        let t = at_utc(self);
        seconds_text(PrimitiveDateTime::new(t.date(), t.time()))
    }

    fn subsec_nanos(self) -> u32 {
        self.nanosecond()
    }
}

/// A `PrimitiveDateTime` is the clock time in UTC, as chrono's `NaiveDateTime`.
impl Timestamp for PrimitiveDateTime {
    fn now() -> Self {
        let now = OffsetDateTime::now_utc();
        PrimitiveDateTime::new(now.date(), now.time())
    }

    fn micros(self) -> i64 {
        self.assume_utc().micros()
    }

    fn from_micros(micros: i64) -> Option<Self> {
        OffsetDateTime::from_micros(micros).map(|t| PrimitiveDateTime::new(t.date(), t.time()))
    }

    fn seconds_text(self) -> String {
        seconds_text(self)
    }

    fn subsec_nanos(self) -> u32 {
        self.nanosecond()
    }
}

timestamp_token! {
    /// A timestamp token, the clock time in UTC: chrono's `NaiveDateTime` token for the
    /// `time` crate, with the same precision, text forms on SQLite, client form and rule
    /// (nothing but diesel-occ sets the token to "now").
    ///
    /// ```
    /// use diesel_occ::VersionToken;
    /// use time::macros::datetime;
    ///
    /// // A token from a clock that runs ahead: the fresh one is the next millisecond.
    /// let old = datetime!(2999-01-01 00:00:00.123);
    /// assert_eq!(old.next_token_at(3), datetime!(2999-01-01 00:00:00.124));
    /// assert_eq!(old.encode(), "2999-01-01T00:00:00.123000");
    /// assert_eq!(time::PrimitiveDateTime::decode(&old.encode()), Ok(old));
    /// ```
    #[cfg_attr(docsrs, doc(cfg(feature = "time")))]
    // Diesel reads a primitive timestamp with an offset by ignoring the offset.
    PrimitiveDateTime {
        applies_offset: false,
        value: PrimitiveDateTime(|t| t),
        decode: |text| {
            let format = format_description!(
                "[year]-[month]-[day]T[hour]:[minute]:[second].[subsecond digits:6]"
            );
            PrimitiveDateTime::parse(text, &format).map_err(|_| malformed())
        },
    }
}

timestamp_token! {
    /// A timestamp token, the instant: chrono's `DateTime<Utc>` token for the `time` crate.
    /// Fresh tokens are at UTC; tokens compare as instants, whatever their offset.
    ///
    /// ```
    /// use diesel_occ::VersionToken;
    /// use time::macros::datetime;
    ///
    /// let old = datetime!(2999-01-01 02:00:00.5 +02:00);
    /// assert_eq!(old.next_token(), datetime!(2999-01-01 00:00:01 UTC));
    /// assert_eq!(old.encode(), "2999-01-01T00:00:00.500000Z");
    /// assert_eq!(time::OffsetDateTime::decode("2999-01-01T01:00:00.5+01:00"), Ok(old));
    /// ```
    #[cfg_attr(docsrs, doc(cfg(feature = "time")))]
    // Diesel writes `+00:00` and reads any offset, applying it (no offset is UTC).
    OffsetDateTime {
        applies_offset: true,
        value: OffsetDateTime(at_utc),
        decode: |text| {
            OffsetDateTime::parse(text, &Rfc3339)
                .map_err(|_| malformed())?
                .checked_to_offset(UtcOffset::UTC)
                .ok_or(InvalidToken::new(InvalidTokenReason::OutOfRange))
        },
    }
}
