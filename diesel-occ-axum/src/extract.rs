//! The `If-Match` and `If-None-Match` extractors.

use axum_core::extract::{FromRequestParts, OptionalFromRequestParts};
use axum_core::response::{IntoResponse, Response};
use diesel_occ::{ConflictState, Error, VersionToken};
use http::header::{IF_MATCH, IF_NONE_MATCH};
use http::request::Parts;
use http::{HeaderName, Method};

use crate::etag::ETag;
use crate::parse::{TagList, parse};
use crate::problem::Problem;
use crate::settings::Settings;
use crate::validators::Validators;

/// The `If-Match` of a write (RFC 9110, section 13.1.1), required.
///
/// Extraction fails with a [`Problem`]: 428 when the header is absent (or is `*` and
/// [`Settings::require_tag`] is on), 400 when it is not `*` nor a list of
/// entity-tags. Comparison is strong, octet by octet: a weak tag never matches (unless
/// [`Settings::weak_if_match`] is on), nor does `"01"` when the ETag is `"1"`. A tag
/// that is well formed but names no token of the resource simply does not match (412).
///
/// Where the precondition is optional, take `Option<IfMatch>`: `None` without the
/// header, and still 400 for a malformed one.
///
/// ```
/// use diesel_occ_axum::IfMatch;
///
/// let tags = IfMatch::from_header_lines([&b"W/\"1\", \"2\""[..]]).unwrap();
/// assert!(tags.matches(&2_i32));
/// assert!(!tags.matches(&1_i32)); // weak: never matches
/// assert_eq!(tags.token::<i32>(), Some(2));
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IfMatch {
    tags: TagList,
    settings: Settings,
}

impl IfMatch {
    /// Reads the header's lines with the default [`Settings`].
    ///
    /// ```
    /// use diesel_occ_axum::IfMatch;
    ///
    /// assert_eq!(IfMatch::from_header_lines(Vec::<&[u8]>::new()).unwrap_err().status(), 428);
    /// assert_eq!(IfMatch::from_header_lines([&b"nope"[..]]).unwrap_err().status(), 400);
    /// assert!(IfMatch::from_header_lines([&b"*"[..]]).unwrap().is_any());
    /// ```
    pub fn from_header_lines<'a>(
        lines: impl IntoIterator<Item = &'a [u8]>,
    ) -> Result<IfMatch, Problem> {
        IfMatch::read(lines, Settings::default())
    }

    fn read<'a>(
        lines: impl IntoIterator<Item = &'a [u8]>,
        settings: Settings,
    ) -> Result<IfMatch, Problem> {
        IfMatch::read_optional(lines, settings)?.ok_or_else(Problem::precondition_required)
    }

    /// The header when the request carries it: `Ok(None)` without it.
    pub(crate) fn read_optional<'a>(
        lines: impl IntoIterator<Item = &'a [u8]>,
        settings: Settings,
    ) -> Result<Option<IfMatch>, Problem> {
        match parse(lines) {
            Err(_) => Err(Problem::malformed_header(IF_MATCH)),
            Ok(None) => Ok(None),
            Ok(Some(TagList::Any)) if settings.requires_tag() => {
                Err(Problem::precondition_required())
            }
            Ok(Some(tags)) => Ok(Some(IfMatch { tags, settings })),
        }
    }

    /// Reads the request's `If-Match` with the [`Settings`] in its extensions.
    pub(crate) fn from_parts(parts: &Parts) -> Result<Option<IfMatch>, Problem> {
        let settings = parts.extensions.get::<Settings>().copied();
        IfMatch::read_optional(lines(parts, IF_MATCH), settings.unwrap_or_default())
    }

    /// True for `If-Match: *`.
    ///
    /// ```
    /// use diesel_occ_axum::IfMatch;
    ///
    /// assert!(IfMatch::from_header_lines([&b"*"[..]]).unwrap().is_any());
    /// ```
    pub fn is_any(&self) -> bool {
        matches!(self.tags, TagList::Any)
    }

    /// The tags, in the order they came (none for `*`).
    ///
    /// ```
    /// use diesel_occ_axum::{ETag, IfMatch};
    ///
    /// let if_match = IfMatch::from_header_lines([&b"\"1\", \"2\""[..]]).unwrap();
    /// assert_eq!(if_match.tags(), [ETag::from_token(&1_i32), ETag::from_token(&2_i32)]);
    /// ```
    pub fn tags(&self) -> &[ETag] {
        match &self.tags {
            TagList::Any => &[],
            TagList::Tags(tags) => tags,
        }
    }

    /// Whether a resource whose current version is `current` passes: `*` matches any
    /// version, a list matches when one of its strong tags is `current`'s ETag.
    ///
    /// ```
    /// use diesel_occ_axum::IfMatch;
    ///
    /// let if_match = IfMatch::from_header_lines([&b"\"3\""[..]]).unwrap();
    /// assert!(if_match.matches(&3_i64));
    /// assert!(!if_match.matches(&4_i64));
    /// ```
    pub fn matches<T: VersionToken>(&self, current: &T) -> bool {
        self.matches_tag(&ETag::from_token(current))
    }

    /// [`matches`](Self::matches) for the resource's ETag.
    pub(crate) fn matches_tag(&self, current: &ETag) -> bool {
        let weak = self.settings.accepts_weak_if_match();
        match &self.tags {
            TagList::Any => true,
            TagList::Tags(tags) if weak => tags.iter().any(|tag| tag.weak_eq(current)),
            TagList::Tags(tags) => tags.iter().any(|tag| tag.strong_eq(current)),
        }
    }

    /// [`matches`](Self::matches), or the 412 to answer, carrying `current`'s ETag.
    ///
    /// ```
    /// use diesel_occ_axum::IfMatch;
    ///
    /// let if_match = IfMatch::from_header_lines([&b"\"3\""[..]]).unwrap();
    /// let failed = if_match.check(&4_i64).unwrap_err();
    /// assert_eq!(failed.status(), 412);
    /// assert_eq!(failed.etag().unwrap().to_string(), "\"4\"");
    /// ```
    pub fn check<T: VersionToken>(&self, current: &T) -> Result<(), Problem> {
        if self.matches(current) {
            Ok(())
        } else {
            Err(Problem::precondition_failed(Some(ETag::from_token(
                current,
            ))))
        }
    }

    /// The token a write can carry in its own predicate, without reading the row first
    /// (`update_by_key`, `delete_by_key`): the header's one strong tag, when it is
    /// exactly the ETag of a `T` (`"01"` is not the ETag of `1`). `None` for `*`, for
    /// several strong tags, and when no strong tag is a `T`: then read the row,
    /// [`check`](Self::check) its token, and write with it. With
    /// [`Settings::weak_if_match`] on, weak tags count too.
    ///
    /// ```
    /// use diesel_occ_axum::IfMatch;
    ///
    /// let read = |value: &[u8]| IfMatch::from_header_lines([value]).unwrap();
    /// assert_eq!(read(b"\"5\"").token::<i32>(), Some(5));
    /// assert_eq!(read(b"\"05\"").token::<i32>(), None);
    /// assert_eq!(read(b"\"5\", \"6\"").token::<i32>(), None);
    /// assert_eq!(read(b"\"five\"").token::<i32>(), None);
    /// assert_eq!(read(b"*").token::<i32>(), None);
    /// ```
    pub fn token<T: VersionToken>(&self) -> Option<T> {
        let weak = self.settings.accepts_weak_if_match();
        let mut usable = self.tags().iter().filter(|tag| weak || !tag.is_weak());
        match (usable.next(), usable.next()) {
            (Some(only), None) => only.opaque_token(),
            _ => None,
        }
    }

    /// The response for an error of a write made conditional on this header:
    ///
    /// - with tags, a conflict (or retries exhausted on one) whose row holds another
    ///   version is the client's precondition failing: 412 with the current ETag;
    /// - with `*`, a missing or deleted row fails it: 412;
    /// - anything else as [`Problem::from`] maps it (a deleted row with tags: 404; a
    ///   conflict under `*`: 409).
    ///
    /// ```
    /// use diesel_occ::{ConcurrencyConflict, ConflictState, EntityKey, Operation, VersionToken};
    /// use diesel_occ_axum::IfMatch;
    ///
    /// let stale = || diesel_occ::Error::from(ConcurrencyConflict::new(
    ///     "jobs",
    ///     EntityKey::new(&["id"], vec!["1".into()]),
    ///     Operation::Update,
    ///     1_i32.to_value(),
    ///     ConflictState::Stale { current: 2_i32.to_value() },
    /// ));
    /// let tagged = IfMatch::from_header_lines([&b"\"1\""[..]]).unwrap().problem(stale());
    /// assert_eq!((tagged.status().as_u16(), tagged.etag().unwrap().to_string()), (412, "\"2\"".into()));
    /// let any = IfMatch::from_header_lines([&b"*"[..]]).unwrap().problem(stale());
    /// assert_eq!(any.status(), 409);
    /// ```
    pub fn problem(&self, error: Error) -> Problem {
        let conflict = match &error {
            Error::Conflict(conflict) => Some(conflict),
            Error::RetriesExhausted(exhausted) => exhausted.last_conflict(),
            _ => None,
        };
        let deleted = error.is_not_found() || conflict.is_some_and(|c| c.is_deleted());
        match (&self.tags, conflict.map(|c| c.state())) {
            (TagList::Any, _) if deleted => Problem::precondition_failed(None),
            // `*` matched the version the write started from; another writer's change
            // in between is no fault of the client's precondition.
            (TagList::Any, Some(ConflictState::Stale { .. })) => Problem::conflict(),
            (TagList::Tags(_), Some(ConflictState::Stale { current })) => {
                Problem::precondition_failed(Some(ETag::from_value(current)))
            }
            _ => Problem::from(error),
        }
    }
}

impl<S: Send + Sync> FromRequestParts<S> for IfMatch {
    type Rejection = Problem;

    async fn from_request_parts(parts: &mut Parts, _: &S) -> Result<Self, Self::Rejection> {
        IfMatch::from_parts(parts)?.ok_or_else(Problem::precondition_required)
    }
}

/// `Option<IfMatch>`: `None` without the header; 400 when it is malformed, 428 for `*`
/// under [`Settings::require_tag`].
impl<S: Send + Sync> OptionalFromRequestParts<S> for IfMatch {
    type Rejection = Problem;

    async fn from_request_parts(parts: &mut Parts, _: &S) -> Result<Option<Self>, Self::Rejection> {
        IfMatch::from_parts(parts)
    }
}

/// The `If-None-Match` of a read (RFC 9110, section 13.1.2), optional: absent, it
/// matches nothing. Extraction fails with 400 when the header is not `*` nor a list of
/// entity-tags. Comparison is weak: `W/"7"` matches the ETag `"7"`.
///
/// On `GET` and `HEAD`, a match is answered with 304 Not Modified and the ETag,
/// without the representation ([`respond`](Self::respond)); on any other method with
/// 412 (RFC 9110, section 13.1.2). `If-None-Match: *` on a `PUT` is "create it only if
/// it does not exist": see [`Preconditions`](crate::Preconditions), which runs that
/// create, or [`problem`](Self::problem).
///
/// ```
/// use diesel_occ_axum::{ETag, IfNoneMatch};
///
/// let seen = IfNoneMatch::from_header_lines([&b"W/\"7\""[..]]).unwrap();
/// assert!(seen.matches(&ETag::from_token(&7_i32)));
/// assert!(!seen.matches(&ETag::from_token(&8_i32)));
/// assert!(!IfNoneMatch::default().matches(&ETag::from_token(&7_i32)));
/// ```
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct IfNoneMatch {
    tags: Option<TagList>,
    /// The request's method; `None` (read as `GET`) when built from header lines.
    method: Option<Method>,
}

impl IfNoneMatch {
    /// Reads the header's lines (none: the header is absent).
    ///
    /// ```
    /// use diesel_occ_axum::IfNoneMatch;
    ///
    /// assert_eq!(IfNoneMatch::from_header_lines([&b"\"a\" \"b\""[..]]).unwrap_err().status(), 400);
    /// ```
    pub fn from_header_lines<'a>(
        lines: impl IntoIterator<Item = &'a [u8]>,
    ) -> Result<IfNoneMatch, Problem> {
        match parse(lines) {
            Ok(tags) => Ok(IfNoneMatch { tags, method: None }),
            Err(_) => Err(Problem::malformed_header(IF_NONE_MATCH)),
        }
    }

    /// Reads the request's `If-None-Match`, remembering its method.
    pub(crate) fn from_parts(parts: &Parts) -> Result<IfNoneMatch, Problem> {
        let read = IfNoneMatch::from_header_lines(lines(parts, IF_NONE_MATCH))?;
        Ok(IfNoneMatch {
            method: Some(parts.method.clone()),
            ..read
        })
    }

    /// True for `If-None-Match: *`.
    ///
    /// ```
    /// use diesel_occ_axum::IfNoneMatch;
    ///
    /// assert!(IfNoneMatch::from_header_lines([&b"*"[..]]).unwrap().is_any());
    /// ```
    pub fn is_any(&self) -> bool {
        matches!(self.tags, Some(TagList::Any))
    }

    /// True when the request's method is `GET` or `HEAD` (or unknown: built from header
    /// lines), where a match means 304 rather than 412.
    pub(crate) fn is_read(&self) -> bool {
        self.method
            .as_ref()
            .is_none_or(|method| method == Method::GET || method == Method::HEAD)
    }

    /// The response for an error of a create made conditional on this header: under
    /// `If-None-Match: *` a taken key ([`Error::UniqueViolation`]) means the resource
    /// exists, so the precondition failed: 412. Anything else as [`Problem::from`] maps
    /// it (a taken key without the header: 409).
    ///
    /// ```
    /// use diesel_occ_axum::IfNoneMatch;
    ///
    /// let any = IfNoneMatch::from_header_lines([&b"*"[..]]).unwrap();
    /// let missing = diesel_occ::Error::from(diesel_occ::InvalidToken::new(
    ///     diesel_occ::InvalidTokenReason::Empty,
    /// ));
    /// assert_eq!(any.problem(missing).status(), 400);
    /// ```
    pub fn problem(&self, error: Error) -> Problem {
        match error {
            Error::UniqueViolation(_) if self.is_any() => Problem::precondition_failed(None),
            error => Problem::from(error),
        }
    }

    /// True when the request carried the header.
    ///
    /// ```
    /// use diesel_occ_axum::IfNoneMatch;
    ///
    /// assert!(!IfNoneMatch::default().is_present());
    /// ```
    pub fn is_present(&self) -> bool {
        self.tags.is_some()
    }

    /// Whether the client already holds `current`: `*` matches any current
    /// representation; a list matches when one of its tags is weakly equal to `current`.
    ///
    /// ```
    /// use diesel_occ_axum::{ETag, IfNoneMatch};
    ///
    /// let any = IfNoneMatch::from_header_lines([&b"*"[..]]).unwrap();
    /// assert!(any.matches(&ETag::from_token(&1_i32)));
    /// ```
    pub fn matches(&self, current: &ETag) -> bool {
        match &self.tags {
            None => false,
            Some(TagList::Any) => true,
            Some(TagList::Tags(tags)) => tags.iter().any(|tag| tag.weak_eq(current)),
        }
    }

    /// The answer: when the client holds `current`, 304 Not Modified on `GET` and
    /// `HEAD` (with the ETag and the cache headers of `current`, as RFC 9110 section
    /// 15.4.5 asks) and 412 on any other method; else the representation `make()`
    /// builds, with the ETag and every header of `current`. `current` is an [`ETag`],
    /// or [`Validators`] carrying `Last-Modified` and the headers both answers share.
    ///
    /// ```
    /// use axum::http::header::CACHE_CONTROL;
    /// use axum::http::HeaderValue;
    /// use diesel_occ_axum::{ETag, IfNoneMatch, Validators};
    ///
    /// let seen = IfNoneMatch::from_header_lines([&b"\"7\""[..]]).unwrap();
    /// let response = seen.respond(ETag::from_token(&7_i32), || "body");
    /// assert_eq!(response.status(), 304);
    /// assert_eq!(response.headers()["etag"], "\"7\"");
    /// let response = seen.respond(ETag::from_token(&8_i32), || "body");
    /// assert_eq!(response.status(), 200);
    ///
    /// let cached = Validators::of(&7_i32).header(CACHE_CONTROL, HeaderValue::from_static("max-age=60"));
    /// let response = seen.respond(cached, || "body");
    /// assert_eq!(response.status(), 304);
    /// assert_eq!(response.headers()["cache-control"], "max-age=60");
    /// ```
    pub fn respond<R: IntoResponse>(
        &self,
        current: impl Into<Validators>,
        make: impl FnOnce() -> R,
    ) -> Response {
        let current = current.into();
        if !self.matches(current.etag()) {
            (current, make()).into_response()
        } else if self.is_read() {
            current.not_modified()
        } else {
            Problem::precondition_failed(Some(current.etag().clone())).into_response()
        }
    }
}

impl<S: Send + Sync> FromRequestParts<S> for IfNoneMatch {
    type Rejection = Problem;

    async fn from_request_parts(parts: &mut Parts, _: &S) -> Result<Self, Self::Rejection> {
        IfNoneMatch::from_parts(parts)
    }
}

pub(crate) fn lines(parts: &Parts, name: HeaderName) -> impl Iterator<Item = &[u8]> {
    parts
        .headers
        .get_all(name)
        .iter()
        .map(|value| value.as_bytes())
}

#[cfg(test)]
mod tests;
