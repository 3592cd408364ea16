//! UUID tokens (feature `uuid`): `uuid::Uuid`, and [`UuidToken`], a UUID token Diesel
//! can store on every backend.

use diesel::backend::Backend;
use diesel::deserialize::{self, FromSql, FromSqlRow};
use diesel::expression::AsExpression;
use diesel::serialize::{self, Output, ToSql};
use diesel::sql_types::Binary;
use uuid::Uuid;

use super::{InvalidToken, InvalidTokenReason, checked_text, malformed};
use crate::token::{TokenKind, TokenValue, VersionToken};

/// A UUID concurrency token for any backend.
///
/// Diesel maps [`uuid::Uuid`] only to PostgreSQL's `uuid` type. `UuidToken` also maps
/// to 16-byte binary columns (`BINARY(16)` on MySQL/MariaDB, `BLOB` on SQLite), so one
/// entity type works everywhere. On PostgreSQL (feature `postgres`) it maps to `uuid`
/// as well.
/// With feature `serde` it is `Serialize` and `Deserialize` as its client form (the
/// hyphenated UUID, never nil), as `diesel_occ::serde_token` writes and reads any token.
///
/// A fresh UUID is never the token of an earlier write, also after a failover that lost
/// commits: the kind to choose where that can happen (see
/// [`VersionToken`](crate::VersionToken#which-kind-where-a-failover-can-happen)).
///
/// ```
/// use diesel_occ::{UuidToken, VersionToken};
///
/// let token = UuidToken::initial();
/// assert_ne!(token.next_token(), token);
/// assert_eq!(UuidToken::decode(&token.encode()).unwrap(), token);
/// ```
#[cfg_attr(docsrs, doc(cfg(feature = "uuid")))]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, AsExpression, FromSqlRow)]
#[diesel(sql_type = Binary)]
#[cfg_attr(feature = "postgres", diesel(sql_type = diesel::sql_types::Uuid))]
pub struct UuidToken(pub Uuid);

impl From<Uuid> for UuidToken {
    fn from(uuid: Uuid) -> Self {
        UuidToken(uuid)
    }
}

impl From<UuidToken> for Uuid {
    fn from(token: UuidToken) -> Self {
        token.0
    }
}

impl std::fmt::Display for UuidToken {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.0.hyphenated().fmt(f)
    }
}

impl VersionToken for UuidToken {
    const KIND: TokenKind = TokenKind::UuidBytes;

    fn initial() -> Self {
        UuidToken(Uuid::initial())
    }

    fn next_token(&self) -> Self {
        UuidToken(self.0.next_token())
    }

    fn to_value(&self) -> TokenValue {
        self.0.to_value()
    }

    fn from_value(value: &TokenValue) -> Option<Self> {
        Uuid::from_value(value).map(UuidToken)
    }

    fn validate(&self) -> Result<(), InvalidToken> {
        self.0.validate()
    }

    fn decode(text: &str) -> Result<Self, InvalidToken> {
        Uuid::decode(text).map(UuidToken)
    }
}

/// A UUID token (PostgreSQL's `uuid`): a fresh random v4 UUID on every write, never nil.
#[cfg_attr(docsrs, doc(cfg(feature = "uuid")))]
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

impl<DB> ToSql<Binary, DB> for UuidToken
where
    DB: Backend,
    [u8]: ToSql<Binary, DB>,
{
    fn to_sql<'b>(&'b self, out: &mut Output<'b, '_, DB>) -> serialize::Result {
        <[u8] as ToSql<Binary, DB>>::to_sql(self.0.as_bytes().as_slice(), out)
    }
}

impl<DB> FromSql<Binary, DB> for UuidToken
where
    DB: Backend,
    Vec<u8>: FromSql<Binary, DB>,
{
    fn from_sql(bytes: DB::RawValue<'_>) -> deserialize::Result<Self> {
        let bytes = <Vec<u8> as FromSql<Binary, DB>>::from_sql(bytes)?;
        Ok(UuidToken(Uuid::from_slice(&bytes)?))
    }
}

#[cfg(feature = "postgres")]
mod pg {
    use diesel::deserialize::{self, FromSql};
    use diesel::pg::{Pg, PgValue};
    use diesel::serialize::{self, Output, ToSql};
    use diesel::sql_types::Uuid as SqlUuid;

    use super::UuidToken;

    impl ToSql<SqlUuid, Pg> for UuidToken {
        fn to_sql<'b>(&'b self, out: &mut Output<'b, '_, Pg>) -> serialize::Result {
            <uuid::Uuid as ToSql<SqlUuid, Pg>>::to_sql(&self.0, out)
        }
    }

    impl FromSql<SqlUuid, Pg> for UuidToken {
        fn from_sql(value: PgValue<'_>) -> deserialize::Result<Self> {
            <uuid::Uuid as FromSql<SqlUuid, Pg>>::from_sql(value).map(UuidToken)
        }
    }
}
