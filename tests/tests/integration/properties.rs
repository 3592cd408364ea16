//! Property tests for client-supplied tokens: every token survives its client form,
//! and no input text makes decoding panic or accept something it should not.

use chrono::{DateTime, NaiveDateTime, TimeZone, Utc};
use diesel_occ::{InvalidTokenReason, MAX_ENCODED_LEN, UuidToken, VersionToken};
use proptest::prelude::*;

fn naive_micros() -> impl Strategy<Value = NaiveDateTime> {
    // Years 1..=9999 at microsecond precision: what the databases store.
    let years_1_to_9999 = -62_135_596_800_000_000_i64..253_402_300_799_999_999_i64;
    years_1_to_9999.prop_map(|micros| Utc.timestamp_micros(micros).unwrap().naive_utc())
}

proptest! {
    #[test]
    fn integer_tokens_round_trip(n16: i16, n32: i32, n64: i64) {
        prop_assert_eq!(i16::decode(&n16.encode()), Ok(n16));
        prop_assert_eq!(i32::decode(&n32.encode()), Ok(n32));
        prop_assert_eq!(i64::decode(&n64.encode()), Ok(n64));
    }

    #[test]
    fn counters_wrap_and_always_change(n16: i16, n64: i64) {
        prop_assert_eq!(n16.next_token(), n16.wrapping_add(1));
        prop_assert_ne!(n16.next_token(), n16);
        prop_assert_ne!(n64.next_token(), n64);
    }

    #[test]
    fn uuid_tokens_round_trip_unless_nil(bytes: [u8; 16]) {
        let uuid = uuid::Uuid::from_bytes(bytes);
        let decoded = UuidToken::decode(&uuid.encode());
        if uuid.is_nil() {
            prop_assert_eq!(decoded.unwrap_err().reason, InvalidTokenReason::Nil);
        } else {
            prop_assert_eq!(decoded, Ok(UuidToken(uuid)));
        }
    }

    #[test]
    fn timestamp_tokens_round_trip(naive in naive_micros()) {
        prop_assert_eq!(NaiveDateTime::decode(&naive.encode()), Ok(naive));
        let utc: DateTime<Utc> = naive.and_utc();
        prop_assert_eq!(DateTime::<Utc>::decode(&utc.encode()), Ok(utc));
    }

    #[test]
    fn fresh_timestamps_are_strictly_later(naive in naive_micros()) {
        let fresh = naive.next_token();
        prop_assert!(fresh > naive);
        prop_assert_eq!(fresh.and_utc().timestamp_subsec_nanos() % 1_000, 0, "microsecond precision");
    }

    #[test]
    fn arbitrary_text_decodes_to_a_token_or_a_typed_error(text in ".{0,100}") {
        // No panic, and whatever is accepted re-encodes to a token that decodes equal.
        check_decode::<i16>(&text)?;
        check_decode::<i64>(&text)?;
        check_decode::<UuidToken>(&text)?;
        check_decode::<NaiveDateTime>(&text)?;
        check_decode::<DateTime<Utc>>(&text)?;
    }

    #[test]
    fn oversized_tokens_are_refused(extra in 1usize..200) {
        let text = "1".repeat(MAX_ENCODED_LEN + extra);
        prop_assert_eq!(i64::decode(&text).unwrap_err().reason, InvalidTokenReason::TooLong);
    }
}

fn check_decode<T: VersionToken>(text: &str) -> Result<(), TestCaseError> {
    match T::decode(text) {
        Ok(token) => {
            prop_assert!(token.validate().is_ok());
            prop_assert_eq!(T::decode(&token.encode()), Ok(token));
        }
        Err(error) => {
            // Typed, and its message never echoes the input back.
            let shown = error.to_string();
            prop_assert!(shown.starts_with("invalid concurrency token: "));
            if text.trim().len() > 3 {
                prop_assert!(!shown.contains(text.trim()), "{shown:?} echoes {text:?}");
            }
        }
    }
    Ok(())
}

/// Why `T` refuses `text`.
fn refusal<T: VersionToken>(text: &str) -> InvalidTokenReason {
    T::decode(text).unwrap_err().reason
}

#[test]
fn extremes_wrap_and_survive_their_client_form() {
    use InvalidTokenReason::{Empty, Malformed};
    assert_eq!(i64::MAX.next_token(), i64::MIN);
    assert_eq!(i16::MAX.next_token(), i16::MIN);
    assert_eq!(i64::decode(&i64::MIN.encode()), Ok(i64::MIN));
    assert_eq!(refusal::<i16>("32768"), Malformed);
    assert_eq!(refusal::<UuidToken>(""), Empty);
    assert_eq!(refusal::<UuidToken>("not-a-uuid"), Malformed);
}

#[test]
fn i32_counters_wrap_and_out_of_range_text_is_refused() {
    use InvalidTokenReason::Malformed;
    assert_eq!(i32::MAX.next_token(), i32::MIN);
    assert_eq!(i32::decode(&i32::MAX.encode()), Ok(i32::MAX));
    assert_eq!(refusal::<i32>("2147483648"), Malformed);
    assert_eq!(refusal::<i64>("9223372036854775808"), Malformed);
}

/// The inventory app's token form field, fed hostile input. (The `If-Match` parser's
/// own properties are in `diesel-occ-axum/src/parse/tests.rs`.)
mod form_field {
    use diesel::Connection;
    use diesel::sqlite::SqliteConnection;
    use diesel_occ::{InvalidTokenReason, UuidToken, VersionToken};
    use diesel_occ_examples::sqlite::{inventory, migrate};
    use inventory::{ReserveError, ReserveRequest};
    use proptest::prelude::*;

    fn app() -> (tempfile::TempDir, SqliteConnection, String) {
        let dir = tempfile::tempdir().expect("temp dir");
        let path = dir.path().join("form.sqlite3");
        let path = path.to_str().expect("utf-8");
        migrate(path).expect("SQLite");
        let mut conn = SqliteConnection::establish(path).expect("SQLite");
        let view = inventory::add_item(&mut conn, "sku-1", "widget", 10).expect("seed");
        (dir, conn, view.token)
    }

    /// The token the row holds, and its stock.
    fn current(conn: &mut SqliteConnection) -> (String, i32) {
        let view = inventory::stock(conn, "sku-1").expect("row");
        (view.token, view.available)
    }

    /// A reservation of one `sku-1` with this token field.
    fn request(token: Option<&str>) -> ReserveRequest<'_> {
        let sku = "sku-1";
        ReserveRequest {
            sku,
            quantity: 1,
            token,
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(64))]

        /// The reservation form's token field, as the client sends it: absent, arbitrary
        /// text, a valid but different token, or the current one with noise around it.
        /// Only the current token reaches the save; everything else is a typed refusal
        /// and writes nothing.
        #[test]
        fn the_reservation_token_field_accepts_only_the_current_token(
            field in prop::option::of(prop_oneof![
                "\\PC{0,80}",
                "[0-9a-f-]{30,40}",
                any::<[u8; 16]>().prop_map(|b| uuid::Uuid::from_bytes(b).to_string()),
                Just(String::new()),
                Just(uuid::Uuid::nil().to_string()),
                "[0-9]{65,200}",
            ]),
        ) {
            let (_dir, mut conn, token) = app();
            let outcome = inventory::reserve(&mut conn, &request(field.as_deref()));
            let (now, available) = current(&mut conn);
            let decoded = field.as_deref().map(UuidToken::decode);
            match (&decoded, outcome) {
                (None, Err(ReserveError::TokenRequired)) => {}
                (Some(Err(invalid)), Err(ReserveError::InvalidToken(reason))) => {
                    prop_assert_eq!(invalid.reason, reason);
                }
                (Some(Ok(sent)), Err(ReserveError::StaleToken { current })) => {
                    prop_assert_ne!(sent.encode(), token.clone());
                    prop_assert_eq!(current, token.clone());
                }
                (Some(Ok(sent)), Ok(reserved)) => {
                    prop_assert_eq!(UuidToken::decode(&token), Ok(*sent));
                    prop_assert_eq!(reserved.token, now.clone());
                    prop_assert_eq!(available, 9);
                    return Ok(());
                }
                (decoded, outcome) => {
                    prop_assert!(false, "field {field:?} ({decoded:?}) ended in {outcome:?}");
                }
            }
            prop_assert_eq!((now, available), (token, 10), "a refusal wrote nothing");
        }
    }

    /// The current token itself, with the padding a form may add, is accepted once;
    /// sending it again is a stale-token refusal.
    #[test]
    fn the_current_token_is_accepted_once() {
        use InvalidTokenReason::Nil;
        let (_dir, mut conn, token) = app();
        let padded = format!("  {token}\t");
        let padded = request(Some(&padded));
        let reserved = inventory::reserve(&mut conn, &padded).expect("current token");
        assert_ne!(reserved.token, token);
        let again = inventory::reserve(&mut conn, &padded);
        assert!(matches!(again, Err(ReserveError::StaleToken { .. })));
        let nil = uuid::Uuid::nil().to_string();
        let nil = inventory::reserve(&mut conn, &request(Some(&nil)));
        assert!(matches!(nil, Err(ReserveError::InvalidToken(Nil))));
    }
}

/// The HTTP app end to end: arbitrary `If-Match` header lines (any bytes a header may
/// carry, obs-text included, sometimes with the current ETag among them) on a PUT to
/// the real axum server over SQLite. The answer is what diesel-occ-axum's `IfMatch`
/// decides (428, 400, 412 with the current ETag), never a 5xx and never a write, unless
/// the header matches the current version (then 200 and a new ETag).
mod http_if_match {
    use std::sync::OnceLock;

    use diesel_occ::{UuidToken, VersionToken};
    use diesel_occ_axum::IfMatch;
    use diesel_occ_examples::sqlite::{async_pool, http, migrate};
    use proptest::prelude::*;
    use reqwest::header::{ETAG, HeaderValue, IF_MATCH};

    struct App {
        runtime: tokio::runtime::Runtime,
        client: reqwest::Client,
        url: String,
        _dir: tempfile::TempDir,
    }

    fn app() -> &'static App {
        static APP: OnceLock<App> = OnceLock::new();
        APP.get_or_init(|| {
            let dir = tempfile::tempdir().expect("temp dir");
            let path = dir.path().join("http.sqlite3");
            let path = path.to_str().expect("utf-8").to_owned();
            migrate(&path).expect("SQLite");
            let mut runtime = tokio::runtime::Builder::new_multi_thread();
            let runtime = runtime.worker_threads(2).enable_all().build();
            let runtime = runtime.expect("runtime");
            let client = reqwest::Client::new();
            let url = runtime.block_on(async {
                let pool = async_pool(&path, 2).expect("pool");
                let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
                let base = format!("http://{}", listener.local_addr().unwrap());
                tokio::spawn(http::serve(listener, pool));
                let article = serde_json::json!({"title": "Draft", "body": "First."});
                let created = client.post(format!("{base}/articles")).json(&article);
                let created = created.send().await.expect("create");
                assert_eq!(created.status(), reqwest::StatusCode::CREATED);
                let body: serde_json::Value = created.json().await.expect("json");
                format!("{base}/articles/{}", body["id"].as_str().expect("id"))
            });
            App {
                runtime,
                client,
                url,
                _dir: dir,
            }
        })
    }

    /// The article's current ETag.
    async fn current(app: &App) -> String {
        let reply = app.client.get(&app.url).send().await.expect("GET");
        let etag = reply.headers()[ETAG].to_str();
        etag.expect("ASCII ETag").to_owned()
    }

    /// Bytes a header value may hold: visible ASCII, space, tab and obs-text.
    fn header_line() -> impl Strategy<Value = Vec<u8>> {
        let byte = prop_oneof![0x20u8..=0x7e, Just(b'\t'), 0x80u8..=0xff];
        prop_oneof![
            prop::collection::vec(byte, 0..80),
            "[\"W/, *a-f0-9-]{0,60}".prop_map(String::into_bytes),
        ]
        .prop_map(|bytes| {
            // Leading/trailing whitespace is trimmed by HTTP itself.
            let start = bytes.iter().position(|b| *b != b' ' && *b != b'\t');
            bytes[start.unwrap_or(bytes.len())..].to_vec()
        })
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(96))]

        #[test]
        fn hostile_if_match_headers_never_write_or_fail_the_server(
            lines in prop::collection::vec(header_line(), 0..3),
            with_current in any::<bool>(),
        ) {
            let app = app();
            let (status, etag, before, after, sent) = app.runtime.block_on(async {
                let before = current(app).await;
                let mut lines = lines.clone();
                if with_current {
                    lines.push(before.clone().into_bytes());
                }
                let mut request = app.client.put(&app.url);
                for line in &lines {
                    let value = HeaderValue::from_bytes(line).expect("a valid header value");
                    request = request.header(IF_MATCH, value);
                }
                let edited = serde_json::json!({"title": "Edited", "body": "Again."});
                let reply = request.json(&edited).send().await.expect("a response");
                let status = reply.status().as_u16();
                let etag = reply.headers().get(ETAG).map(|v| v.to_str().expect("ASCII").to_owned());
                let text = reply.text().await.unwrap_or_default().to_lowercase();
                assert!(!text.contains("sql") && !text.contains("database"), "{text}");
                (status, etag, before, current(app).await, lines)
            });
            // What the app should have decided, from the parser its own properties cover.
            let token = UuidToken::decode(before.trim_matches('"')).expect("the current token");
            match IfMatch::from_header_lines(sent.iter().map(Vec::as_slice)) {
                Err(problem) => {
                    prop_assert_eq!(status, problem.status().as_u16());
                    prop_assert_eq!(after, before);
                }
                Ok(if_match) if if_match.matches(&token) => {
                    prop_assert_eq!(status, 200);
                    prop_assert_ne!(&after, &before, "the write changed the ETag");
                    prop_assert_eq!(etag, Some(after));
                }
                Ok(_) => {
                    prop_assert_eq!(status, 412);
                    prop_assert_eq!(etag, Some(before.clone()), "the current ETag");
                    prop_assert_eq!(after, before);
                }
            }
        }
    }
}
