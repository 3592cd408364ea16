//! RFC 9110's evaluation order (section 13.2.2) and its rules for dates, on
//! `Preconditions::check` alone.

use std::time::{Duration, SystemTime};

use axum::http::{Method, Request, StatusCode};
use axum::response::IntoResponse;
use chrono::NaiveDateTime;

use super::Preconditions;
use crate::{Problem, Validators};

/// The seeded second: 2026-01-01 00:00:00 UTC, in the three formats RFC 9110 (section
/// 5.6.7) says a recipient must read.
const IMF_FIXDATE: &str = "Thu, 01 Jan 2026 00:00:00 GMT";
const RFC_850: &str = "Thursday, 01-Jan-26 00:00:00 GMT";
const ASCTIME: &str = "Thu Jan  1 00:00:00 2026";

fn at(text: &str) -> NaiveDateTime {
    NaiveDateTime::parse_from_str(text, "%Y-%m-%d %H:%M:%S%.f").unwrap()
}

fn request(method: Method, headers: &[(&str, &str)]) -> Preconditions {
    let mut builder = Request::builder().method(method).uri("/");
    for (name, value) in headers {
        builder = builder.header(*name, *value);
    }
    let (mut parts, ()) = builder.body(()).unwrap().into_parts();
    Preconditions::from_parts(&mut parts).unwrap()
}

/// The status `check` answers, 200 when it lets the request through.
fn verdict(preconditions: &Preconditions, current: Option<&Validators>) -> u16 {
    match preconditions.check(current) {
        Ok(()) => 200,
        Err(refused) => refused.status().as_u16(),
    }
}

#[test]
fn if_match_decides_before_if_unmodified_since_and_replaces_it() {
    let current = Validators::of(&at("2026-01-01 00:00:05"));
    let tag = current.etag().to_string();
    // Modified after the date, but If-Match names the current version: it alone counts.
    let both = request(
        Method::PUT,
        &[("if-match", &tag), ("if-unmodified-since", IMF_FIXDATE)],
    );
    assert_eq!(verdict(&both, Some(&current)), 200);
    let later = "Fri, 01 Jan 2027 00:00:00 GMT";
    let stale = request(
        Method::PUT,
        &[("if-match", "\"x\""), ("if-unmodified-since", later)],
    );
    assert_eq!(verdict(&stale, Some(&current)), 412);
    let dated = request(Method::PUT, &[("if-unmodified-since", IMF_FIXDATE)]);
    assert_eq!(verdict(&dated, Some(&current)), 412, "modified since");
}

#[test]
fn if_none_match_decides_before_if_modified_since_and_replaces_it() {
    let current = Validators::of(&at("2026-01-01 00:00:00"));
    // Not modified since the date, but If-None-Match names another version: 200.
    let both = request(
        Method::GET,
        &[
            ("if-none-match", "\"other\""),
            ("if-modified-since", IMF_FIXDATE),
        ],
    );
    assert_eq!(verdict(&both, Some(&current)), 200);
    let dated = request(Method::GET, &[("if-modified-since", IMF_FIXDATE)]);
    assert_eq!(verdict(&dated, Some(&current)), 304);
    // A failed If-Match comes first: 412, not 304.
    let first = request(
        Method::GET,
        &[
            ("if-match", "\"other\""),
            ("if-modified-since", IMF_FIXDATE),
        ],
    );
    assert_eq!(verdict(&first, Some(&current)), 412);
}

#[test]
fn if_modified_since_counts_on_get_and_head_only() {
    let current = Validators::of(&at("2026-01-01 00:00:00"));
    let head = request(Method::HEAD, &[("if-modified-since", IMF_FIXDATE)]);
    assert_eq!(verdict(&head, Some(&current)), 304);
    let put = request(Method::PUT, &[("if-modified-since", IMF_FIXDATE)]);
    assert_eq!(
        verdict(&put, Some(&current)),
        428,
        "ignored: the PUT is unconditional"
    );
}

#[test]
fn the_obsolete_date_formats_are_read_and_other_text_is_ignored() {
    let current = Validators::of(&at("2026-01-01 00:00:00"));
    for date in [IMF_FIXDATE, RFC_850, ASCTIME] {
        let dated = request(Method::GET, &[("if-modified-since", date)]);
        assert_eq!(verdict(&dated, Some(&current)), 304, "{date}");
    }
    let list = "Thu, 01 Jan 2026 00:00:00 GMT, Thu, 01 Jan 2026 00:00:00 GMT";
    for ignored in ["yesterday", list] {
        let dated = request(Method::GET, &[("if-modified-since", ignored)]);
        assert_eq!(verdict(&dated, Some(&current)), 200, "{ignored}");
    }
    // Two lines are a list too: ignored.
    let twice = request(
        Method::GET,
        &[
            ("if-modified-since", IMF_FIXDATE),
            ("if-modified-since", IMF_FIXDATE),
        ],
    );
    assert_eq!(verdict(&twice, Some(&current)), 200);
}

#[test]
fn a_token_with_a_fraction_is_modified_since_its_second() {
    let current = Validators::of(&at("2026-01-01 00:00:00.250"));
    let second = SystemTime::UNIX_EPOCH + Duration::from_secs(1_767_225_600);
    assert_eq!(
        current.last_modified(),
        Some(second),
        "Last-Modified is the second"
    );
    let write = request(Method::PUT, &[("if-unmodified-since", IMF_FIXDATE)]);
    assert_eq!(
        verdict(&write, Some(&current)),
        412,
        "never a write on a rounded date"
    );
    let read = request(Method::GET, &[("if-modified-since", IMF_FIXDATE)]);
    assert_eq!(
        verdict(&read, Some(&current)),
        304,
        "a cache compares seconds"
    );
}

#[test]
fn tokens_without_a_date_ignore_the_date_headers() {
    let current = Validators::of(&4_i32);
    assert_eq!(current.last_modified(), None);
    let write = request(Method::PUT, &[("if-unmodified-since", IMF_FIXDATE)]);
    assert_eq!(
        verdict(&write, Some(&current)),
        428,
        "no date to compare: unconditional"
    );
    let read = request(Method::GET, &[("if-modified-since", IMF_FIXDATE)]);
    assert_eq!(verdict(&read, Some(&current)), 200);
}

#[test]
fn a_missing_resource_fails_star_and_a_tag_is_404() {
    let check = |name: &str, value: &str| verdict(&request(Method::PUT, &[(name, value)]), None);
    assert_eq!(check("if-match", "*"), 412);
    assert_eq!(check("if-match", "\"1\""), 404);
    assert_eq!(check("if-none-match", "*"), 200);
    assert_eq!(check("if-none-match", "\"1\""), 200);
}

#[test]
fn a_304_from_check_has_no_body_and_a_428_is_not_stored() {
    let current = Validators::of(&4_i32);
    let seen = request(Method::GET, &[("if-none-match", "\"4\"")]);
    let response = seen.check(Some(&current)).unwrap_err().into_response();
    assert_eq!(response.status(), StatusCode::NOT_MODIFIED);
    assert_eq!(response.headers()["etag"], "\"4\"");
    assert_eq!(response.headers().get("content-type"), None);
    let required = Problem::precondition_required().into_response();
    assert_eq!(required.headers()["cache-control"], "no-store");
}
