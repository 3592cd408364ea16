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
//! | the resource's version is not among the `If-Match` tags (a stale tag, a weak one, one naming no token): checked before the write, or by the write's own predicate ([`ConflictState::Stale`] under a tagged `If-Match`, a [`find_checked`](diesel_occ::CheckedDsl::find_checked) conflict) | 412 Precondition Failed, with the current `ETag` | `precondition_failed` | [`IfMatch::check`](crate::IfMatch::check), [`IfMatch::problem`](crate::IfMatch::problem), `From<Error>` |
//! | `If-Match: *` and the resource does not exist | 412 Precondition Failed | `precondition_failed` | [`IfMatch::problem`](crate::IfMatch::problem) |
//! | `If-None-Match` matches on `GET`/`HEAD` | 304 Not Modified, with the `ETag` | (no body) | [`IfNoneMatch::respond`](crate::IfNoneMatch::respond) |
//! | a write's conflict that no client precondition explains ([`Error::Conflict`] of a write, [`Error::RetriesExhausted`] after conflicts, [`Error::Batch`]) | 409 Conflict | `conflict` | `From<Error>` |
//! | [`Error::NotFound`], a conflict whose row was deleted | 404 Not Found | `not_found` | `From<Error>` |
//! | [`Error::InvalidToken`] (a token from a body or form field that is not a token) | 400 Bad Request | `invalid_token` | `From<Error>` |
//! | a transient database error ([`Error::is_transient`]), [`Error::RetriesExhausted`] after one, [`Error::Pool`] | 503 Service Unavailable | `unavailable` | `From<Error>` |
//! | anything else (a database failure, a non-unique key, a schema problem) | 500 Internal Server Error | `internal` | `From<Error>` |
//!
//! A body never holds SQL, table names, key values or driver text: its `detail` is one
//! of this crate's fixed sentences, and the error itself goes to the log (`tracing`,
//! target `diesel_occ_axum`: WARN for 503, ERROR for 500).

use std::borrow::Cow;

use axum_core::response::{IntoResponse, Response};
use diesel_occ::{ConflictState, Error, Operation};
use http::header::{CONTENT_TYPE, ETAG, IF_MATCH};
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
}

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

    /// 404: no such resource.
    ///
    /// ```
    /// assert_eq!(diesel_occ_axum::Problem::not_found().code(), "not_found");
    /// ```
    pub fn not_found() -> Problem {
        Problem::new(StatusCode::NOT_FOUND, "not_found", "No such resource.")
    }

    /// 503: the database is busy or unreachable; worth retrying shortly.
    ///
    /// ```
    /// assert_eq!(diesel_occ_axum::Problem::unavailable().status(), 503);
    /// ```
    pub fn unavailable() -> Problem {
        Problem::new(
            StatusCode::SERVICE_UNAVAILABLE,
            "unavailable",
            "The service is busy. Retry shortly.",
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
}

impl IntoResponse for Problem {
    fn into_response(self) -> Response {
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
        response
    }
}

impl From<Error> for Problem {
    /// Maps an error as the [table](crate::problem#status-codes) says, and logs those
    /// that become 500 or 503.
    fn from(error: Error) -> Problem {
        match &error {
            Error::Conflict(conflict) => match conflict.state() {
                ConflictState::Deleted => Problem::not_found(),
                ConflictState::Stale { current }
                    if conflict.operation() == Operation::ClientToken =>
                {
                    Problem::precondition_failed(Some(ETag::from_value(current)))
                }
                _ => Problem::conflict(),
            },
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
        }
    }
}

#[cfg(test)]
mod tests;
