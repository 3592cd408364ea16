//! Tokens in request and response bodies (feature `serde`): a JSON field an SPA sends
//! back, a hidden `version` field of an HTML form (as Rails' `lock_version`), written as
//! the client form [`VersionToken::encode`] gives and read back with
//! [`VersionToken::decode`], the validation of the `If-Match` path.
//!
//! The token types' own serde impls (uuid's, chrono's, plain integers) are not the
//! client form and do not validate it: uuid's accepts the nil UUID, an integer is a JSON
//! number (which JavaScript rounds above 2^53). This module is: use it on the field with
//! `#[serde(with = "diesel_occ::serde_token")]`, or wrap the token in [`Encoded`].
//!
//! - Serialized, a token is always a string, `"42"` for a counter, so that no client
//!   rounds an `i64` token.
//! - Deserialized, the field must be a string that [`VersionToken::decode`] accepts:
//!   empty, oversized ([`MAX_ENCODED_LEN`](crate::MAX_ENCODED_LEN)), malformed, nil and
//!   out-of-range tokens, and a number or any other type in place of the string, are a
//!   deserialization error. A web framework's JSON or form extractor turns it into its
//!   rejection (axum: 400 or 422), never a 500 and never a panic. The error names why
//!   ("invalid concurrency token: the token is malformed"), never the text sent.
//! - A token of an entity without a version column (its check columns stand for it)
//!   has no client form: serializing one is an error, as is every text deserialized
//!   into one.
//!
//! ```
//! use serde::{Deserialize, Serialize};
//!
//! #[derive(Debug, Serialize, Deserialize)]
//! struct StockForm {
//!     available: i32,
//!     #[serde(with = "diesel_occ::serde_token")]
//!     version: i64,
//! }
//!
//! let form: StockForm = serde_json::from_str(r#"{"available": 3, "version": "7"}"#)?;
//! assert_eq!(form.version, 7);
//! assert_eq!(serde_json::to_string(&form)?, r#"{"available":3,"version":"7"}"#);
//!
//! // What `decode` refuses, the body refuses: a 400/422, not a 500.
//! for forged in [r#""7x""#, r#""""#, r#"7"#, r#"null"#, r#""+7""#] {
//!     let body = format!(r#"{{"available": 3, "version": {forged}}}"#);
//!     assert!(serde_json::from_str::<StockForm>(&body).is_err(), "{forged}");
//! }
//! # Ok::<(), serde_json::Error>(())
//! ```

use std::fmt;
use std::marker::PhantomData;

use serde::de::{self, Deserializer, Visitor};
use serde::ser::{self, Serializer};

#[cfg(feature = "uuid")]
use crate::token::uuid_token::UuidToken;
use crate::token::{InvalidToken, InvalidTokenReason, TokenKind, VersionToken};

/// Serializes `token` as its client form, [`VersionToken::encode`]'s string; for
/// `#[serde(with = "diesel_occ::serde_token")]` or `serialize_with`.
///
/// A token of an entity without a version column has no client form: an error.
///
/// ```
/// #[derive(serde::Serialize)]
/// struct Body {
///     #[serde(serialize_with = "diesel_occ::serde_token::serialize")]
///     version: i32,
/// }
///
/// let json = serde_json::to_string(&Body { version: 3 }).unwrap();
/// assert_eq!(json, r#"{"version":"3"}"#);
/// ```
pub fn serialize<T: VersionToken, S: Serializer>(
    token: &T,
    serializer: S,
) -> Result<S::Ok, S::Error> {
    if T::KIND == TokenKind::Columns {
        return Err(ser::Error::custom(InvalidToken::new(
            InvalidTokenReason::Versionless,
        )));
    }
    serializer.serialize_str(&token.encode())
}

/// Deserializes a token from its client form, a string that [`VersionToken::decode`]
/// accepts; anything else is the deserializer's error. For
/// `#[serde(with = "diesel_occ::serde_token")]` or `deserialize_with`.
///
/// ```
/// #[derive(Debug, serde::Deserialize)]
/// struct Body {
///     #[serde(deserialize_with = "diesel_occ::serde_token::deserialize")]
///     version: uuid::Uuid,
/// }
///
/// let nil = r#"{"version": "00000000-0000-0000-0000-000000000000"}"#;
/// let error = serde_json::from_str::<Body>(nil).unwrap_err();
/// assert!(error.to_string().contains("the nil UUID is not a valid token"), "{error}");
/// ```
pub fn deserialize<'de, T: VersionToken, D: Deserializer<'de>>(
    deserializer: D,
) -> Result<T, D::Error> {
    deserializer.deserialize_str(TokenVisitor(PhantomData))
}

/// Reads the client form of a `T`.
struct TokenVisitor<T>(PhantomData<fn() -> T>);

impl<T: VersionToken> Visitor<'_> for TokenVisitor<T> {
    type Value = T;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a concurrency token as a string")
    }

    fn visit_str<E: de::Error>(self, text: &str) -> Result<T, E> {
        T::decode(text).map_err(E::custom)
    }
}

/// A token that serializes as its client form and deserializes only from one that
/// [`VersionToken::decode`] accepts: the [module](self)'s functions as a type, for a
/// token in a generic container (`Vec<Encoded<i64>>`) or a struct you would rather not
/// annotate.
///
/// ```
/// use diesel_occ::serde_token::Encoded;
///
/// let tokens: Vec<Encoded<i32>> = serde_json::from_str(r#"["1", "2"]"#).unwrap();
/// assert_eq!(tokens, [Encoded(1), Encoded(2)]);
/// assert!(serde_json::from_str::<Vec<Encoded<i32>>>("[1, 2]").is_err()); // numbers
/// assert_eq!(serde_json::to_string(&Encoded(i64::MAX)).unwrap(), r#""9223372036854775807""#);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct Encoded<T>(pub T);

impl<T: VersionToken> serde::Serialize for Encoded<T> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serialize(&self.0, serializer)
    }
}

impl<'de, T: VersionToken> serde::Deserialize<'de> for Encoded<T> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserialize(deserializer).map(Encoded)
    }
}

/// The [module](super)'s functions for an optional token: `None` is `null` (or, with
/// `#[serde(default)]`, an absent field), `Some` is the client form. A create form has
/// no version yet; an update form carries one.
///
/// ```
/// #[derive(Debug, serde::Deserialize)]
/// struct Body {
///     #[serde(default, with = "diesel_occ::serde_token::option")]
///     version: Option<i32>,
/// }
///
/// let create: Body = serde_json::from_str("{}").unwrap();
/// assert_eq!(create.version, None);
/// let update: Body = serde_json::from_str(r#"{"version": "4"}"#).unwrap();
/// assert_eq!(update.version, Some(4));
/// assert!(serde_json::from_str::<Body>(r#"{"version": ""}"#).is_err());
/// ```
pub mod option {
    use serde::{Deserialize, Deserializer, Serialize, Serializer};

    use super::Encoded;
    use crate::token::VersionToken;

    /// Serializes `None` as none (`null`), `Some(token)` as its client form.
    ///
    /// ```
    /// #[derive(serde::Serialize)]
    /// struct Body {
    ///     #[serde(with = "diesel_occ::serde_token::option")]
    ///     version: Option<i32>,
    /// }
    ///
    /// let json = serde_json::to_string(&Body { version: None }).unwrap();
    /// assert_eq!(json, r#"{"version":null}"#);
    /// ```
    pub fn serialize<T: VersionToken, S: Serializer>(
        token: &Option<T>,
        serializer: S,
    ) -> Result<S::Ok, S::Error> {
        match token {
            Some(token) => serializer.serialize_some(&Borrowed(token)),
            None => serializer.serialize_none(),
        }
    }

    /// A borrowed token, serialized as its client form.
    struct Borrowed<'a, T>(&'a T);

    impl<T: VersionToken> Serialize for Borrowed<'_, T> {
        fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
            super::serialize(self.0, serializer)
        }
    }

    /// Deserializes none (`null`) as `None`, a client form as `Some`; anything else is
    /// an error, as for a required token.
    ///
    /// ```
    /// #[derive(Debug, serde::Deserialize)]
    /// struct Body {
    ///     #[serde(with = "diesel_occ::serde_token::option")]
    ///     version: Option<i64>,
    /// }
    ///
    /// let body: Body = serde_json::from_str(r#"{"version": null}"#).unwrap();
    /// assert_eq!(body.version, None);
    /// assert!(serde_json::from_str::<Body>(r#"{"version": 4}"#).is_err());
    /// ```
    pub fn deserialize<'de, T: VersionToken, D: Deserializer<'de>>(
        deserializer: D,
    ) -> Result<Option<T>, D::Error> {
        Ok(Option::<Encoded<T>>::deserialize(deserializer)?.map(|Encoded(token)| token))
    }
}

/// The client form, as this module writes every token: the hyphenated UUID.
#[cfg(feature = "uuid")]
impl serde::Serialize for UuidToken {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serialize(self, serializer)
    }
}

/// From the client form only, as [`VersionToken::decode`] reads it: the nil UUID, a
/// malformed or oversized text is an error.
#[cfg(feature = "uuid")]
impl<'de> serde::Deserialize<'de> for UuidToken {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserialize(deserializer)
    }
}

#[cfg(test)]
mod tests;
