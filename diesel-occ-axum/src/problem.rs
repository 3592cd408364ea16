//! [`Problem`]: an error response in RFC 9457's `application/problem+json`, and how
//! each of diesel-occ's errors becomes one.
//!
//! # Status codes
//!
//! This table is the one home of the mapping from diesel-occ's outcomes to HTTP status
//! codes; the runtime crate's docs point here.
//!
//! | outcome | status | `code` | made by |
//! |---|---|---|---|
//! | a write without `If-Match` (or with `*` under [`Settings::require_tag`](crate::Settings::require_tag)) | 428 Precondition Required | `precondition_required` | [`IfMatch`](crate::IfMatch) extraction |
//! | `If-Match` / `If-None-Match` not `*` nor a list of entity-tags | 400 Bad Request | `malformed_if_match`, `malformed_if_none_match` | extraction |
//! | the resource's version is not among the `If-Match` tags (a stale tag, a weak one, one naming no token): checked before the write, or by the write's own predicate (a [`ConflictState::Stale`] conflict of any checked write, `update_by_key`, `delete_by_key`, `upsert_checked`, `save_checked`, `soft_delete_checked`, ...) | 412 Precondition Failed, with the current `ETag` | `precondition_failed` | [`IfMatch::check`](crate::IfMatch::check), [`IfMatch::problem`](crate::IfMatch::problem), `From<Error>` (so `?`) |
//! | `If-Match: *` and the resource does not exist; `If-None-Match: *` and it does (a taken key under it) | 412 Precondition Failed | `precondition_failed` | [`IfMatch::problem`](crate::IfMatch::problem), [`Preconditions`](crate::Preconditions) |
//! | `If-None-Match` matches on `GET`/`HEAD` | 304 Not Modified, with the `ETag` and the cache headers of the 200 | (no body) | [`IfNoneMatch::respond`](crate::IfNoneMatch::respond), [`Preconditions`](crate::Preconditions) |
//! | `If-None-Match` matches on any other method | 412 Precondition Failed | `precondition_failed` | [`IfNoneMatch::respond`](crate::IfNoneMatch::respond), [`Preconditions`](crate::Preconditions) |
//! | a write's conflict that no client precondition explains ([`ConflictState::Unmatched`], [`Error::RetriesExhausted`] after conflicts, [`Error::Batch`]) | 409 Conflict | `conflict` | `From<Error>` |
//! | a taken key ([`Error::UniqueViolation`] from `insert_checked` / `upsert_checked`) | 409 Conflict | `already_exists` | `From<Error>` |
//! | [`Error::NotFound`], a conflict whose row was deleted | 404 Not Found | `not_found` | `From<Error>` |
//! | [`Error::InvalidToken`] (a token from a body or form field that is not a token) | 400 Bad Request | `invalid_token` | `From<Error>` |
//! | a transient database error ([`Error::is_transient`]), [`Error::RetriesExhausted`] after one, [`Error::Pool`], a pool's own error (features `deadpool`, `bb8`, `r2d2`) | 503 Service Unavailable, with `Retry-After` | `unavailable` | `From<Error>`, `From` the pool errors |
//! | anything else (a database failure, a non-unique key, a schema problem) | 500 Internal Server Error | `internal` | `From<Error>` |
//!
//! A stale conflict is 412 whichever write met it: every write behind
//! [`IfMatch`](crate::IfMatch) is conditional, and when its row moved on between the
//! check and the write, the client's tag no longer names the current version. A
//! handler that writes without any precondition should run in the retry helper, whose
//! exhausted retries are 409.
//!
//! A body never holds SQL, table names, key values or driver text: its `detail` is one
//! of this crate's fixed sentences, and the error itself goes to the log (`tracing`,
//! target `diesel_occ_axum`: DEBUG for 409 and 412 (the conflict itself is traced by
//! diesel-occ), WARN for 503, ERROR for 500).

use std::borrow::Cow;
use std::time::Duration;

use axum_core::response::{IntoResponse, Response};
use diesel_occ::{ConflictState, Error};
use http::header::{CACHE_CONTROL, CONTENT_TYPE, ETAG, IF_MATCH, RETRY_AFTER};
use http::{HeaderName, HeaderValue, StatusCode};

use crate::etag::ETag;

/// An error response: `application/problem+json` (RFC 9457) with `type`
/// (`about:blank`), `title` (the status's reason phrase), `status`, `detail`, and a
/// `code` member for programs, plus the current `ETag` on a 412 that knows it.
///
/// `From<diesel_occ::Error>` maps the library's errors as the
/// [table](crate::problem#status-codes) says, so `?` works in a handler that returns
/// `Result<_, Problem>`. [`Problem::new`] makes one for the service's own errors.
///
/// ```
/// use axum::response::IntoResponse;
/// use diesel_occ_axum::Problem;
///
/// let response = Problem::not_found().into_response();
/// assert_eq!(response.status(), 404);
/// assert_eq!(response.headers()["content-type"], "application/problem+json");
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Problem {
    status: StatusCode,
    code: Cow<'static, str>,
    detail: Cow<'static, str>,
    etag: Option<ETag>,
    retry_after: Option<Duration>,
}

/// How long [`Problem::unavailable`] asks a client to wait: a pool timeout or a busy
/// database usually clears within that.
const RETRY_AFTER_SECONDS: u64 = 1;

impl Problem {
    /// A problem of the service's own: its status, a `code` for programs and a
    /// `detail` for people (never a database's or driver's text).
    ///
    /// ```
    /// use axum::http::StatusCode;
    /// use diesel_occ_axum::Problem;
    ///
    /// let invalid = Problem::new(StatusCode::UNPROCESSABLE_ENTITY, "invalid_body", "The title is empty.");
    /// assert_eq!((invalid.status().as_u16(), invalid.code()), (422, "invalid_body"));
    /// ```
    pub fn new(
        status: StatusCode,
        code: impl Into<Cow<'static, str>>,
        detail: impl Into<Cow<'static, str>>,
    ) -> Problem {
        Problem {
            status,
            code: code.into(),
            detail: detail.into(),
            etag: None,
            retry_after: None,
        }
    }

    /// 428: a write came without `If-Match`.
    ///
    /// ```
    /// assert_eq!(diesel_occ_axum::Problem::precondition_required().status(), 428);
    /// ```
    pub fn precondition_required() -> Problem {
        Problem::new(
            StatusCode::PRECONDITION_REQUIRED,
            "precondition_required",
            "This write needs an If-Match header with the resource's ETag, from a GET.",
        )
    }

    /// 400: the header `name` is not `*` nor a list of entity-tags.
    ///
    /// ```
    /// use axum::http::header::IF_MATCH;
    ///
    /// let malformed = diesel_occ_axum::Problem::malformed_header(IF_MATCH);
    /// assert_eq!((malformed.status().as_u16(), malformed.code()), (400, "malformed_if_match"));
    /// ```
    pub fn malformed_header(name: HeaderName) -> Problem {
        let (code, detail) = if name == IF_MATCH {
            (
                "malformed_if_match",
                "If-Match must be \"*\" or a list of ETags as a GET returned them, quotes included.",
            )
        } else {
            (
                "malformed_if_none_match",
                "If-None-Match must be \"*\" or a list of ETags as a GET returned them, quotes included.",
            )
        };
        Problem::new(StatusCode::BAD_REQUEST, code, detail)
    }

    /// 412: the resource's version is not one the client named; `current` is its ETag
    /// (`None` when it does not exist).
    ///
    /// ```
    /// use diesel_occ_axum::{ETag, Problem};
    ///
    /// let failed = Problem::precondition_failed(Some(ETag::from_token(&2_i32)));
    /// assert_eq!(failed.etag(), Some(&ETag::from_token(&2_i32)));
    /// ```
    pub fn precondition_failed(current: Option<ETag>) -> Problem {
        let detail = match current {
            Some(_) => {
                "The resource changed since the ETag you sent. Its current ETag is in this \
                 response: GET it again, re-apply your change and retry with that ETag."
            }
            None => "The resource does not exist, so If-Match cannot match.",
        };
        Problem {
            etag: current,
            ..Problem::new(
                StatusCode::PRECONDITION_FAILED,
                "precondition_failed",
                detail,
            )
        }
    }

    /// 409: a write met a concurrent change that no client precondition explains
    /// (retries exhausted, a conflict under `If-Match: *`). Nothing was written.
    ///
    /// ```
    /// assert_eq!(diesel_occ_axum::Problem::conflict().status(), 409);
    /// ```
    pub fn conflict() -> Problem {
        Problem::new(
            StatusCode::CONFLICT,
            "conflict",
            "The resource was changed by someone else while this write was being saved; \
             nothing was written. GET it again and retry.",
        )
    }

    /// 304 Not Modified with the current ETag: a `GET` whose client holds the current
    /// version. Rendered without a body (RFC 9110, section 15.4.5), so not a problem
    /// document; made by [`Preconditions::check`](crate::Preconditions::check) so that
    /// `?` answers it.
    pub(crate) fn not_modified(current: ETag) -> Problem {
        Problem {
            etag: Some(current),
            ..Problem::new(StatusCode::NOT_MODIFIED, "not_modified", "")
        }
    }

    /// 404: no such resource.
    ///
    /// ```
    /// assert_eq!(diesel_occ_axum::Problem::not_found().code(), "not_found");
    /// ```
    pub fn not_found() -> Problem {
        Problem::new(StatusCode::NOT_FOUND, "not_found", "No such resource.")
    }

    /// 503: the database is busy or unreachable; worth retrying shortly. The response
    /// carries `Retry-After: 1` (RFC 9110, section 10.2.3).
    ///
    /// ```
    /// use std::time::Duration;
    /// use axum::response::IntoResponse;
    ///
    /// let busy = diesel_occ_axum::Problem::unavailable();
    /// assert_eq!(busy.retry_after(), Some(Duration::from_secs(1)));
    /// assert_eq!(busy.into_response().headers()["retry-after"], "1");
    /// ```
    pub fn unavailable() -> Problem {
        Problem {
            retry_after: Some(Duration::from_secs(RETRY_AFTER_SECONDS)),
            ..Problem::new(
                StatusCode::SERVICE_UNAVAILABLE,
                "unavailable",
                "The service is busy. Retry shortly.",
            )
        }
    }

    /// 409: the key of a create is taken (a unique violation of `insert_checked` or
    /// `upsert_checked`). Under `If-None-Match: *` the same outcome is a failed
    /// precondition: [`Preconditions`](crate::Preconditions) answers 412.
    ///
    /// ```
    /// let taken = diesel_occ_axum::Problem::already_exists();
    /// assert_eq!((taken.status().as_u16(), taken.code()), (409, "already_exists"));
    /// ```
    pub fn already_exists() -> Problem {
        Problem::new(
            StatusCode::CONFLICT,
            "already_exists",
            "A resource with this key exists already; nothing was written. GET it, or \
             create under another key.",
        )
    }

    /// 500: anything else; the details are in the server's log only.
    ///
    /// ```
    /// assert_eq!(diesel_occ_axum::Problem::internal().status(), 500);
    /// ```
    pub fn internal() -> Problem {
        Problem::new(
            StatusCode::INTERNAL_SERVER_ERROR,
            "internal",
            "Internal error.",
        )
    }

    /// The status.
    ///
    /// ```
    /// assert_eq!(diesel_occ_axum::Problem::conflict().status(), 409);
    /// ```
    pub fn status(&self) -> StatusCode {
        self.status
    }

    /// The `code` member.
    ///
    /// ```
    /// assert_eq!(diesel_occ_axum::Problem::conflict().code(), "conflict");
    /// ```
    pub fn code(&self) -> &str {
        &self.code
    }

    /// The `detail` member.
    ///
    /// ```
    /// assert!(diesel_occ_axum::Problem::internal().detail().starts_with("Internal"));
    /// ```
    pub fn detail(&self) -> &str {
        &self.detail
    }

    /// The `ETag` the response carries (a 412 with the resource's current version).
    ///
    /// ```
    /// assert_eq!(diesel_occ_axum::Problem::conflict().etag(), None);
    /// ```
    pub fn etag(&self) -> Option<&ETag> {
        self.etag.as_ref()
    }

    /// The `Retry-After` the response carries (a 503).
    ///
    /// ```
    /// assert_eq!(diesel_occ_axum::Problem::conflict().retry_after(), None);
    /// ```
    pub fn retry_after(&self) -> Option<Duration> {
        self.retry_after
    }
}

impl IntoResponse for Problem {
    fn into_response(self) -> Response {
        if self.status == StatusCode::NOT_MODIFIED {
            let mut response = self.status.into_response();
            if let Some(etag) = &self.etag {
                response.headers_mut().insert(ETAG, etag.to_header_value());
            }
            return response;
        }
        let body = serde_json::json!({
            "type": "about:blank",
            "title": self.status.canonical_reason().unwrap_or("Error"),
            "status": self.status.as_u16(),
            "detail": self.detail,
            "code": self.code,
        });
        let mut response = (self.status, body.to_string()).into_response();
        let headers = response.headers_mut();
        headers.insert(
            CONTENT_TYPE,
            HeaderValue::from_static("application/problem+json"),
        );
        if let Some(etag) = &self.etag {
            headers.insert(ETAG, etag.to_header_value());
        }
        if self.status == StatusCode::PRECONDITION_REQUIRED {
            // RFC 6585, section 3: a 428 must not be stored by a cache.
            headers.insert(CACHE_CONTROL, HeaderValue::from_static("no-store"));
        }
        if let Some(after) = self.retry_after {
            headers.insert(RETRY_AFTER, HeaderValue::from(after.as_secs()));
        }
        response
    }
}

impl From<Error> for Problem {
    /// Maps an error as the [table](crate::problem#status-codes) says, and logs those
    /// that become 500 or 503.
    fn from(error: Error) -> Problem {
        let problem = match &error {
            Error::Conflict(conflict) => match conflict.state() {
                ConflictState::Deleted => Problem::not_found(),
                ConflictState::Stale { current } => {
                    Problem::precondition_failed(Some(ETag::from_value(current)))
                }
                _ => Problem::conflict(),
            },
            Error::UniqueViolation(_) => Problem::already_exists(),
            Error::NotFound(_) => Problem::not_found(),
            Error::InvalidToken(_) => Problem::new(
                StatusCode::BAD_REQUEST,
                "invalid_token",
                "The version token sent is not one this service issues.",
            ),
            Error::Batch(_) => Problem::conflict(),
            Error::RetriesExhausted(exhausted) if exhausted.last_conflict().is_some() => {
                Problem::conflict()
            }
            Error::RetriesExhausted(_) | Error::Pool(_) => {
                tracing::warn!(target: "diesel_occ_axum", error = %error, "answered 503");
                Problem::unavailable()
            }
            _ if error.is_transient() => {
                tracing::warn!(target: "diesel_occ_axum", error = %error, "answered 503");
                Problem::unavailable()
            }
            _ => {
                tracing::error!(target: "diesel_occ_axum", error = %error, "answered 500");
                Problem::internal()
            }
        };
        if problem.status.is_client_error() {
            tracing::debug!(target: "diesel_occ_axum", error = %error, status = problem.status.as_u16(), "answered");
        }
        problem
    }
}

#[cfg(test)]
mod tests;
