//! The `time` crate's tokens advance, print and parse exactly as chrono's.

use time::macros::datetime;
use time::{Duration, OffsetDateTime, PrimitiveDateTime};

use super::super::timestamp::{floor_at, fresh_timestamp};
use super::*;

/// The chrono twin of a `PrimitiveDateTime`.
fn naive(t: PrimitiveDateTime) -> NaiveDateTime {
    at(&t.encode())
}

#[test]
fn a_fresh_token_is_the_chrono_token_at_every_precision() {
    let olds = [
        datetime!(2026-01-01 00:00:00.999_999),
        datetime!(2026-01-01 00:00:00.000_001),
        datetime!(1960-01-01 00:00:00.5),
    ];
    let nows = [
        datetime!(2026-01-01 00:00:00.4),
        datetime!(2026-01-01 00:00:07.654_321_9),
        datetime!(1950-01-01 00:00:00),
    ];
    for old in olds {
        for now in nows {
            for precision in [0, 1, 2, 3, 6, 9] {
                let fresh = fresh_timestamp(old, now, precision).unwrap();
                assert_eq!(
                    naive(fresh),
                    fresh_timestamp(naive(old), naive(now), precision).unwrap(),
                    "old {old}, now {now}, precision {precision}"
                );
                assert!(fresh > old, "{fresh} after {old}");
                let utc = fresh_timestamp(old.assume_utc(), now.assume_utc(), precision);
                assert_eq!(utc, Some(fresh.assume_utc()));
            }
        }
    }
    assert_eq!(
        floor_at(datetime!(1960-01-01 00:00:00.5), 0),
        datetime!(1960-01-01 00:00:00)
    );
}

#[test]
fn an_offset_token_advances_its_instant() {
    let old = datetime!(2999-01-01 02:00:00.5 +02:00);
    let fresh = old.try_next_token_at(3).unwrap();
    assert_eq!(fresh, datetime!(2999-01-01 00:00:00.501 UTC));
    assert_eq!(
        fresh.offset(),
        time::UtcOffset::UTC,
        "fresh tokens are at UTC"
    );
}

#[test]
fn the_end_of_time_is_an_out_of_range_token() {
    let reason = |r: Result<(), InvalidToken>| r.map_err(|e| e.reason);
    let out_of_range = Err(InvalidTokenReason::OutOfRange);
    let now = datetime!(2026-01-01 00:00:00);
    for precision in [0, 3, 6] {
        let old = floor_at(PrimitiveDateTime::MAX, precision);
        assert_eq!(fresh_timestamp(old, now, precision), None);
        assert_eq!(
            reason(old.try_next_token_at(precision).map(drop)),
            out_of_range
        );
        let utc = old.assume_utc();
        assert_eq!(
            reason(utc.try_next_token_at(precision).map(drop)),
            out_of_range
        );
        // The infallible form does not panic either: now, at the precision.
        assert!(old.next_token_at(precision) < old);
    }
    let last_second = floor_at(PrimitiveDateTime::MAX, 0);
    assert_eq!(reason(last_second.validate()), out_of_range);
    assert_eq!(reason(last_second.assume_utc().validate()), out_of_range);
    assert_eq!(
        reason(PrimitiveDateTime::decode(&last_second.encode()).map(drop)),
        out_of_range
    );
    let before = last_second - Duration::seconds(1);
    assert_eq!(PrimitiveDateTime::decode(&before.encode()), Ok(before));
    assert_eq!(before.try_next_token_at(0), Ok(last_second));
    // An offset that moves the instant past the end of the range.
    assert!(OffsetDateTime::decode("9999-12-31T23:59:59-01:00").is_err());
}

#[test]
fn a_token_is_matched_on_sqlite_by_the_texts_of_its_chrono_twin() {
    let token = datetime!(2024-01-02 03:04:05.5);
    assert_eq!(token.text_forms(), naive(token).text_forms());
    let instant = datetime!(2024-01-02 05:04:00 +02:00);
    let text = instant.text_forms().unwrap();
    assert_eq!(
        (text.seconds.as_str(), text.fraction.as_str()),
        ("2024-01-02 03:04:00", "")
    );
    assert!(
        text.applies_offset,
        "Diesel applies the offset of an OffsetDateTime"
    );
    assert_eq!(
        Some(text),
        naive(datetime!(2024-01-02 03:04:00)).and_utc().text_forms()
    );
}

#[test]
fn tokens_round_trip_through_the_client_form_of_chrono() {
    let primitive = PrimitiveDateTime::initial();
    assert_eq!(
        PrimitiveDateTime::decode(&primitive.encode()),
        Ok(primitive)
    );
    assert_eq!(primitive.encode(), naive(primitive).encode());
    let offset = OffsetDateTime::initial();
    assert_eq!(OffsetDateTime::decode(&offset.encode()), Ok(offset));
    let chrono_utc = DateTime::<Utc>::decode(&offset.encode()).unwrap();
    assert_eq!(chrono_utc.encode(), offset.encode());
    let east = datetime!(2024-01-02 05:04:05.25 +02:00);
    assert_eq!(east.encode(), "2024-01-02T03:04:05.250000Z");
    assert_eq!(
        datetime!(-0044-03-15 12:00:00).encode(),
        "-0044-03-15T12:00:00.000000"
    );
    let reason = |r: Result<PrimitiveDateTime, InvalidToken>| r.unwrap_err().reason;
    assert_eq!(
        reason(PrimitiveDateTime::decode(" ")),
        InvalidTokenReason::Empty
    );
    assert_eq!(
        reason(PrimitiveDateTime::decode("2024-01-02 03:04:05")),
        InvalidTokenReason::Malformed
    );
    assert_eq!(
        OffsetDateTime::decode("2024-01-02T03:04:05")
            .unwrap_err()
            .reason,
        InvalidTokenReason::Malformed,
        "an instant needs its offset"
    );
}

#[test]
fn values_only_convert_to_their_own_kind() {
    let primitive = datetime!(2024-01-02 03:04:05);
    let offset = primitive.assume_utc();
    assert_eq!(
        PrimitiveDateTime::from_value(&primitive.to_value()),
        Some(primitive)
    );
    assert_eq!(OffsetDateTime::from_value(&offset.to_value()), Some(offset));
    assert_eq!(PrimitiveDateTime::from_value(&offset.to_value()), None);
    assert_eq!(
        OffsetDateTime::from_value(&naive(primitive).to_value()),
        None
    );
    assert_eq!(
        datetime!(2024-01-02 05:04:05 +02:00).to_value(),
        TokenValue::OffsetDateTime(offset),
        "held at UTC"
    );
}
