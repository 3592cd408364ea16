//! The client form in bodies: what `decode` accepts and nothing else, never a panic.

use serde::{Deserialize, Serialize};

use super::Encoded;
use crate::{InvalidToken, InvalidTokenReason, TokenKind, TokenValue, UuidToken, VersionToken};

/// A body with a required token, as an SPA's JSON or a form with a hidden field.
#[derive(Debug, PartialEq, Serialize, Deserialize)]
struct Body<T: VersionToken> {
    #[serde(with = "crate::serde_token")]
    version: T,
}

/// The token `json` (a JSON value) holds as the `version` field, or the error's text.
fn read<T: VersionToken>(json: &str) -> Result<T, String> {
    serde_json::from_str::<Body<T>>(&format!(r#"{{"version": {json}}}"#))
        .map(|body| body.version)
        .map_err(|error| error.to_string())
}

/// A JSON string holding `text`.
fn quoted(text: &str) -> String {
    serde_json::to_string(text).unwrap()
}

/// Every token kind round-trips through its client form, as a JSON string.
#[test]
fn every_kind_round_trips_as_its_client_form() {
    fn round_trip<T: VersionToken>(token: T) {
        let json = serde_json::to_string(&Body {
            version: token.clone(),
        })
        .unwrap();
        assert_eq!(
            json,
            format!(r#"{{"version":{}}}"#, quoted(&token.encode()))
        );
        let back: Body<T> = serde_json::from_str(&json).unwrap();
        assert_eq!(back.version, token, "{json}");
    }
    round_trip(i16::MIN);
    round_trip(7_i32);
    round_trip(i64::MAX);
    round_trip(uuid::Uuid::initial());
    round_trip(UuidToken::initial());
    round_trip(chrono::NaiveDateTime::initial_at(6));
    round_trip(chrono::DateTime::<chrono::Utc>::initial_at(3));
    round_trip(time::PrimitiveDateTime::initial_at(6));
    round_trip(time::OffsetDateTime::initial_at(0));
}

/// A body accepts exactly what `decode` accepts, the same value, and refuses the rest
/// with an error that says why without repeating the text.
#[test]
fn a_body_accepts_exactly_what_decode_accepts() {
    fn same<T: VersionToken>(texts: &[&str]) {
        for text in texts {
            let decoded = T::decode(text);
            let read = read::<T>(&quoted(text));
            match (&decoded, &read) {
                (Ok(token), Ok(read)) => assert_eq!(read, token, "{text:?}"),
                (Err(invalid), Err(error)) => {
                    assert!(error.contains(&invalid.to_string()), "{text:?}: {error}");
                    if text.len() > 2 {
                        assert!(!error.contains(text), "echoes {text:?}: {error}");
                    }
                }
                _ => panic!("{text:?}: decode {decoded:?}, body {read:?}"),
            }
        }
    }
    let long = "1".repeat(crate::MAX_ENCODED_LEN + 1);
    let padded = format!("{}7", "0".repeat(crate::MAX_ENCODED_LEN + 1));
    let counters = [
        "7", " 7 ", "-3", "+7", "7x", "1.0", "0x10", "", "   ", "40000", "-40000", &long, &padded,
        "٣",
    ];
    same::<i16>(&counters);
    same::<i32>(&counters);
    same::<i64>(&counters);
    let uuids = [
        "67e55044-10b1-426f-9247-bb680e5fe0c8",
        "67E55044-10B1-426F-9247-BB680E5FE0C8",
        "67e5504410b1426f9247bb680e5fe0c8",
        "00000000-0000-0000-0000-000000000000",
        "67e55044-10b1-426f-9247",
        "not a uuid",
        "",
        &long,
    ];
    same::<uuid::Uuid>(&uuids);
    same::<UuidToken>(&uuids);
    let timestamps = [
        "2024-01-02T03:04:05.123456",
        "2024-01-02T03:04:05Z",
        "2024-01-02T03:04:05+02:00",
        "2024-13-02T03:04:05",
        "+262142-12-31T23:59:59.999999",
        "yesterday",
        "",
        &long,
    ];
    same::<chrono::NaiveDateTime>(&timestamps);
    same::<chrono::DateTime<chrono::Utc>>(&timestamps);
    same::<time::PrimitiveDateTime>(&timestamps);
    same::<time::OffsetDateTime>(&timestamps);
}

/// The named refusals: malformed, empty, oversized, out of range and nil tokens.
#[test]
fn forged_and_malformed_tokens_are_errors() {
    let why = |reason| InvalidToken::new(reason).to_string();
    for (json, reason) in [
        (r#""7x""#, InvalidTokenReason::Malformed),
        (r#""+7""#, InvalidTokenReason::Malformed),
        (r#""""#, InvalidTokenReason::Empty),
        (r#""99999999999""#, InvalidTokenReason::Malformed),
    ] {
        let error = read::<i32>(json).unwrap_err();
        assert!(error.contains(&why(reason)), "{json}: {error}");
    }
    let oversized = quoted(&"9".repeat(10_000));
    let error = read::<i64>(&oversized).unwrap_err();
    assert!(error.contains(&why(InvalidTokenReason::TooLong)), "{error}");
    let nil = quoted(&uuid::Uuid::nil().to_string());
    let error = read::<UuidToken>(&nil).unwrap_err();
    assert!(error.contains(&why(InvalidTokenReason::Nil)), "{error}");
    let end = quoted("+262142-12-31T23:59:59.999999");
    let error = read::<chrono::NaiveDateTime>(&end).unwrap_err();
    assert!(
        error.contains(&why(InvalidTokenReason::OutOfRange)),
        "{error}"
    );
}

/// The client form is a string: a number, even the right one, and any other JSON type
/// are refused, as an `i64` beyond 2^53 would reach JavaScript rounded.
#[test]
fn numbers_and_other_types_are_not_tokens() {
    for json in [
        "7",
        "7.0",
        "-1",
        "true",
        "null",
        "[]",
        r#"{"v": "7"}"#,
        r#"["7"]"#,
    ] {
        let error = read::<i64>(json).unwrap_err();
        assert!(
            error.contains("a concurrency token as a string"),
            "{json}: {error}"
        );
    }
    assert!(read::<uuid::Uuid>("null").is_err());
    assert!(read::<chrono::NaiveDateTime>("1704164645").is_err());
    assert_eq!(
        serde_json::to_string(&Encoded(9_007_199_254_740_993_i64)).unwrap(),
        r#""9007199254740993""#
    );
}

/// The wrapper and the optional form behave as the field functions.
#[test]
fn encoded_and_option_read_what_the_functions_read() {
    #[derive(Debug, PartialEq, Serialize, Deserialize)]
    struct Form {
        #[serde(default, with = "crate::serde_token::option")]
        version: Option<UuidToken>,
    }
    let token = UuidToken::initial();
    let form = Form {
        version: Some(token),
    };
    let json = serde_json::to_string(&form).unwrap();
    assert_eq!(json, format!(r#"{{"version":"{token}"}}"#));
    assert_eq!(serde_json::from_str::<Form>(&json).unwrap(), form);
    assert_eq!(serde_json::from_str::<Form>("{}").unwrap().version, None);
    assert_eq!(
        serde_json::from_str::<Form>(r#"{"version":null}"#)
            .unwrap()
            .version,
        None
    );
    for forged in [r#""""#, r#""00000000-0000-0000-0000-000000000000""#, "7"] {
        let json = format!(r#"{{"version":{forged}}}"#);
        assert!(serde_json::from_str::<Form>(&json).is_err(), "{json}");
    }

    let tokens: Vec<Encoded<i16>> = serde_json::from_str(r#"["1", "-2"]"#).unwrap();
    assert_eq!(tokens, [Encoded(1), Encoded(-2)]);
    assert!(serde_json::from_str::<Vec<Encoded<i16>>>(r#"["1", "70000"]"#).is_err());
    // UuidToken's own impls are the client form too.
    let json = serde_json::to_string(&token).unwrap();
    assert_eq!(json, quoted(&token.encode()));
    assert_eq!(serde_json::from_str::<UuidToken>(&json).unwrap(), token);
    assert!(serde_json::from_str::<UuidToken>(&quoted(&uuid::Uuid::nil().to_string())).is_err());
}

/// The check columns of an entity without a version column stand for its token; they
/// have no client form, in a body as in an ETag.
#[test]
fn a_versionless_token_has_no_client_form() {
    #[derive(Debug, Clone, PartialEq)]
    struct Columns;

    impl VersionToken for Columns {
        const KIND: TokenKind = TokenKind::Columns;

        fn initial() -> Self {
            Columns
        }

        fn next_token(&self) -> Self {
            Columns
        }

        fn to_value(&self) -> TokenValue {
            TokenValue::Columns(crate::CheckValues::as_read())
        }

        fn from_value(_: &TokenValue) -> Option<Self> {
            None
        }

        fn decode(_: &str) -> Result<Self, InvalidToken> {
            Err(crate::token::no_client_token())
        }
    }

    let versionless = InvalidToken::new(InvalidTokenReason::Versionless).to_string();
    let error = serde_json::to_string(&Encoded(Columns)).unwrap_err();
    assert!(error.to_string().contains(&versionless), "{error}");
    let error = read::<Columns>(r#""(the values as read)""#).unwrap_err();
    assert!(error.contains(&versionless), "{error}");
}
