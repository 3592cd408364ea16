//! Concurrency tokens: what may be one, how a fresh one is made, how one is written
//! out for a client (an ETag, a form field) and read back.

use std::fmt;

use chrono::{DateTime, NaiveDateTime, SubsecRound, TimeDelta, Utc};
use uuid::Uuid;

use crate::error::{InvalidToken, InvalidTokenReason};

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
/// | [`NaiveDateTime`], [`DateTime<Utc>`] | now at microseconds, strictly after the old one | RFC 3339 |
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

    /// A fresh token that differs from `self` at the precision the database stores.
    fn next_token(&self) -> Self;

    /// The token as an untyped value, for errors and logs.
    fn to_value(&self) -> TokenValue;

    /// The typed token back from an untyped value, if it is of this kind.
    fn from_value(value: &TokenValue) -> Option<Self>;

    /// Rejects values that can never be valid tokens (the nil UUID).
    fn validate(&self) -> Result<(), InvalidToken> {
        Ok(())
    }

    /// The token as text for a client: an ETag's content or a form field.
    fn encode(&self) -> String {
        self.to_value().to_string()
    }

    /// Reads a token a client sent back; empty, oversized, malformed and nil tokens are
    /// typed errors.
    fn decode(text: &str) -> Result<Self, InvalidToken>;
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
    ($($int:ty),*) => {$(
        impl VersionToken for $int {
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

integer_token!(i16, i32, i64);

impl VersionToken for Uuid {
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

/// `now`, truncated to microseconds (the finest precision PostgreSQL and MariaDB keep),
/// and strictly after `old` at that precision.
fn fresh_timestamp(old: NaiveDateTime, now: NaiveDateTime) -> NaiveDateTime {
    let now = now.trunc_subsecs(6);
    let floor = old.trunc_subsecs(6) + TimeDelta::microseconds(1);
    now.max(floor)
}

impl VersionToken for NaiveDateTime {
    fn initial() -> Self {
        Utc::now().naive_utc().trunc_subsecs(6)
    }

    fn next_token(&self) -> Self {
        fresh_timestamp(*self, Utc::now().naive_utc())
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

    fn decode(text: &str) -> Result<Self, InvalidToken> {
        NaiveDateTime::parse_from_str(checked_text(text)?, NAIVE_FORMAT).map_err(|_| malformed())
    }
}

impl VersionToken for DateTime<Utc> {
    fn initial() -> Self {
        Utc::now().trunc_subsecs(6)
    }

    fn next_token(&self) -> Self {
        fresh_timestamp(self.naive_utc(), Utc::now().naive_utc()).and_utc()
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

    fn decode(text: &str) -> Result<Self, InvalidToken> {
        DateTime::parse_from_rfc3339(checked_text(text)?)
            .map(|t| t.with_timezone(&Utc))
            .map_err(|_| malformed())
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
        assert_eq!(
            fresh_timestamp(now, now).to_string(),
            "2026-01-01 00:00:00.000002"
        );
        // A token from the future (clock skew) still advances.
        let later = now + TimeDelta::seconds(5);
        assert_eq!(
            fresh_timestamp(later, now),
            later + TimeDelta::microseconds(1)
        );
        // Nanoseconds are dropped: the database would drop them.
        let noisy = now + TimeDelta::nanoseconds(999);
        assert_eq!(fresh_timestamp(now - TimeDelta::seconds(1), noisy), now);
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
