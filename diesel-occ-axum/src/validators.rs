//! [`Validators`]: what a response says about the version it carries (`ETag`,
//! `Last-Modified`) and the headers its 200 and its 304 share.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use axum_core::response::{IntoResponse, IntoResponseParts, Response, ResponseParts};
use diesel_occ::VersionToken;
use http::header::{CACHE_CONTROL, CONTENT_LOCATION, DATE, ETAG, EXPIRES, LAST_MODIFIED, VARY};
use http::{HeaderMap, HeaderName, HeaderValue, StatusCode};

use crate::etag::ETag;

/// The headers a 304 carries when the 200 would (RFC 9110, section 15.4.5); the ETag is
/// set on its own. `Last-Modified` is left out: with an ETag it guides no cache.
const KEPT_ON_304: [HeaderName; 5] = [CACHE_CONTROL, CONTENT_LOCATION, DATE, EXPIRES, VARY];

/// A version's validators and the headers its answers share: the representation's 200
/// and the 304 that stands for it carry the same `ETag`, `Cache-Control`, `Vary`,
/// `Content-Location`, `Expires` and `Date`, built once.
///
/// [`of`](Self::of) a timestamp token also gives `Last-Modified` (and makes
/// `If-Modified-Since` and `If-Unmodified-Since` usable, see
/// [`Preconditions`](crate::Preconditions)). HTTP dates are whole seconds, so the header
/// is the token rounded down; a token with a fraction of a second is later than that
/// date, so `If-Unmodified-Since` never lets a write through on it (it fails with 412).
/// Only whole-second tokens (`timestamp(0)`, `DATETIME`, `#[occ(precision = 0)]`),
/// which diesel-occ draws at least one second apart, make it a usable write
/// precondition. Integer and UUID tokens have no date: no `Last-Modified`.
///
/// ```
/// use axum::response::IntoResponse;
/// use axum::http::header::{CACHE_CONTROL, VARY};
/// use axum::http::HeaderValue;
/// use diesel_occ_axum::Validators;
///
/// let answer = Validators::of(&7_i32)
///     .header(CACHE_CONTROL, HeaderValue::from_static("private, max-age=0"))
///     .header(VARY, HeaderValue::from_static("accept"));
/// let response = (answer, "the body").into_response();
/// assert_eq!(response.headers()["etag"], "\"7\"");
/// assert_eq!(response.headers()["vary"], "accept");
/// ```
#[derive(Debug, Clone)]
pub struct Validators {
    etag: ETag,
    modified: Option<SystemTime>,
    headers: HeaderMap,
}

impl Validators {
    /// The validators of a version token: its strong ETag, and `Last-Modified` when it
    /// is a timestamp.
    ///
    /// ```
    /// use std::time::{Duration, SystemTime};
    /// use diesel_occ_axum::Validators;
    ///
    /// assert_eq!(Validators::of(&3_i64).etag().to_string(), "\"3\"");
    /// assert_eq!(Validators::of(&3_i64).last_modified(), None);
    /// # #[cfg(feature = "chrono")] {
    /// let stamp = chrono::DateTime::from_timestamp(1_000_000_000, 250_000_000).unwrap();
    /// let second = SystemTime::UNIX_EPOCH + Duration::from_secs(1_000_000_000);
    /// assert_eq!(Validators::of(&stamp).last_modified(), Some(second));
    /// # }
    /// ```
    pub fn of<T: VersionToken>(token: &T) -> Validators {
        Validators {
            etag: ETag::from_token(token),
            modified: token.to_value().to_system_time(),
            headers: HeaderMap::new(),
        }
    }

    /// Adds a header both answers carry (on a 304 only those RFC 9110 lists:
    /// `Cache-Control`, `Content-Location`, `Date`, `Expires`, `Vary`).
    ///
    /// ```
    /// use axum::http::header::CACHE_CONTROL;
    /// use axum::http::HeaderValue;
    /// use diesel_occ_axum::Validators;
    ///
    /// let answer = Validators::of(&1_i32).header(CACHE_CONTROL, HeaderValue::from_static("no-cache"));
    /// assert_eq!(answer.headers()[CACHE_CONTROL], "no-cache");
    /// ```
    pub fn header(mut self, name: HeaderName, value: HeaderValue) -> Validators {
        self.headers.append(name, value);
        self
    }

    /// The ETag.
    ///
    /// ```
    /// use diesel_occ_axum::{ETag, Validators};
    ///
    /// assert_eq!(Validators::of(&2_i32).etag(), &ETag::from_token(&2_i32));
    /// ```
    pub fn etag(&self) -> &ETag {
        &self.etag
    }

    /// `Last-Modified` as sent: the timestamp token rounded down to its second.
    ///
    /// ```
    /// use diesel_occ_axum::Validators;
    ///
    /// assert_eq!(Validators::of(&2_i32).last_modified(), None);
    /// ```
    pub fn last_modified(&self) -> Option<SystemTime> {
        self.modified.map(whole_second)
    }

    /// The token's instant, to the fraction: what `If-Unmodified-Since` is compared with.
    pub(crate) fn modified(&self) -> Option<SystemTime> {
        self.modified
    }

    /// The headers added with [`header`](Self::header).
    ///
    /// ```
    /// use diesel_occ_axum::Validators;
    ///
    /// assert!(Validators::of(&2_i32).headers().is_empty());
    /// ```
    pub fn headers(&self) -> &HeaderMap {
        &self.headers
    }

    /// 304 Not Modified: no body, the ETag and the headers RFC 9110 keeps on a 304.
    pub(crate) fn not_modified(self) -> Response {
        let mut response = StatusCode::NOT_MODIFIED.into_response();
        let headers = response.headers_mut();
        headers.insert(ETAG, self.etag.to_header_value());
        for name in KEPT_ON_304 {
            for value in self.headers.get_all(&name) {
                headers.append(name.clone(), value.clone());
            }
        }
        response
    }
}

/// Only the ETag: what [`IfNoneMatch::respond`](crate::IfNoneMatch::respond) took before
/// it took validators.
impl From<ETag> for Validators {
    fn from(etag: ETag) -> Validators {
        Validators {
            etag,
            modified: None,
            headers: HeaderMap::new(),
        }
    }
}

/// The parts of the 200: every header, the `ETag` and `Last-Modified`.
impl IntoResponseParts for Validators {
    type Error = std::convert::Infallible;

    fn into_response_parts(self, mut res: ResponseParts) -> Result<ResponseParts, Self::Error> {
        let last_modified = self.last_modified();
        let headers = res.headers_mut();
        headers.extend(self.headers);
        headers.insert(ETAG, self.etag.to_header_value());
        if let Some(at) = last_modified {
            headers.insert(LAST_MODIFIED, http_date(at));
        }
        Ok(res)
    }
}

/// A response of its own: 200 with the headers and no body (a write's answer).
impl IntoResponse for Validators {
    fn into_response(self) -> Response {
        (self, ()).into_response()
    }
}

/// `at` rounded down to its second, as an HTTP date can say it.
pub(crate) fn whole_second(at: SystemTime) -> SystemTime {
    match at.duration_since(UNIX_EPOCH) {
        Ok(since) => UNIX_EPOCH + Duration::from_secs(since.as_secs()),
        // Before 1970 an HTTP date cannot say it either; the second is as close.
        Err(_) => at,
    }
}

/// An IMF-fixdate (RFC 9110, section 5.6.7).
fn http_date(at: SystemTime) -> HeaderValue {
    let text = httpdate::fmt_http_date(at);
    // Only ASCII letters, digits, spaces, commas and colons.
    HeaderValue::from_str(&text).unwrap_or_else(|_| HeaderValue::from_static(""))
}
