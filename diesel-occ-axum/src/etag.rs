//! [`ETag`]: an entity-tag, built from a version token or read from a request, and the
//! `ETag` part of a response.

use std::fmt;

use axum_core::response::{IntoResponse, IntoResponseParts, Response, ResponseParts};
use diesel_occ::{TokenValue, VersionToken};
use http::HeaderValue;
use http::header::ETAG;

/// An entity-tag (RFC 9110, section 8.8.3): `"<opaque>"`, or `W/"<opaque>"` when weak.
///
/// A version token's ETag is strong and holds the token's client form
/// ([`VersionToken::encode`]): `"42"`, `"6f1c2a4e-1f7e-4a53-9a57-2d1b1f0c3e11"`. As a
/// response part it sets the `ETag` header:
///
/// ```
/// use axum::response::IntoResponse;
/// use diesel_occ_axum::ETag;
///
/// let response = (ETag::from_token(&7_i32), "the representation").into_response();
/// assert_eq!(response.headers()["etag"], "\"7\"");
/// assert_eq!(ETag::from_token(&7_i32).to_string(), "\"7\"");
/// ```
#[derive(Clone, PartialEq, Eq, Hash)]
pub struct ETag {
    weak: bool,
    /// Only `etagc` bytes: checked by the parser, true of every token's client form.
    opaque: Vec<u8>,
}

impl ETag {
    /// The strong ETag of a token.
    ///
    /// ```
    /// use diesel_occ_axum::ETag;
    ///
    /// let tag = ETag::from_token(&3_i64);
    /// assert!(!tag.is_weak());
    /// assert_eq!(tag.opaque(), b"3");
    /// ```
    pub fn from_token<T: VersionToken>(token: &T) -> ETag {
        ETag::from_text(token.encode())
    }

    /// The strong ETag of an untyped token, as a [`ConcurrencyConflict`] holds the
    /// row's current one: the same tag as [`from_token`](Self::from_token) of the
    /// typed token.
    ///
    /// ```
    /// use diesel_occ::VersionToken;
    /// use diesel_occ_axum::ETag;
    ///
    /// assert_eq!(ETag::from_value(&5_i16.to_value()), ETag::from_token(&5_i16));
    /// ```
    ///
    /// [`ConcurrencyConflict`]: diesel_occ::ConcurrencyConflict
    pub fn from_value(value: &TokenValue) -> ETag {
        // `VersionToken::encode` is this same rendering of the token's value.
        ETag::from_text(value.to_string())
    }

    /// A token's client form never holds a space or a double quote; should one ever do,
    /// the bytes that are not `etagc` are dropped rather than producing a header that
    /// cannot be sent or read back.
    fn from_text(text: String) -> ETag {
        let mut opaque = text.into_bytes();
        opaque.retain(|b| is_etagc(*b));
        ETag {
            weak: false,
            opaque,
        }
    }

    pub(crate) fn from_parts(weak: bool, opaque: Vec<u8>) -> ETag {
        ETag { weak, opaque }
    }

    /// The same tag, weak (`W/"..."`).
    ///
    /// ```
    /// use diesel_occ_axum::ETag;
    ///
    /// assert_eq!(ETag::from_token(&1_i32).into_weak().to_string(), "W/\"1\"");
    /// ```
    pub fn into_weak(self) -> ETag {
        ETag { weak: true, ..self }
    }

    /// True for `W/"..."`.
    ///
    /// ```
    /// use diesel_occ_axum::ETag;
    ///
    /// assert!(ETag::from_token(&1_i32).into_weak().is_weak());
    /// ```
    pub fn is_weak(&self) -> bool {
        self.weak
    }

    /// What is between the quotes.
    ///
    /// ```
    /// use diesel_occ_axum::ETag;
    ///
    /// assert_eq!(ETag::from_token(&12_i32).opaque(), b"12");
    /// ```
    pub fn opaque(&self) -> &[u8] {
        &self.opaque
    }

    /// Strong comparison (RFC 9110, section 8.8.3.2), the one `If-Match` uses: both tags
    /// strong, and the same opaque-tag.
    ///
    /// ```
    /// use diesel_occ_axum::ETag;
    ///
    /// let tag = ETag::from_token(&1_i32);
    /// assert!(tag.strong_eq(&ETag::from_token(&1_i32)));
    /// assert!(!tag.strong_eq(&tag.clone().into_weak()));
    /// ```
    pub fn strong_eq(&self, other: &ETag) -> bool {
        !self.weak && !other.weak && self.opaque == other.opaque
    }

    /// Weak comparison, the one `If-None-Match` uses: the same opaque-tag, weak or not.
    ///
    /// ```
    /// use diesel_occ_axum::ETag;
    ///
    /// let tag = ETag::from_token(&1_i32);
    /// assert!(tag.weak_eq(&tag.clone().into_weak()));
    /// assert!(!tag.weak_eq(&ETag::from_token(&2_i32)));
    /// ```
    pub fn weak_eq(&self, other: &ETag) -> bool {
        self.opaque == other.opaque
    }

    /// The token this tag names: `None` when it is weak (a weak tag names no exact
    /// version), or when its opaque-tag is not, octet for octet, the tag of a `T`.
    ///
    /// Strong comparison is character by character (RFC 9110, section 8.8.3.2), so
    /// `"01"` names no token even though it reads as the number 1: the server never
    /// issued it.
    ///
    /// ```
    /// use diesel_occ_axum::{ETag, IfMatch};
    ///
    /// assert_eq!(ETag::from_token(&9_i64).to_token::<i64>(), Some(9));
    /// assert_eq!(ETag::from_token(&9_i64).into_weak().to_token::<i64>(), None);
    /// let sent = IfMatch::from_header_lines([&b"\"09\""[..]]).unwrap();
    /// assert_eq!(sent.tags()[0].to_token::<i64>(), None);
    /// ```
    pub fn to_token<T: VersionToken>(&self) -> Option<T> {
        if self.weak {
            return None;
        }
        self.opaque_token()
    }

    /// The `T` whose tag has this opaque-tag exactly, weak or not.
    pub(crate) fn opaque_token<T: VersionToken>(&self) -> Option<T> {
        let text = std::str::from_utf8(&self.opaque).ok()?;
        let token = T::decode(text).ok()?;
        // `decode` is lenient ("01", "+1", upper-case hex); only the issued form names it.
        (ETag::from_token(&token).opaque == self.opaque).then_some(token)
    }

    /// The tag as a header value.
    ///
    /// ```
    /// use diesel_occ_axum::ETag;
    ///
    /// assert_eq!(ETag::from_token(&4_i32).to_header_value(), "\"4\"");
    /// ```
    pub fn to_header_value(&self) -> HeaderValue {
        let mut bytes = Vec::with_capacity(self.opaque.len() + 4);
        if self.weak {
            bytes.extend_from_slice(b"W/");
        }
        bytes.push(b'"');
        bytes.extend_from_slice(&self.opaque);
        bytes.push(b'"');
        // Only `etagc` bytes between the quotes: always a valid header value.
        HeaderValue::from_bytes(&bytes).unwrap_or_else(|_| HeaderValue::from_static("\"\""))
    }
}

impl fmt::Display for ETag {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.weak {
            f.write_str("W/")?;
        }
        write!(f, "\"{}\"", String::from_utf8_lossy(&self.opaque))
    }
}

impl fmt::Debug for ETag {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "ETag({self})")
    }
}

impl IntoResponseParts for ETag {
    type Error = std::convert::Infallible;

    fn into_response_parts(self, mut res: ResponseParts) -> Result<ResponseParts, Self::Error> {
        res.headers_mut().insert(ETAG, self.to_header_value());
        Ok(res)
    }
}

/// A response of its own: 200 with the `ETag` and no body (a write's answer).
impl IntoResponse for ETag {
    fn into_response(self) -> Response {
        (self, ()).into_response()
    }
}

/// `etagc` (RFC 9110, 8.8.3): `!`, `#` to `~`, or obs-text (0x80 to 0xFF), the bytes an
/// entity-tag's opaque part may hold.
pub(crate) fn is_etagc(byte: u8) -> bool {
    byte == 0x21 || (0x23..=0x7e).contains(&byte) || byte >= 0x80
}
