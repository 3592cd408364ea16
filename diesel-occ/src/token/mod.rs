//! Concurrency tokens: what may be one, how a fresh one is made, how one is written
//! out for a client (an ETag, a form field) and read back.

use std::fmt;

mod check_values;
#[cfg(feature = "chrono")]
mod chrono_token;
mod invalid;
mod text_forms;
#[cfg(feature = "time")]
mod time_token;
#[cfg(any(feature = "chrono", feature = "time"))]
mod timestamp;
#[cfg(feature = "uuid")]
pub(crate) mod uuid_token;

pub use check_values::CheckValues;
#[doc(hidden)]
pub use check_values::no_client_token;
pub use invalid::{InvalidToken, InvalidTokenReason};

/// Longest encoded token accepted from a client; every token this crate issues is shorter.
pub const MAX_ENCODED_LEN: usize = 64;

/// A type that can be a concurrency token.
///
/// Only equality matters: a checked write succeeds when the row still holds the token
/// that was read, and always stores a fresh one that differs from it.
///
/// | type | feature | fresh token | client form |
/// |---|---|---|---|
/// | `i16`, `i32`, `i64` | | old + 1, wrapping | decimal |
/// | `uuid::Uuid`, `UuidToken` | `uuid` | random v4, never nil | hyphenated |
/// | `chrono::NaiveDateTime`, `chrono::DateTime<Utc>` | `chrono` | now at the column's precision, strictly after the old one | RFC 3339 |
/// | `time::PrimitiveDateTime`, `time::OffsetDateTime` | `time` | as chrono's | RFC 3339 |
///
/// A timestamp token advances at whole seconds unless the entity declares how many
/// fractional digits its column stores (`#[occ(version, precision = 6)]`): a whole-second
/// token is stored exactly by every `DATETIME`, `TIMESTAMP(n)` and text column, so a fresh
/// token can never be rounded back onto the old one and let a stale writer match. On
/// SQLite, which stores timestamps as text, a guarded write matches every text form
/// Diesel reads back as the token (`T` or space, any fraction digits, `Z` or `+00:00`),
/// so rows written by other tools save.
///
/// # Which kind where a failover can happen
///
/// A token is checked against the row the database has. When a failover loses the
/// last commits of the old primary (PostgreSQL with an asynchronous standby promoted
/// after the primary died), the row goes back to an earlier token, and the next writer
/// on the new primary makes a fresh token from that one:
///
/// - **Integer** tokens are `old + 1` again: the same value the lost commit handed out,
///   for different content. A client still holding the lost commit's token then
///   passes the check and overwrites the new writer's acknowledged change: a lost update
///   the library cannot see. Tested: every such stale save was accepted.
/// - **UUID** tokens are random: the new writer's token differs from the lost one, and
///   the stale save is a [`ConcurrencyConflict`](crate::ConcurrencyConflict). Tested: every
///   one refused.
/// - **Timestamp** tokens are the writer's clock at the column's precision: the new
///   writer's token differs from the lost one as long as it is made at another tick
///   (a later microsecond at `precision = 6`; at whole seconds, two writes within one
///   second collide) and the clocks run past the row's token. A row whose token is
///   ahead of the writers' clocks (a clock that ran ahead, or a busy row at whole
///   seconds, whose token runs ahead of the clock) advances by one tick per write,
///   exactly like an integer, and loses the same way (tested).
///
/// So where failover can lose commits, use UUID tokens (or microsecond timestamps from
/// clocks that agree), or make the failover lose no acknowledged commit: PostgreSQL with
/// a synchronous standby (`synchronous_standby_names` naming it, `synchronous_commit =
/// on`, the default) acknowledges a commit only once the standby has it, and then every
/// kind is safe (tested: no acknowledged write lost, no stale save accepted). The
/// failover test and its figures: `SCALING.md`, "Failover".
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
    note = "a token is i16, i32, i64, uuid::Uuid, diesel_occ::UuidToken (feature `uuid`), chrono::NaiveDateTime, chrono::DateTime<Utc> (feature `chrono`), time::PrimitiveDateTime or time::OffsetDateTime (feature `time`)"
)]
pub trait VersionToken: Clone + PartialEq + fmt::Debug + Send + Sync + 'static {
    /// A token for a new row.
    fn initial() -> Self;

    /// A token for a new row in a column that stores `precision` fractional digits of a
    /// second (0 to 6; larger values count as 6): what the checked inserts and upserts
    /// write, so the token they return is the one the row holds. Only timestamps use
    /// the precision: the clock, rounded down to a multiple of `10^-precision` seconds;
    /// the other kinds give [`initial`](Self::initial).
    ///
    /// ```
    /// use chrono::{NaiveDateTime, Timelike};
    /// use diesel_occ::VersionToken;
    ///
    /// // A whole-second column (`timestamp(0)`, `DATETIME`) stores it exactly.
    /// assert_eq!(NaiveDateTime::initial_at(0).nanosecond(), 0);
    /// assert_eq!(i32::initial_at(0), 1);
    /// ```
    fn initial_at(precision: u8) -> Self {
        let _ = precision;
        Self::initial()
    }

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
    /// A timestamp in the last second of its type's range has no later value: there the
    /// result is now, earlier than `self`. The checked operations use
    /// [`try_next_token_at`](Self::try_next_token_at), which refuses such a token.
    fn next_token_at(&self, precision: u8) -> Self {
        let _ = precision;
        self.next_token()
    }

    /// [`next_token_at`](Self::next_token_at), or [`InvalidTokenReason::OutOfRange`]
    /// for a token no fresh one can follow (a timestamp in the last second of its type's
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

    /// For a timestamp token, the texts SQLite may hold it as and Diesel reads back as
    /// exactly this token (`T` for the space, other fraction digits, `Z` or an offset),
    /// which a guarded write on SQLite also matches. `None` for tokens with one form.
    #[doc(hidden)]
    fn text_forms(&self) -> Option<TimestampText> {
        None
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
    /// A `uuid::Uuid`: PostgreSQL's `uuid` column.
    Uuid,
    /// A [`UuidToken`](crate::UuidToken): a UUID stored as 16 bytes (MySQL
    /// `BINARY(16)`, SQLite `BLOB`) or, on PostgreSQL, as `uuid` or `bytea`.
    UuidBytes,
    /// A date and time (`TIMESTAMP`, `DATETIME`, SQLite text).
    Timestamp,
    /// The check columns (`#[occ(check)]`) of an entity without a version column:
    /// their values as read stand for the token; no column of a given type is needed.
    Columns,
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
            TokenKind::UuidBytes => "a UUID (as 16 bytes, or PostgreSQL's uuid)",
            TokenKind::Timestamp => "a timestamp",
            TokenKind::Columns => "check columns",
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
    #[cfg(feature = "uuid")]
    #[cfg_attr(docsrs, doc(cfg(feature = "uuid")))]
    Uuid(uuid::Uuid),
    /// A chrono timestamp without time zone.
    #[cfg(feature = "chrono")]
    #[cfg_attr(docsrs, doc(cfg(feature = "chrono")))]
    Timestamp(chrono::NaiveDateTime),
    /// A chrono UTC timestamp.
    #[cfg(feature = "chrono")]
    #[cfg_attr(docsrs, doc(cfg(feature = "chrono")))]
    TimestampUtc(chrono::DateTime<chrono::Utc>),
    /// A `time` timestamp without time zone.
    #[cfg(feature = "time")]
    #[cfg_attr(docsrs, doc(cfg(feature = "time")))]
    PrimitiveDateTime(time::PrimitiveDateTime),
    /// A `time` timestamp with an offset, held at UTC.
    #[cfg(feature = "time")]
    #[cfg_attr(docsrs, doc(cfg(feature = "time")))]
    OffsetDateTime(time::OffsetDateTime),
    /// The values of the check columns of an entity without a version column.
    Columns(CheckValues),
}

impl fmt::Display for TokenValue {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            TokenValue::Integer(n) => write!(f, "{n}"),
            #[cfg(feature = "uuid")]
            TokenValue::Uuid(u) => write!(f, "{}", u.hyphenated()),
            #[cfg(feature = "chrono")]
            TokenValue::Timestamp(t) => write!(f, "{}", t.format(chrono_token::NAIVE_FORMAT)),
            #[cfg(feature = "chrono")]
            TokenValue::TimestampUtc(t) => write!(f, "{}", t.format(chrono_token::UTC_FORMAT)),
            #[cfg(feature = "time")]
            TokenValue::PrimitiveDateTime(t) => time_token::write_primitive(f, *t),
            #[cfg(feature = "time")]
            TokenValue::OffsetDateTime(t) => time_token::write_offset(f, *t),
            TokenValue::Columns(values) => write!(f, "{values}"),
        }
    }
}

impl TokenValue {
    /// The instant a timestamp token names, for HTTP's `Last-Modified`; `None` for the
    /// other kinds. A timestamp without time zone is read as UTC, the clock the library
    /// draws it from.
    ///
    /// ```
    /// use std::time::{Duration, SystemTime};
    /// use diesel_occ::VersionToken;
    ///
    /// # #[cfg(feature = "chrono")] {
    /// let token = chrono::DateTime::from_timestamp(86_400, 500_000_000).unwrap().naive_utc();
    /// let at = SystemTime::UNIX_EPOCH + Duration::new(86_400, 500_000_000);
    /// assert_eq!(token.to_value().to_system_time(), Some(at));
    /// # }
    /// assert_eq!(7_i32.to_value().to_system_time(), None);
    /// ```
    pub fn to_system_time(&self) -> Option<std::time::SystemTime> {
        let (seconds, nanos) = self.unix_time()?;
        let since_epoch = std::time::Duration::new(u64::try_from(seconds).ok()?, nanos);
        std::time::SystemTime::UNIX_EPOCH.checked_add(since_epoch)
    }

    /// Seconds since 1970 and the nanoseconds past them, for a timestamp token.
    fn unix_time(&self) -> Option<(i64, u32)> {
        match self {
            #[cfg(feature = "chrono")]
            TokenValue::Timestamp(t) => {
                let t = t.and_utc();
                Some((t.timestamp(), t.timestamp_subsec_nanos()))
            }
            #[cfg(feature = "chrono")]
            TokenValue::TimestampUtc(t) => Some((t.timestamp(), t.timestamp_subsec_nanos())),
            #[cfg(feature = "time")]
            TokenValue::PrimitiveDateTime(t) => {
                let t = t.assume_utc();
                Some((t.unix_timestamp(), t.nanosecond()))
            }
            #[cfg(feature = "time")]
            TokenValue::OffsetDateTime(t) => Some((t.unix_timestamp(), t.nanosecond())),
            _ => None,
        }
    }
}

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
        /// A counter: `old + 1`. After a failover that lost commits, the same value can
        /// be handed out twice for different content; see
        /// [which kind where a failover can happen](VersionToken#which-kind-where-a-failover-can-happen).
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
                    // The only variant without the `uuid`, `chrono` and `time` features.
                    #[allow(unreachable_patterns)]
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

#[cfg(test)]
mod tests;

pub use text_forms::TimestampText;
#[doc(hidden)]
pub use text_forms::check_text_forms;
#[cfg(any(feature = "chrono", feature = "time"))]
pub(crate) use timestamp::{clock_at, step_micros};
