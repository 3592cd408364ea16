//! [`Preconditions`]: every conditional header of a request, evaluated in RFC 9110's
//! order (section 13.2.2).

use std::time::SystemTime;

use axum_core::extract::FromRequestParts;
use axum_core::response::{IntoResponse, Response};
use diesel_occ::{Error, VersionToken};
use http::header::{IF_MODIFIED_SINCE, IF_UNMODIFIED_SINCE};
use http::request::Parts;
use http::{HeaderName, Method};

use crate::extract::{IfMatch, IfNoneMatch};
use crate::problem::Problem;
use crate::validators::{Validators, whole_second};

/// The conditional headers of a request: `If-Match`, `If-Unmodified-Since`,
/// `If-None-Match` and `If-Modified-Since`, evaluated against the resource's current
/// [`Validators`] in the order RFC 9110 (section 13.2.2) gives:
///
/// 1. `If-Match`, when present: false (a stale or unknown tag, or `*` on a missing
///    resource) is 412 with the current `ETag` (a tag on a missing resource: 404);
/// 2. else `If-Unmodified-Since`, when the resource has a date (a timestamp token):
///    modified after it is 412;
/// 3. `If-None-Match`, when present: a match (`*` on an existing resource) is 304 on
///    `GET`/`HEAD`, 412 on any other method;
/// 4. else, on `GET`/`HEAD`, `If-Modified-Since`: not modified since is 304.
///
/// A state-changing request must carry one of them, else 428 (RFC 6585). Malformed
/// `If-Match` / `If-None-Match` are 400 at extraction; a date that is not an HTTP-date is
/// ignored, as RFC 9110 (sections 13.1.3, 13.1.4) says.
///
/// [`write`](Self::write) (blocking) and `write_async` (feature `async`) run the read,
/// this evaluation and the write in one call, inside diesel-occ's retry helper, so the
/// check and the write see the same version. For a `GET`, [`respond`](Self::respond).
///
/// ```
/// use axum::http::{Method, Request};
/// use diesel_occ_axum::{Preconditions, Validators};
///
/// let request = |method: Method, name: &str, value: &str| {
///     let (mut parts, ()) = Request::builder().method(method).header(name, value).body(()).unwrap().into_parts();
///     Preconditions::from_parts(&mut parts).unwrap()
/// };
/// let current = Validators::of(&4_i32);
/// // A stale If-Match: 412 with the current ETag.
/// let stale = request(Method::PUT, "if-match", "\"3\"").check(Some(&current)).unwrap_err();
/// assert_eq!((stale.status().as_u16(), stale.etag()), (412, Some(current.etag())));
/// // Create only if absent: `*` fails on an existing resource, passes on a missing one.
/// let create = request(Method::PUT, "if-none-match", "*");
/// assert_eq!(create.check(Some(&current)).unwrap_err().status(), 412);
/// assert!(create.check(None).is_ok());
/// // A GET that already holds the version: 304.
/// let seen = request(Method::GET, "if-none-match", "\"4\"");
/// assert_eq!(seen.check(Some(&current)).unwrap_err().status(), 304);
/// ```
#[derive(Debug, Clone)]
pub struct Preconditions {
    method: Method,
    if_match: Option<IfMatch>,
    if_none_match: IfNoneMatch,
    if_unmodified_since: Option<SystemTime>,
    if_modified_since: Option<SystemTime>,
}

impl Preconditions {
    /// Reads the request's conditional headers (and [`Settings`](crate::Settings) from
    /// its extensions): 400 when `If-Match` or `If-None-Match` is malformed, 428 for
    /// `If-Match: *` under [`Settings::require_tag`](crate::Settings::require_tag).
    ///
    /// ```
    /// use axum::http::Request;
    /// use diesel_occ_axum::Preconditions;
    ///
    /// let (mut parts, ()) = Request::put("/").header("if-match", "3").body(()).unwrap().into_parts();
    /// assert_eq!(Preconditions::from_parts(&mut parts).unwrap_err().status(), 400);
    /// ```
    pub fn from_parts(parts: &mut Parts) -> Result<Preconditions, Problem> {
        Ok(Preconditions {
            method: parts.method.clone(),
            if_match: IfMatch::from_parts(parts)?,
            if_none_match: IfNoneMatch::from_parts(parts)?,
            if_unmodified_since: date(parts, IF_UNMODIFIED_SINCE),
            if_modified_since: date(parts, IF_MODIFIED_SINCE),
        })
    }

    /// The `If-Match` of the request, if any.
    ///
    /// ```
    /// use axum::http::Request;
    /// use diesel_occ_axum::Preconditions;
    ///
    /// let (mut parts, ()) = Request::put("/").header("if-match", "\"7\"").body(()).unwrap().into_parts();
    /// let preconditions = Preconditions::from_parts(&mut parts).unwrap();
    /// assert_eq!(preconditions.if_match().and_then(|m| m.token::<i32>()), Some(7));
    /// ```
    pub fn if_match(&self) -> Option<&IfMatch> {
        self.if_match.as_ref()
    }

    /// The token a keyed write can carry in its own predicate, so it needs no read:
    /// `Some` when `If-Match` names exactly one strong tag that is a `T`
    /// ([`IfMatch::token`]) and no `If-None-Match` needs evaluating. Then
    /// `update_by_key(conn, key, &token, changes)` or `delete_by_key` is the whole
    /// evaluation, in one statement: a stale token is a conflict that `?` answers 412
    /// with the current ETag, a missing row 404. `None` otherwise: run
    /// [`write`](Self::write) / `write_async`.
    ///
    /// ```
    /// use axum::http::Request;
    /// use diesel_occ_axum::Preconditions;
    ///
    /// let read = |name: &str, value: &str| {
    ///     let (mut parts, ()) = Request::put("/").header(name, value).body(()).unwrap().into_parts();
    ///     Preconditions::from_parts(&mut parts).unwrap()
    /// };
    /// assert_eq!(read("if-match", "\"3\"").token::<i32>(), Some(3));
    /// assert_eq!(read("if-match", "\"3\", \"4\"").token::<i32>(), None);
    /// assert_eq!(read("if-match", "*").token::<i32>(), None);
    /// assert_eq!(read("if-unmodified-since", "Thu, 01 Jan 2026 00:00:00 GMT").token::<i32>(), None);
    /// ```
    pub fn token<T: VersionToken>(&self) -> Option<T> {
        if self.if_none_match.is_present() {
            return None;
        }
        self.if_match.as_ref()?.token()
    }

    /// Whether the request may go on against `current` (`None`: the resource does not
    /// exist): `Ok`, or the [`Problem`] to answer (412, 428, or, on `GET`/`HEAD`, a bare
    /// 304 with the ETag). See the [type's docs](Self) for the order.
    ///
    /// ```
    /// use axum::http::Request;
    /// use diesel_occ_axum::{Preconditions, Validators};
    ///
    /// let (mut parts, ()) = Request::delete("/").body(()).unwrap().into_parts();
    /// let unconditional = Preconditions::from_parts(&mut parts).unwrap();
    /// assert_eq!(unconditional.check(Some(&Validators::of(&1_i32))).unwrap_err().status(), 428);
    /// ```
    pub fn check(&self, current: Option<&Validators>) -> Result<(), Problem> {
        let failed = || Problem::precondition_failed(current.map(|c| c.etag().clone()));
        let modified = current.and_then(Validators::modified);
        // 1, 2: the client's version must still be the current one.
        if let Some(if_match) = &self.if_match {
            match current {
                Some(current) if if_match.matches_tag(current.etag()) => {}
                Some(_) => return Err(failed()),
                // `*` names a current representation; a tag names a version of a
                // resource that is gone: 404, as the write itself would answer.
                None if if_match.is_any() => return Err(failed()),
                None => return Err(Problem::not_found()),
            }
        } else if let (Some(since), Some(modified)) = (self.if_unmodified_since, modified) {
            // To the fraction: a token later in the same second is modified since.
            if modified > since {
                return Err(failed());
            }
        }
        // 3, 4: the client must not hold the current version already.
        let read = self.method == Method::GET || self.method == Method::HEAD;
        if self.if_none_match.is_present() {
            if current.is_some_and(|c| self.if_none_match.matches(c.etag())) {
                return Err(match current {
                    Some(current) if read => Problem::not_modified(current.etag().clone()),
                    _ => failed(),
                });
            }
        } else if let (true, Some(since), Some(modified)) = (read, self.if_modified_since, modified)
        {
            if whole_second(modified) <= since {
                let etag = current.map(|c| c.etag().clone());
                return Err(etag.map_or_else(failed, Problem::not_modified));
            }
        }
        if !read && !self.is_conditional(current) {
            return Err(Problem::precondition_required());
        }
        Ok(())
    }

    /// A state-changing request names what it expects: a tag, `*`, or a date the
    /// resource can be compared with (a missing resource has none: its write answers).
    fn is_conditional(&self, current: Option<&Validators>) -> bool {
        let dated = match current {
            Some(current) => current.modified().is_some(),
            None => true,
        };
        self.if_match.is_some()
            || self.if_none_match.is_present()
            || self.if_unmodified_since.is_some() && dated
    }

    /// The answer to a `GET` or `HEAD`: [`check`](Self::check) against `current`, then
    /// the representation `make()` builds with every header of `current`, or the 304
    /// (with the headers RFC 9110 keeps on it) or 412 the check gave.
    ///
    /// ```
    /// use axum::http::Request;
    /// use diesel_occ_axum::{Preconditions, Validators};
    ///
    /// let (mut parts, ()) = Request::get("/").header("if-none-match", "W/\"2\"").body(()).unwrap().into_parts();
    /// let preconditions = Preconditions::from_parts(&mut parts).unwrap();
    /// assert_eq!(preconditions.respond(Validators::of(&2_i32), || "body").status(), 304);
    /// assert_eq!(preconditions.respond(Validators::of(&3_i32), || "body").status(), 200);
    /// ```
    pub fn respond<R: IntoResponse>(
        &self,
        current: Validators,
        make: impl FnOnce() -> R,
    ) -> Response {
        match self.check(Some(&current)) {
            Ok(()) => (current, make()).into_response(),
            Err(refused) if refused.status() == http::StatusCode::NOT_MODIFIED => {
                current.not_modified()
            }
            Err(refused) => refused.into_response(),
        }
    }

    /// The response for an error of a write made under these preconditions: a taken
    /// key under `If-None-Match: *` is 412 (the resource exists); with `If-Match`, as
    /// [`IfMatch::problem`] maps it (`*` on a deleted row: 412); anything else as
    /// [`Problem::from`].
    ///
    /// ```
    /// use axum::http::Request;
    /// use diesel_occ_axum::Preconditions;
    ///
    /// let (mut parts, ()) = Request::put("/").header("if-match", "*").body(()).unwrap().into_parts();
    /// let preconditions = Preconditions::from_parts(&mut parts).unwrap();
    /// use diesel_occ::{EntityKey, NotFound};
    ///
    /// let gone = NotFound { table: "jobs", key: EntityKey::new(&["id"], vec!["1".into()]) };
    /// assert_eq!(preconditions.problem(gone.into()).status(), 412);
    /// ```
    pub fn problem(&self, error: Error) -> Problem {
        match (&self.if_match, error) {
            (_, error @ Error::UniqueViolation(_)) => self.if_none_match.problem(error),
            (Some(if_match), error) => if_match.problem(error),
            (None, error) => Problem::from(error),
        }
    }
}

impl<S: Send + Sync> FromRequestParts<S> for Preconditions {
    type Rejection = Problem;

    async fn from_request_parts(parts: &mut Parts, _: &S) -> Result<Self, Self::Rejection> {
        Preconditions::from_parts(parts)
    }
}

/// A date header: `None` when absent, on several lines, or not an HTTP-date (which
/// RFC 9110 says to ignore).
fn date(parts: &Parts, name: HeaderName) -> Option<SystemTime> {
    let mut values = parts.headers.get_all(name).iter();
    match (values.next(), values.next()) {
        (Some(only), None) => httpdate::parse_http_date(only.to_str().ok()?).ok(),
        _ => None,
    }
}

#[cfg(test)]
mod tests;
