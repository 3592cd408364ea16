//! Property tests for client-supplied tokens: every token survives its client form,
//! and no input text makes decoding panic or accept something it should not.

use chrono::{DateTime, NaiveDateTime, TimeZone, Utc};
use diesel_occ::{InvalidTokenReason, MAX_ENCODED_LEN, UuidToken, VersionToken};
use proptest::prelude::*;

fn naive_micros() -> impl Strategy<Value = NaiveDateTime> {
    // Years 1..=9999 at microsecond precision: what the databases store.
    (-62_135_596_800_000_000_i64..253_402_300_799_999_999_i64).prop_map(|micros| {
        Utc.timestamp_micros(micros)
            .single()
            .expect("in range")
            .naive_utc()
    })
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

#[test]
fn extremes_wrap_and_survive_their_client_form() {
    assert_eq!(i64::MAX.next_token(), i64::MIN);
    assert_eq!(i16::MAX.next_token(), i16::MIN);
    assert_eq!(i64::decode(&i64::MIN.encode()), Ok(i64::MIN));
    assert_eq!(i16::decode("32768").unwrap_err().reason, InvalidTokenReason::Malformed);
    assert_eq!(UuidToken::decode("").unwrap_err().reason, InvalidTokenReason::Empty);
    assert_eq!(
        UuidToken::decode("not-a-uuid").unwrap_err().reason,
        InvalidTokenReason::Malformed
    );
}
