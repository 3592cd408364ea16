//! The service's error responses, and how a library error becomes one.

use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use diesel_occ::Error as OccError;

/// Every error response: a status and a JSON body `{"error": code, "message": text}`
/// written here, never taken from a database or driver.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ApiError {
    /// 428: a write without `If-Match`.
    PreconditionRequired,
    /// 400: `If-Match` is not a list of this service's ETags.
    MalformedIfMatch,
    /// 412: the ETag is stale (or only weak tags were sent).
    PreconditionFailed,
    /// 409: the row changed between PATCH's precondition check and its save.
    Conflict,
    /// 404: no such article.
    NotFound,
    /// 422: the JSON body is not what the route expects.
    InvalidBody,
    /// 503: no database connection could be had.
    Unavailable,
    /// 500: anything else; details are in the server's log only.
    Internal,
}

impl ApiError {
    /// The status, the code and the message.
    pub fn parts(self) -> (StatusCode, &'static str, &'static str) {
        match self {
            ApiError::PreconditionRequired => (
                StatusCode::PRECONDITION_REQUIRED,
                "precondition_required",
                "This write needs an If-Match header with the ETag of the article, from a GET.",
            ),
            ApiError::MalformedIfMatch => (
                StatusCode::BAD_REQUEST,
                "malformed_if_match",
                "If-Match must hold the ETag of the article as returned by GET, quotes included.",
            ),
            ApiError::PreconditionFailed => (
                StatusCode::PRECONDITION_FAILED,
                "precondition_failed",
                "The article changed since you read it. GET it again and retry with the new ETag.",
            ),
            ApiError::Conflict => (
                StatusCode::CONFLICT,
                "conflict",
                "The article was changed by someone else while your write was being saved; \
                 nothing was written. GET it again, re-apply your change and retry with the new ETag.",
            ),
            ApiError::NotFound => (StatusCode::NOT_FOUND, "not_found", "No such article."),
            ApiError::InvalidBody => (
                StatusCode::UNPROCESSABLE_ENTITY,
                "invalid_body",
                "The body must be JSON with string fields title (1 to 200 characters) and body \
                 (at most 10000 bytes).",
            ),
            ApiError::Unavailable => (
                StatusCode::SERVICE_UNAVAILABLE,
                "unavailable",
                "The service is busy. Retry shortly.",
            ),
            ApiError::Internal => (
                StatusCode::INTERNAL_SERVER_ERROR,
                "internal",
                "Internal error.",
            ),
        }
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let (status, code, message) = self.parts();
        let body = serde_json::json!({ "error": code, "message": message });
        (status, axum::Json(body)).into_response()
    }
}

impl ApiError {
    /// An error of a statement that checks the client's token: reading the row with it,
    /// or a PUT or DELETE by key. A token the row no longer holds is 412.
    pub(super) fn precondition(error: OccError) -> ApiError {
        match error {
            OccError::NotFound(_) => ApiError::NotFound,
            OccError::Conflict(conflict) if conflict.is_deleted() => ApiError::NotFound,
            OccError::Conflict(_) => ApiError::PreconditionFailed,
            other => ApiError::other(other),
        }
    }

    /// An error of PATCH's save, after its precondition passed: a token that changed
    /// since that check is 409.
    pub(super) fn at_save(error: OccError) -> ApiError {
        match error {
            OccError::Conflict(conflict) if conflict.is_deleted() => ApiError::NotFound,
            OccError::Conflict(_) => ApiError::Conflict,
            other => ApiError::other(other),
        }
    }

    /// A database failure: logged here, never shown to the client.
    pub(super) fn other(error: impl Into<OccError>) -> ApiError {
        let error = error.into();
        match &error {
            OccError::Pool(_) => {
                tracing::warn!(error = %error, "no database connection");
                ApiError::Unavailable
            }
            OccError::Database(db) => {
                tracing::error!(kind = db.kind(), detail = ?db.diesel_error(), "database failure");
                ApiError::Internal
            }
            _ => {
                tracing::error!(error = %error, "unexpected failure");
                ApiError::Internal
            }
        }
    }
}
