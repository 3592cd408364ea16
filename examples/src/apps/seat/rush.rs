//! The rush: buyers who read the same concert and book at once.

use std::fmt;
use std::io::Write;
use std::sync::Barrier;
use std::thread;

use diesel_occ::retry::RetryPolicy;

use super::{
    Booking, BookingError, Pool, SeatAssignment, assignments, book, book_unchecked, create_concert,
    load, reset, unavailable,
};

/// Whether the buyers check the token.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Protocol {
    /// [`book`]: the token in the predicate, bounded retries.
    Checked {
        /// Attempts per buyer.
        max_attempts: u32,
    },
    /// [`book_unchecked`]: plain read-modify-write; only the unique constraint guards.
    Unchecked,
}

/// What a rush of buyers ended with.
#[derive(Debug)]
pub struct RushReport {
    /// Seats the concert had.
    pub seats: i32,
    /// Each buyer's result, in buyer order (`buyer-1`, `buyer-2`, ...).
    pub outcomes: Vec<Result<Booking, BookingError>>,
    /// Seats left afterwards.
    pub available: i32,
    /// The confirmed assignments afterwards.
    pub assignments: Vec<SeatAssignment>,
}

impl RushReport {
    /// Buyers holding a seat.
    pub fn confirmed(&self) -> usize {
        self.count(|o| matches!(o, Ok(Booking::Confirmed { .. })))
    }

    /// Buyers told the concert is sold out.
    pub fn sold_out(&self) -> usize {
        self.count(|o| matches!(o, Ok(Booking::SoldOut { .. })))
    }

    /// Buyers refused by the unique constraint.
    pub fn seat_taken(&self) -> usize {
        self.count(|o| matches!(o, Err(BookingError::SeatTaken { .. })))
    }

    /// Buyers with any other error.
    pub fn failed(&self) -> usize {
        self.outcomes.len() - self.confirmed() - self.sold_out() - self.seat_taken()
    }

    fn count(&self, f: impl Fn(&Result<Booking, BookingError>) -> bool) -> usize {
        self.outcomes.iter().filter(|o| f(o)).count()
    }
}

/// `4 buyers, 1 seat: 1 confirmed, 3 sold out, available 0`.
impl fmt::Display for RushReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let plural = |n: usize, word: &str| format!("{n} {word}{}", if n == 1 { "" } else { "s" });
        write!(
            f,
            "{}, {}: {} confirmed, {} sold out",
            plural(self.outcomes.len(), "buyer"),
            plural(self.seats as usize, "seat"),
            self.confirmed(),
            self.sold_out()
        )?;
        if self.seat_taken() > 0 {
            write!(
                f,
                ", {} refused by the unique constraint",
                self.seat_taken()
            )?;
        }
        if self.failed() > 0 {
            write!(f, ", {} failed", self.failed())?;
        }
        write!(f, ", available {}", self.available)
    }
}

/// `buyers` buyers, each on its own connection, all read the concert, meet at a
/// barrier, then book at once: the barrier, not timing, makes them race.
pub fn rush(
    pool: &Pool,
    concert_id: i32,
    buyers: usize,
    protocol: Protocol,
) -> Result<RushReport, BookingError> {
    let barrier = Barrier::new(buyers);
    let outcomes = thread::scope(|scope| {
        let handles: Vec<_> = (1..=buyers)
            .map(|n| {
                let barrier = &barrier;
                scope.spawn(move || {
                    let buyer = format!("buyer-{n}");
                    match protocol {
                        Protocol::Checked { max_attempts } => {
                            let policy = RetryPolicy::new().max_attempts(max_attempts);
                            // Every buyer has read before anyone saves.
                            book(pool, &policy, concert_id, &buyer, |attempt| {
                                if attempt.is_first() {
                                    barrier.wait();
                                }
                            })
                        }
                        Protocol::Unchecked => {
                            let read = pool.get().map_err(unavailable).and_then(|mut conn| {
                                load(&mut conn, concert_id).map(|seen| (conn, seen))
                            });
                            barrier.wait();
                            let (mut conn, seen) = read?;
                            book_unchecked(&mut conn, &seen, &buyer)
                        }
                    }
                })
            })
            .collect();
        handles
            .into_iter()
            .map(|h| h.join().expect("a buyer thread panicked"))
            .collect::<Vec<_>>()
    });
    let mut conn = pool.get().map_err(unavailable)?;
    let concert = load(&mut conn, concert_id)?;
    Ok(RushReport {
        seats: concert.capacity,
        outcomes,
        available: concert.available,
        assignments: assignments(&mut conn, concert_id)?,
    })
}

/// The seat walkthrough: the race with the token check, then without it.
pub fn walkthrough(pool: &Pool, buyers: usize, out: &mut dyn Write) -> crate::AppResult {
    let mut conn = pool.get()?;
    reset(&mut conn)?;

    create_concert(&mut conn, 1, "The Last Waltz", 1)?;
    let report = rush(pool, 1, buyers, Protocol::Checked { max_attempts: 3 })?;
    writeln!(out, "  with the token check:    {report}")?;
    for (n, outcome) in report.outcomes.iter().enumerate() {
        let text = match outcome {
            Ok(Booking::Confirmed { seat_no, attempts }) => {
                format!("confirmed seat {seat_no} (attempt {attempts})")
            }
            Ok(Booking::SoldOut { attempts }) => {
                format!("sold out (conflict at save, re-read on attempt {attempts})")
            }
            Err(e) => format!("error: {e}"),
        };
        writeln!(out, "    buyer-{}: {text}", n + 1)?;
    }

    create_concert(&mut conn, 2, "The Last Waltz (late show)", 1)?;
    let report = rush(pool, 2, buyers, Protocol::Unchecked)?;
    writeln!(out, "  without the token check: {report}")?;
    let holders = report.assignments.len();
    writeln!(
        out,
        "    every buyer decremented from the same read; the unique constraint on \
         (concert, seat) kept {holders} holder{} for seat 1",
        if holders == 1 { "" } else { "s" }
    )?;
    Ok(())
}
