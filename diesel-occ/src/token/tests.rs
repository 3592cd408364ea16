use super::chrono_token::NAIVE_FORMAT;
use super::timestamp::*;
use chrono::{DateTime, NaiveDateTime, SubsecRound, TimeDelta, Utc};
use uuid::Uuid;

use super::*;

mod time_tokens;

#[test]
fn counters_wrap_at_their_maximum() {
    assert_eq!(i16::MAX.next_token(), i16::MIN);
    assert_eq!(i32::MAX.next_token(), i32::MIN);
    assert_eq!(i64::MAX.next_token(), i64::MIN);
    assert_eq!(41_i32.next_token(), 42);
}

#[test]
fn fresh_uuid_differs_and_is_never_nil() {
    let old = Uuid::new_v4();
    let fresh = old.next_token();
    assert_ne!(fresh, old);
    assert!(!fresh.is_nil());
    assert!(Uuid::nil().next_token().validate().is_ok());
}

#[test]
fn fresh_timestamp_is_strictly_later_at_microseconds() {
    let now = NaiveDateTime::parse_from_str("2026-01-01T00:00:00.000001", NAIVE_FORMAT).unwrap();
    // The clock has not moved past the old token: the floor wins.
    assert_eq!(fresh(now, now, 6).to_string(), "2026-01-01 00:00:00.000002");
    // A token from the future (clock skew) still advances.
    let later = now + TimeDelta::seconds(5);
    assert_eq!(fresh(later, now, 6), later + TimeDelta::microseconds(1));
    // Nanoseconds are dropped: the database would drop them.
    let noisy = now + TimeDelta::nanoseconds(999);
    assert_eq!(fresh(now - TimeDelta::seconds(1), noisy, 6), now);
}

/// [`fresh_timestamp`] where a fresh token exists.
fn fresh(old: NaiveDateTime, now: NaiveDateTime, precision: u8) -> NaiveDateTime {
    fresh_timestamp(old, now, precision).unwrap()
}

fn at(text: &str) -> NaiveDateTime {
    NaiveDateTime::parse_from_str(text, NAIVE_FORMAT).unwrap()
}

#[test]
fn fresh_timestamp_is_a_whole_step_of_the_declared_precision() {
    let old = at("2026-01-01T00:00:00.999999");
    let now = at("2026-01-01T00:00:00.400000");
    // The clock is behind the token: one step past the old token's own step.
    assert_eq!(fresh(old, now, 0), at("2026-01-01T00:00:01.000000"));
    assert_eq!(fresh(old, now, 3), at("2026-01-01T00:00:01.000000"));
    assert_eq!(fresh(old, now, 1), at("2026-01-01T00:00:01.000000"));
    // The clock is ahead: now, truncated to the step.
    let now = at("2026-01-01T00:00:07.654321");
    assert_eq!(fresh(old, now, 0), at("2026-01-01T00:00:07.000000"));
    assert_eq!(fresh(old, now, 2), at("2026-01-01T00:00:07.650000"));
    // Larger precisions count as microseconds.
    assert_eq!(fresh(old, now, 9), now);
}

#[test]
fn a_fresh_timestamp_never_rounds_back_onto_the_old_one() {
    // Whatever the column keeps (truncating or rounding to 0..=6 digits), the
    // whole-second token differs from every old token the column could hold.
    let old = at("2026-01-01T00:00:00.000000");
    for now in ["2026-01-01T00:00:00.000000", "2026-01-01T00:00:00.700000"] {
        let fresh = fresh(old, at(now), 0);
        for digits in 0..=6 {
            assert_ne!(fresh.trunc_subsecs(digits), old);
            assert_ne!(fresh.round_subsecs(digits), old);
        }
    }
}

#[test]
fn timestamps_before_the_epoch_floor_downwards() {
    let old = at("1960-01-01T00:00:00.500000");
    assert_eq!(floor_at(old, 0), at("1960-01-01T00:00:00.000000"));
    assert_eq!(
        fresh(old, at("1950-01-01T00:00:00.000000"), 0),
        at("1960-01-01T00:00:01.000000")
    );
}

#[test]
fn the_end_of_time_is_an_out_of_range_token() {
    let now = at("2026-01-01T00:00:00.000000");
    let reason = |r: Result<(), InvalidToken>| r.map_err(|e| e.reason);
    let out_of_range = Err(InvalidTokenReason::OutOfRange);
    for precision in [0, 3, 6] {
        let old = floor_at(NaiveDateTime::MAX, precision);
        assert_eq!(fresh_timestamp(old, now, precision), None);
        assert_eq!(
            reason(old.try_next_token_at(precision).map(drop)),
            out_of_range
        );
        let utc = old.and_utc();
        assert_eq!(
            reason(utc.try_next_token_at(precision).map(drop)),
            out_of_range
        );
        // The infallible form does not panic either: now, at the precision.
        assert!(old.next_token_at(precision) < old);
    }
    // The last second is refused at every precision: whole seconds cannot follow.
    let last_second = floor_at(NaiveDateTime::MAX, 0);
    assert_eq!(reason(last_second.validate()), out_of_range);
    assert_eq!(reason(last_second.and_utc().validate()), out_of_range);
    let decoded = NaiveDateTime::decode(&last_second.encode());
    assert_eq!(reason(decoded.map(drop)), out_of_range);
    let before = last_second - TimeDelta::seconds(1);
    assert_eq!(NaiveDateTime::decode(&before.encode()), Ok(before));
    assert_eq!(before.try_next_token_at(0), Ok(last_second));
}

#[test]
fn a_timestamp_token_is_matched_by_its_whole_seconds_and_its_fraction() {
    let token = at("2024-01-02T03:04:05.500000");
    let text = token.text_forms().unwrap();
    assert_eq!(text.seconds, "2024-01-02 03:04:05");
    assert_eq!(text.fraction, ".5");
    assert!(
        !text.applies_offset,
        "Diesel ignores the offset of a naive timestamp"
    );
    let whole = at("2024-01-02T03:04:00.000000").and_utc();
    let text = whole.text_forms().unwrap();
    assert_eq!(
        (text.seconds.as_str(), text.fraction.as_str()),
        ("2024-01-02 03:04:00", "")
    );
    assert!(
        text.applies_offset,
        "Diesel applies the offset of a DateTime<Utc>"
    );
    assert_eq!(7_i32.text_forms(), None);
}

#[test]
fn tokens_round_trip_through_their_client_form() {
    let uuid = Uuid::new_v4();
    assert_eq!(Uuid::decode(&uuid.encode()).unwrap(), uuid);
    let naive = NaiveDateTime::initial();
    assert_eq!(NaiveDateTime::decode(&naive.encode()).unwrap(), naive);
    let utc = DateTime::<Utc>::initial();
    assert_eq!(DateTime::<Utc>::decode(&utc.encode()).unwrap(), utc);
    assert_eq!(i16::decode(&i16::MIN.encode()).unwrap(), i16::MIN);
}

#[test]
fn bad_client_tokens_are_typed_errors() {
    let reason = |r: Result<i64, InvalidToken>| r.unwrap_err().reason;
    assert_eq!(reason(i64::decode("")), InvalidTokenReason::Empty);
    assert_eq!(reason(i64::decode("  ")), InvalidTokenReason::Empty);
    assert_eq!(reason(i64::decode("+1")), InvalidTokenReason::Malformed);
    assert_eq!(reason(i64::decode("1e3")), InvalidTokenReason::Malformed);
    assert_eq!(
        reason(i64::decode(&"9".repeat(65))),
        InvalidTokenReason::TooLong
    );
    assert_eq!(
        Uuid::decode("00000000-0000-0000-0000-000000000000")
            .unwrap_err()
            .reason,
        InvalidTokenReason::Nil
    );
    assert_eq!(
        i16::decode("40000").unwrap_err().reason,
        InvalidTokenReason::Malformed
    );
}

#[test]
fn values_only_convert_to_their_own_kind() {
    assert_eq!(i16::from_value(&TokenValue::Integer(70_000)), None);
    assert_eq!(Uuid::from_value(&TokenValue::Integer(1)), None);
    assert_eq!(i32::from_value(&7_i32.to_value()), Some(7));
}

/// A check column's value has a timestamp token's text forms when it is one of the token
/// types or a `Some` of one, and none otherwise.
#[test]
fn check_values_have_text_forms_when_they_are_timestamps() {
    let naive = NaiveDateTime::parse_from_str("2024-01-02T03:04:05.250000", NAIVE_FORMAT).unwrap();
    let utc = naive.and_utc();
    let primitive = time::macros::datetime!(2024-01-02 03:04:05.25);
    let offset = primitive.assume_utc();
    assert_eq!(check_text_forms(&naive), naive.text_forms());
    assert_eq!(check_text_forms(&Some(naive)), naive.text_forms());
    assert_eq!(check_text_forms(&utc), utc.text_forms());
    assert_eq!(check_text_forms(&Some(utc)), utc.text_forms());
    assert_eq!(check_text_forms(&primitive), primitive.text_forms());
    assert_eq!(check_text_forms(&Some(offset)), offset.text_forms());
    assert!(check_text_forms(&naive).is_some_and(|forms| !forms.applies_offset));
    assert!(check_text_forms(&utc).is_some_and(|forms| forms.applies_offset));
    assert_eq!(check_text_forms(&None::<NaiveDateTime>), None);
    assert_eq!(check_text_forms(&None::<time::OffsetDateTime>), None);
    assert_eq!(check_text_forms(&String::from("2024-01-02 03:04:05")), None);
    assert_eq!(check_text_forms(&Some(3_i32)), None);
    assert_eq!(check_text_forms(&3_i64), None);
}
