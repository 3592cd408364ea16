//! The last concert seat (seeds/protect-shared-state).
//!
//! Invariant: a seat has at most one confirmed holder, and a concert never sells more
//! seats than it has. Several buyers read `available = 1` at once; each decides it may
//! book. Booking is one transaction:
//!
//! 1. decrement `available` with [`save_checked`](CheckedDsl::save_checked): the
//!    concert's token is in the predicate, so only the first writer's UPDATE matches;
//! 2. insert the seat assignment. `UNIQUE (concert_id, seat_no)` is the final durable
//!    guard: even a writer that skips the token check (see [`book_unchecked`]) cannot
//!    give one seat to two buyers.
//!
//! A buyer whose save met a conflict re-reads and decides again, a bounded number of
//! times: with the seat gone it gets a clear [`Booking::SoldOut`], never a retry storm.

use std::fmt;
use std::io::Write;
use std::sync::Barrier;
use std::thread;

use diesel::prelude::*;
use diesel_occ::Error as OccError;
use diesel_occ::prelude::*;

use crate::db::{AnyConnection, Target};
use crate::schema::{concerts, seat_assignments};

/// A concert's seat inventory. `version` is the concurrency token.
#[derive(Debug, Clone, PartialEq, Queryable, Selectable, Insertable, Versioned)]
#[diesel(table_name = concerts)]
pub struct Concert {
    /// The key.
    pub id: i32,
    /// A display name.
    pub name: String,
    /// Seats in the hall, numbered `1..=capacity`.
    pub capacity: i32,
    /// Seats not yet confirmed.
    pub available: i32,
    /// The concurrency token: a counter.
    #[occ(version)]
    pub version: i32,
}

impl Concert {
    /// The seat a booking takes next: seats are handed out in order.
    pub fn next_seat(&self) -> i32 {
        self.capacity - self.available + 1
    }
}

/// A confirmed seat.
#[derive(Debug, Clone, PartialEq, Eq, Queryable, Selectable, Insertable)]
#[diesel(table_name = seat_assignments)]
pub struct SeatAssignment {
    /// The concert.
    pub concert_id: i32,
    /// The seat number.
    pub seat_no: i32,
    /// Who holds it.
    pub buyer: String,
}

/// What a buyer is told.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Booking {
    /// The buyer holds `seat_no`.
    Confirmed {
        /// The seat.
        seat_no: i32,
        /// Reads-and-saves it took (1 when nobody interfered).
        attempts: u32,
    },
    /// No seat left.
    SoldOut {
        /// Reads-and-saves it took before seeing the concert sold out.
        attempts: u32,
    },
}

/// Why a booking failed. The transaction was rolled back: nothing was written.
#[derive(Debug)]
#[non_exhaustive]
pub enum BookingError {
    /// No such concert.
    UnknownConcert(i32),
    /// Every attempt met a conflict: the bounded retry gave up.
    GaveUp {
        /// Attempts made.
        attempts: u32,
    },
    /// The unique constraint on the seat assignment refused a second holder: the final
    /// guard caught a writer that did not check the token.
    SeatTaken {
        /// The seat that was already taken.
        seat_no: i32,
    },
    /// The database failed; the text names only the kind of failure.
    Database(String),
}

impl fmt::Display for BookingError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            BookingError::UnknownConcert(id) => write!(f, "unknown concert {id}"),
            BookingError::GaveUp { attempts } => {
                write!(f, "gave up after {attempts} conflicting attempts")
            }
            BookingError::SeatTaken { seat_no } => write!(
                f,
                "seat {seat_no} already has a holder (refused by the unique constraint)"
            ),
            BookingError::Database(kind) => write!(f, "database error: {kind}"),
        }
    }
}

impl std::error::Error for BookingError {}

fn database(error: impl Into<OccError>) -> BookingError {
    match error.into() {
        OccError::Database(error) => BookingError::Database(error.kind().to_owned()),
        other => BookingError::Database(other.to_string()),
    }
}

/// Adds a concert with every seat available.
pub fn create_concert(
    conn: &mut AnyConnection,
    id: i32,
    name: &str,
    capacity: i32,
) -> Result<Concert, BookingError> {
    let concert = Concert {
        id,
        name: name.to_owned(),
        capacity,
        available: capacity,
        version: 1,
    };
    diesel::insert_into(concerts::table)
        .values(&concert)
        .execute(conn)
        .map_err(database)?;
    Ok(concert)
}

/// Reads a concert, as a buyer does before deciding.
pub fn load(conn: &mut AnyConnection, concert_id: i32) -> Result<Concert, BookingError> {
    Concert::find(conn, concert_id).map_err(|error| match error {
        OccError::NotFound(_) => BookingError::UnknownConcert(concert_id),
        other => database(other),
    })
}

/// Books a seat for `buyer`: read, decide, save; on a conflict, read again, at most
/// `max_attempts` times.
pub fn book(
    conn: &mut AnyConnection,
    concert_id: i32,
    buyer: &str,
    max_attempts: u32,
) -> Result<Booking, BookingError> {
    let seen = load(conn, concert_id)?;
    book_from(conn, seen, buyer, max_attempts)
}

/// [`book`], starting from a concert the buyer already read (the first decision is
/// made on `seen`, later ones on fresh reads).
pub fn book_from(
    conn: &mut AnyConnection,
    mut seen: Concert,
    buyer: &str,
    max_attempts: u32,
) -> Result<Booking, BookingError> {
    for attempt in 1..=max_attempts {
        if seen.available == 0 {
            return Ok(Booking::SoldOut { attempts: attempt });
        }
        let seat_no = seen.next_seat();
        let mut decided = seen.clone();
        decided.available -= 1;
        let saved = conn.transaction::<_, OccError, _>(|conn| {
            decided.save_checked(conn)?;
            insert_assignment(conn, decided.id, seat_no, buyer)?;
            Ok(())
        });
        match saved {
            Ok(()) => {
                return Ok(Booking::Confirmed {
                    seat_no,
                    attempts: attempt,
                });
            }
            Err(OccError::Conflict(conflict)) if conflict.is_deleted() => {
                return Err(BookingError::UnknownConcert(seen.id));
            }
            // Somebody else booked first: decide again on what the database holds now.
            Err(OccError::Conflict(_)) => seen = load(conn, seen.id)?,
            Err(error) => return Err(seat_error(error, seat_no)),
        }
    }
    Err(BookingError::GaveUp {
        attempts: max_attempts,
    })
}

/// The plain read-modify-write the seed warns about, kept to show the final guard: it
/// writes `available = seen.available - 1` without the token in the predicate. Two
/// such buyers both "succeed" at the decrement; the unique constraint on the seat
/// assignment refuses the second holder, and its transaction rolls back.
pub fn book_unchecked(
    conn: &mut AnyConnection,
    seen: &Concert,
    buyer: &str,
) -> Result<Booking, BookingError> {
    let seat_no = seen.next_seat();
    if seen.available == 0 {
        return Ok(Booking::SoldOut { attempts: 1 });
    }
    conn.transaction::<_, OccError, _>(|conn| {
        diesel::update(concerts::table.find(seen.id))
            .set(concerts::available.eq(seen.available - 1))
            .execute(conn)?;
        insert_assignment(conn, seen.id, seat_no, buyer)?;
        Ok(())
    })
    .map_err(|error| seat_error(error, seat_no))?;
    Ok(Booking::Confirmed {
        seat_no,
        attempts: 1,
    })
}

fn insert_assignment(
    conn: &mut AnyConnection,
    concert_id: i32,
    seat_no: i32,
    buyer: &str,
) -> QueryResult<()> {
    diesel::insert_into(seat_assignments::table)
        .values(SeatAssignment {
            concert_id,
            seat_no,
            buyer: buyer.to_owned(),
        })
        .execute(conn)
        .map(drop)
}

fn seat_error(error: OccError, seat_no: i32) -> BookingError {
    use diesel::result::{DatabaseErrorKind, Error};
    match &error {
        OccError::Database(db)
            if matches!(
                db.diesel_error(),
                Error::DatabaseError(DatabaseErrorKind::UniqueViolation, _)
            ) =>
        {
            BookingError::SeatTaken { seat_no }
        }
        _ => database(error),
    }
}

/// The confirmed seats of a concert, by seat number.
pub fn assignments(
    conn: &mut AnyConnection,
    concert_id: i32,
) -> Result<Vec<SeatAssignment>, BookingError> {
    seat_assignments::table
        .filter(seat_assignments::concert_id.eq(concert_id))
        .order(seat_assignments::seat_no)
        .select(SeatAssignment::as_select())
        .load(conn)
        .map_err(database)
}

/// Empties the concert tables (the apps start from a known state).
pub fn reset(conn: &mut AnyConnection) -> QueryResult<()> {
    diesel::delete(seat_assignments::table).execute(conn)?;
    diesel::delete(concerts::table).execute(conn).map(drop)
}

/// Whether the buyers check the token.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Protocol {
    /// [`book_from`]: the token in the predicate, bounded re-reads.
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
    target: &Target,
    concert_id: i32,
    buyers: usize,
    protocol: Protocol,
) -> crate::AppResult<RushReport> {
    let barrier = Barrier::new(buyers);
    let outcomes = thread::scope(|scope| {
        let handles: Vec<_> = (1..=buyers)
            .map(|n| {
                let barrier = &barrier;
                scope.spawn(move || {
                    let read = target
                        .connect()
                        .map_err(|e| BookingError::Database(e.to_string()))
                        .and_then(|mut conn| load(&mut conn, concert_id).map(|seen| (conn, seen)));
                    // Every buyer has read (or failed to) before anyone books.
                    barrier.wait();
                    let (mut conn, seen) = read?;
                    let buyer = format!("buyer-{n}");
                    match protocol {
                        Protocol::Checked { max_attempts } => {
                            book_from(&mut conn, seen, &buyer, max_attempts)
                        }
                        Protocol::Unchecked => book_unchecked(&mut conn, &seen, &buyer),
                    }
                })
            })
            .collect();
        handles
            .into_iter()
            .map(|h| h.join().expect("a buyer thread panicked"))
            .collect::<Vec<_>>()
    });
    let mut conn = target.connect()?;
    let concert = load(&mut conn, concert_id)?;
    Ok(RushReport {
        seats: concert.capacity,
        outcomes,
        available: concert.available,
        assignments: assignments(&mut conn, concert_id)?,
    })
}

/// The seat walkthrough: the race with the token check, then without it.
pub fn walkthrough(target: &Target, buyers: usize, out: &mut dyn Write) -> crate::AppResult {
    let mut conn = target.connect_and_migrate()?;
    reset(&mut conn)?;

    create_concert(&mut conn, 1, "The Last Waltz", 1)?;
    let report = rush(target, 1, buyers, Protocol::Checked { max_attempts: 3 })?;
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
    let report = rush(target, 2, buyers, Protocol::Unchecked)?;
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
