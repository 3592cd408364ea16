use axum::body::Body;
use axum::http::{Request, StatusCode};
use axum::routing::{get, put};
use axum::{Extension, Router};
use tower::ServiceExt;

use crate::{ETag, IfMatch, IfNoneMatch, Settings};

async fn write(if_match: IfMatch) -> String {
    format!("{:?}", if_match.token::<i32>())
}

async fn read(if_none_match: IfNoneMatch) -> axum::response::Response {
    if_none_match.respond(ETag::from_token(&7_i32), || "seven")
}

fn app(settings: Option<Settings>) -> Router {
    let app = Router::new().route("/", put(write)).route("/", get(read));
    match settings {
        Some(settings) => app.layer(Extension(settings)),
        None => app,
    }
}

async fn status(app: Router, method: &str, headers: &[(&str, &str)]) -> (StatusCode, String) {
    let mut request = Request::builder().method(method).uri("/");
    for (name, value) in headers {
        request = request.header(*name, *value);
    }
    let response = app
        .oneshot(request.body(Body::empty()).unwrap())
        .await
        .unwrap();
    let status = response.status();
    let body = axum::body::to_bytes(response.into_body(), 4096)
        .await
        .unwrap();
    (status, String::from_utf8(body.to_vec()).unwrap())
}

#[tokio::test(flavor = "current_thread")]
async fn star_is_accepted_by_default_and_refused_when_a_tag_is_required() {
    let star = [("if-match", "*")];
    assert_eq!(status(app(None), "PUT", &star).await.0, StatusCode::OK);
    let strict = Some(Settings::default().require_tag(true));
    let (refused, body) = status(app(strict), "PUT", &star).await;
    assert_eq!(refused, StatusCode::PRECONDITION_REQUIRED);
    assert!(
        body.contains("\"code\":\"precondition_required\""),
        "{body}"
    );
    let tag = [("if-match", "\"3\"")];
    assert_eq!(
        status(app(strict), "PUT", &tag).await,
        (StatusCode::OK, "Some(3)".to_owned())
    );
}

#[tokio::test(flavor = "current_thread")]
async fn the_extractors_read_every_header_line() {
    let lines = [("if-match", "\"3\""), ("if-match", "W/\"4\"")];
    assert_eq!(
        status(app(None), "PUT", &lines).await,
        (StatusCode::OK, "Some(3)".to_owned())
    );
    let two = [("if-match", "\"3\""), ("if-match", "\"4\"")];
    assert_eq!(
        status(app(None), "PUT", &two).await,
        (StatusCode::OK, "None".to_owned())
    );
    let star_and_tag = [("if-match", "*"), ("if-match", "\"4\"")];
    assert_eq!(
        status(app(None), "PUT", &star_and_tag).await.0,
        StatusCode::BAD_REQUEST
    );
    assert_eq!(
        status(app(None), "PUT", &[]).await.0,
        StatusCode::PRECONDITION_REQUIRED
    );

    let seen = [("if-none-match", "\"1\""), ("if-none-match", "W/\"7\"")];
    assert_eq!(
        status(app(None), "GET", &seen).await,
        (StatusCode::NOT_MODIFIED, String::new())
    );
    assert_eq!(
        status(app(None), "GET", &[("if-none-match", "\"1\"")]).await,
        (StatusCode::OK, "seven".to_owned())
    );
    let (malformed, body) = status(app(None), "GET", &[("if-none-match", "1")]).await;
    assert_eq!(malformed, StatusCode::BAD_REQUEST);
    assert!(body.contains("malformed_if_none_match"), "{body}");
}

/// A token in a JSON body (diesel-occ's feature `serde`) is read as an `If-Match` token
/// is: a forged, malformed, nil or numeric one is axum's JSON rejection, a client error
/// (422), never a 500; a good one reaches the handler.
#[tokio::test(flavor = "current_thread")]
async fn a_token_in_a_json_body_is_validated_as_in_if_match() {
    #[derive(serde::Deserialize)]
    struct Form {
        #[serde(with = "diesel_occ::serde_token")]
        version: diesel_occ::UuidToken,
    }

    async fn save(axum::Json(form): axum::Json<Form>) -> String {
        form.version.to_string()
    }

    let good = "67e55044-10b1-426f-9247-bb680e5fe0c8";
    let send = |body: String| async move {
        let request = Request::builder()
            .method("PUT")
            .uri("/")
            .header("content-type", "application/json")
            .body(Body::from(body))
            .unwrap();
        let response = Router::new()
            .route("/", put(save))
            .oneshot(request)
            .await
            .unwrap();
        let status = response.status();
        let body = axum::body::to_bytes(response.into_body(), 4096)
            .await
            .unwrap();
        (status, String::from_utf8(body.to_vec()).unwrap())
    };
    let (ok, body) = send(format!(r#"{{"version": "{good}"}}"#)).await;
    assert_eq!((ok, body.as_str()), (StatusCode::OK, good));
    let long = "9".repeat(100_000);
    for forged in [
        r#""00000000-0000-0000-0000-000000000000""#,
        r#""not-a-token""#,
        r#""""#,
        "7",
        "null",
        &format!(r#""{long}""#),
    ] {
        let (status, body) = send(format!(r#"{{"version": {forged}}}"#)).await;
        assert_eq!(
            status,
            StatusCode::UNPROCESSABLE_ENTITY,
            "{forged:.40}: {body}"
        );
        assert!(
            !body.contains(&long),
            "the rejection does not echo the token"
        );
    }
    let (syntax, _) = send(r#"{"version": "#.to_owned()).await;
    assert_eq!(syntax, StatusCode::BAD_REQUEST);
}
