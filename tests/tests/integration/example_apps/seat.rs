//! The last concert seat.

use diesel_occ::retry::RetryPolicy;

use super::super::assert_told;
use super::app_backend::Pool;
use super::app_backend::seat::{self, Booking, BookingError, Protocol};
use super::{Conn, app_backend};

fn concert(pool: &Pool, seats: i32) {
    let mut conn = pool.get().unwrap();
    seat::create_concert(&mut conn, 1, "The Last Waltz", seats).unwrap();
}

#[test]
fn n_buyers_one_seat_exactly_one_confirmation() {
    let (_db, pool) = app_db!();
    concert(&pool, 1);
    let report = seat::rush(&pool, 1, 4, Protocol::Checked { max_attempts: 3 }).unwrap();
    assert_eq!(
        report.to_string(),
        "4 buyers, 1 seat: 1 confirmed, 3 sold out, available 0"
    );
    let counts = (report.confirmed(), report.sold_out(), report.failed());
    assert_eq!(counts, (1, 3, 0));

    // The winner holds seat 1 and is the one assignment; losers saw a conflict at
    // save and then a clear sold-out on their re-read.
    let first_try = Booking::Confirmed {
        seat_no: 1,
        attempts: 1,
    };
    let outcomes = &report.outcomes;
    let winner = outcomes
        .iter()
        .position(|o| o.as_ref().ok() == Some(&first_try));
    let winner = winner.expect("a confirmation on the first attempt");
    assert_eq!(report.assignments.len(), 1);
    assert_eq!(report.assignments[0].buyer, format!("buyer-{}", winner + 1));
    for (n, outcome) in outcomes.iter().enumerate() {
        if n != winner {
            assert_matches!(outcome, Ok(Booking::SoldOut { attempts: 2 }));
        }
    }

    // One decrement: one write advanced the token once.
    let after = seat::load(&mut pool.get().unwrap(), 1).unwrap();
    assert_eq!((after.available, after.version), (0, 2));
}

#[test]
fn unique_constraint_is_the_final_durable_guard() {
    // Buyers that skip the token check all decrement from the same read; only the unique
    // constraint on (concert, seat) stands between them and a seat sold four times.
    let (_db, pool) = app_db!();
    concert(&pool, 1);
    let report = seat::rush(&pool, 1, 4, Protocol::Unchecked).unwrap();
    assert_eq!(report.confirmed(), 1, "{report:?}");
    assert_eq!(report.seat_taken(), 3, "{report:?}");
    assert_eq!(report.assignments.len(), 1, "one holder for seat 1");
    assert_eq!(report.available, 0);
    for error in report.outcomes.iter().filter_map(|o| o.as_ref().err()) {
        assert_matches!(error, BookingError::SeatTaken { seat_no: 1 });
    }
}

#[test]
fn more_buyers_than_seats_fill_every_seat_once() {
    let (_db, pool) = app_db!();
    concert(&pool, 2);
    let report = seat::rush(&pool, 1, 5, Protocol::Checked { max_attempts: 3 }).unwrap();
    assert_eq!(
        report.to_string(),
        "5 buyers, 2 seats: 2 confirmed, 3 sold out, available 0",
        "{report:?}"
    );
    let seats: Vec<i32> = report.assignments.iter().map(|a| a.seat_no).collect();
    assert_eq!(seats, vec![1, 2]);
}

#[test]
fn retries_are_bounded() {
    let (_db, pool) = app_db!();
    concert(&pool, 1);
    // One attempt each: the buyers who lose the forced race give up instead of
    // re-reading.
    let report = seat::rush(&pool, 1, 3, Protocol::Checked { max_attempts: 1 }).unwrap();
    assert_eq!(report.confirmed(), 1);
    let gave_up = report
        .outcomes
        .iter()
        .filter(|o| matches!(o, Err(BookingError::GaveUp { attempts: 1 })))
        .count();
    assert_eq!(gave_up, 2, "{report:?}");
    assert_eq!(report.available, 0);
}

#[test]
fn unknown_concert_is_a_clear_error() {
    let (_db, pool) = app_db!();
    let policy = RetryPolicy::new().max_attempts(3);
    let result = seat::book(&pool, &policy, 42, "buyer", |_| {});
    assert_matches!(result, Err(BookingError::UnknownConcert(42)));
}

#[test]
fn walkthrough_tells_the_whole_story() {
    let (_db, pool) = app_db!();
    let mut out = Vec::new();
    seat::walkthrough(&pool, 4, &mut out).unwrap();
    let told = [
        "with the token check:    4 buyers, 1 seat: 1 confirmed, 3 sold out, available 0",
        "3 refused by the unique constraint, available 0",
    ];
    assert_told(out, &told);
}
