use std::time::Duration;

use axum_core::response::IntoResponse;
use diesel::prelude::*;
use diesel::result::{DatabaseErrorKind, Error as DieselError};
use diesel_occ::retry::RetryPolicy;
use diesel_occ::{
    ConcurrencyConflict, ConflictState, EntityKey, Error, InvalidTokenReason, NotFound, Operation,
    VersionToken,
};

use super::Problem;
use crate::etag::ETag;
use crate::extract::IfMatch;

fn conflict(operation: Operation, state: ConflictState) -> Error {
    ConcurrencyConflict::new(
        "secret_table",
        EntityKey::new(&["id"], vec!["4711".into()]),
        operation,
        1_i32.to_value(),
        state,
    )
    .into()
}

fn stale() -> ConflictState {
    ConflictState::Stale {
        current: 2_i32.to_value(),
    }
}

fn database(message: &str) -> Error {
    DieselError::DatabaseError(DatabaseErrorKind::Unknown, Box::new(message.to_owned())).into()
}

/// An exhaustion whose last attempt met `last` (the retry helper, on SQLite).
fn exhausted(last: fn() -> Error) -> Error {
    let policy = RetryPolicy::new()
        .max_attempts(2)
        .backoff(Duration::ZERO, Duration::ZERO);
    let source = || SqliteConnection::establish(":memory:");
    let result: Result<(), Error> =
        diesel_occ::blocking::retry(&source, &policy, |_conn, _attempt| Err(last()));
    let error = result.unwrap_err();
    assert!(matches!(error, Error::RetriesExhausted(_)), "{error:?}");
    error
}

/// What a test compares: the status, the `code` and the ETag.
type Seen<'a> = (u16, &'a str, Option<String>);

fn status_code_etag(problem: &Problem) -> Seen<'_> {
    (
        problem.status().as_u16(),
        problem.code(),
        problem.etag().map(ETag::to_string),
    )
}

#[test]
fn every_error_maps_as_the_table_says() {
    let two = Some("\"2\"".to_owned());
    let cases: Vec<(Error, Seen<'_>)> = vec![
        (
            conflict(Operation::ClientToken, stale()),
            (412, "precondition_failed", two.clone()),
        ),
        // Whichever write met it: the client's tag is no longer the current version.
        (
            conflict(Operation::Update, stale()),
            (412, "precondition_failed", two.clone()),
        ),
        (
            conflict(Operation::Delete, stale()),
            (412, "precondition_failed", two.clone()),
        ),
        (
            conflict(Operation::SoftDelete, stale()),
            (412, "precondition_failed", two.clone()),
        ),
        (
            conflict(Operation::Upsert, stale()),
            (412, "precondition_failed", two.clone()),
        ),
        (
            conflict(Operation::Update, ConflictState::Unmatched),
            (409, "conflict", None),
        ),
        (
            conflict(Operation::Update, ConflictState::Deleted),
            (404, "not_found", None),
        ),
        (
            NotFound {
                table: "secret_table",
                key: EntityKey::new(&["id"], vec!["4711".into()]),
            }
            .into(),
            (404, "not_found", None),
        ),
        (
            i32::decode("seven").unwrap_err().into(),
            (400, "invalid_token", None),
        ),
        (database("deadlock detected"), (503, "unavailable", None)),
        (
            database("relation secret_table does not exist"),
            (500, "internal", None),
        ),
        (
            exhausted(|| conflict(Operation::Update, stale())),
            (409, "conflict", None),
        ),
        (
            exhausted(|| database("database is locked")),
            (503, "unavailable", None),
        ),
    ];
    for (error, expected) in cases {
        let shown = format!("{error:?}");
        let problem = Problem::from(error);
        assert_eq!(status_code_etag(&problem), expected, "{shown}");
    }
    assert_eq!(
        i32::decode("seven").unwrap_err().reason,
        InvalidTokenReason::Malformed
    );
}

#[test]
fn if_match_reads_conflicts_as_its_precondition() {
    let tagged = IfMatch::from_header_lines([&b"\"1\""[..]]).unwrap();
    let any = IfMatch::from_header_lines([&b"*"[..]]).unwrap();
    let not_found = || -> Error {
        NotFound {
            table: "secret_table",
            key: EntityKey::new(&["id"], vec!["4711".into()]),
        }
        .into()
    };
    let two = Some("\"2\"".to_owned());
    let cases: Vec<(&IfMatch, Error, Seen<'_>)> = vec![
        (
            &tagged,
            conflict(Operation::Update, stale()),
            (412, "precondition_failed", two.clone()),
        ),
        (
            &tagged,
            exhausted(|| conflict(Operation::Update, stale())),
            (412, "precondition_failed", two.clone()),
        ),
        (
            &tagged,
            conflict(Operation::Delete, ConflictState::Deleted),
            (404, "not_found", None),
        ),
        (&tagged, not_found(), (404, "not_found", None)),
        (
            &any,
            conflict(Operation::Update, stale()),
            (409, "conflict", None),
        ),
        (
            &any,
            exhausted(|| conflict(Operation::Update, stale())),
            (409, "conflict", None),
        ),
        (
            &any,
            conflict(Operation::Update, ConflictState::Deleted),
            (412, "precondition_failed", None),
        ),
        (&any, not_found(), (412, "precondition_failed", None)),
        (
            &any,
            database("deadlock detected"),
            (503, "unavailable", None),
        ),
    ];
    for (if_match, error, expected) in cases {
        let shown = format!("{if_match:?} {error:?}");
        assert_eq!(
            status_code_etag(&if_match.problem(error)),
            expected,
            "{shown}"
        );
    }
}

#[tokio::test(flavor = "current_thread")]
async fn the_body_is_problem_json_without_internals() {
    let problem = Problem::from(database("relation secret_table does not exist"));
    let response = problem.into_response();
    assert_eq!(response.status(), 500);
    assert_eq!(
        response.headers()["content-type"],
        "application/problem+json"
    );
    let bytes = axum::body::to_bytes(response.into_body(), 4096)
        .await
        .unwrap();
    let body: serde_json::Value = serde_json::from_slice(&bytes).unwrap();
    assert_eq!(
        body,
        serde_json::json!({
            "type": "about:blank",
            "title": "Internal Server Error",
            "status": 500,
            "detail": "Internal error.",
            "code": "internal",
        })
    );

    let response = Problem::from(conflict(Operation::ClientToken, stale())).into_response();
    assert_eq!(response.headers()["etag"], "\"2\"");
    let bytes = axum::body::to_bytes(response.into_body(), 4096)
        .await
        .unwrap();
    let text = String::from_utf8(bytes.to_vec()).unwrap();
    for leak in ["secret_table", "4711", "relation", "token 1"] {
        assert!(!text.contains(leak), "{leak:?} in {text}");
    }
}

#[tokio::test(flavor = "current_thread")]
async fn a_problem_document_has_the_members_rfc_9457_defines() {
    for problem in [
        Problem::precondition_failed(Some(ETag::from_token(&2_i32))),
        Problem::precondition_required(),
        Problem::already_exists(),
        Problem::unavailable(),
    ] {
        let status = problem.status();
        let response = problem.into_response();
        assert_eq!(response.status(), status);
        assert_eq!(
            response.headers()["content-type"],
            "application/problem+json"
        );
        let body = axum::body::to_bytes(response.into_body(), 4096)
            .await
            .unwrap();
        let json: serde_json::Value = serde_json::from_slice(&body).unwrap();
        assert_eq!(json["type"], "about:blank");
        // With `about:blank`, the title is the status's reason phrase (section 4.2.1).
        assert_eq!(json["title"], status.canonical_reason().unwrap());
        // The status member is the response's (section 3.1.3).
        assert_eq!(json["status"], status.as_u16());
        assert!(json["detail"].as_str().is_some_and(|d| !d.is_empty()));
    }
}
