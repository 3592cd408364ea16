//! The last concert seat.
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
//! [`book`] runs read, decide and book inside [`blocking::retry`]: a buyer whose save met a
//! conflict gets a fresh connection from the pool, re-reads and decides again, a bounded
//! number of times. With the seat gone it gets a clear [`Booking::SoldOut`], a decision
//! that ends the loop, never a retry storm.

mod rush;

use std::fmt;

use diesel::prelude::*;
use diesel_occ::Error as OccError;
use diesel_occ::blocking;
use diesel_occ::prelude::*;
use diesel_occ::retry::{Attempt, RetryPolicy};

pub use self::rush::{Protocol, RushReport, rush, walkthrough};
use super::{Conn, Pool};
use crate::repository::Repository;
use crate::schema::{concerts, seat_assignments};

/// Every read and checked write of a concert goes through this repository.
const CONCERTS: Repository<Concert> = Repository::new();

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

/// A new concert as the box office enters it: the row without its token, which the
/// repository's create adds.
#[derive(Debug, Insertable)]
#[diesel(table_name = concerts)]
struct NewConcert<'a> {
    id: i32,
    name: &'a str,
    capacity: i32,
    available: i32,
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

fn unavailable(_: diesel::r2d2::PoolError) -> BookingError {
    BookingError::Database("no connection from the pool".into())
}

fn database(error: impl Into<OccError>) -> BookingError {
    match error.into() {
        OccError::Database(error) => BookingError::Database(error.kind().to_owned()),
        other => BookingError::Database(other.to_string()),
    }
}

/// Adds a concert with every seat available.
pub fn create_concert(
    conn: &mut Conn,
    id: i32,
    name: &str,
    capacity: i32,
) -> Result<Concert, BookingError> {
    let form = NewConcert {
        id,
        name,
        capacity,
        available: capacity,
    };
    let version = CONCERTS.create_from(conn, form).map_err(database)?;
    Ok(Concert {
        id,
        name: name.to_owned(),
        capacity,
        available: capacity,
        version,
    })
}

/// Reads a concert, as a buyer does before deciding.
pub fn load(conn: &mut Conn, concert_id: i32) -> Result<Concert, BookingError> {
    CONCERTS.get(conn, concert_id).map_err(|error| match error {
        OccError::NotFound(_) => BookingError::UnknownConcert(concert_id),
        other => database(other),
    })
}

/// Books a seat for `buyer`: read, decide, save, with [`blocking::retry`] running it again
/// on a conflict, at most `policy`'s attempts. Every attempt checks a connection out of
/// the pool and reads the concert afresh; `after_read` runs between the read and the
/// save (the [`rush`] lines its buyers up there).
pub fn book(
    pool: &Pool,
    policy: &RetryPolicy,
    concert_id: i32,
    buyer: &str,
    after_read: impl Fn(&Attempt),
) -> Result<Booking, BookingError> {
    let booked = blocking::retry(pool, policy, |conn, attempt| {
        let mut concert = CONCERTS.get_within(&attempt, conn, concert_id)?;
        after_read(&attempt);
        if concert.available == 0 {
            // A decision, not a failure: it ends the loop.
            return Ok(Booking::SoldOut {
                attempts: attempt.number(),
            });
        }
        let seat_no = concert.next_seat();
        concert.available -= 1;
        conn.transaction(|conn| {
            CONCERTS.save(conn, &mut concert)?; // a conflict here runs another attempt
            insert_assignment(conn, concert_id, seat_no, buyer)?;
            Ok(Booking::Confirmed {
                seat_no,
                attempts: attempt.number(),
            })
        })
    });
    booked.map_err(|error| match error {
        OccError::NotFound(_) => BookingError::UnknownConcert(concert_id),
        OccError::RetriesExhausted(exhausted) => BookingError::GaveUp {
            attempts: exhausted.attempts(),
        },
        other => database(other),
    })
}

/// The plain read-modify-write that loses updates, kept to show the final guard: it
/// writes `available = seen.available - 1` without the token in the predicate. Two
/// such buyers both "succeed" at the decrement; the unique constraint on the seat
/// assignment refuses the second holder, and its transaction rolls back.
pub fn book_unchecked(
    conn: &mut Conn,
    seen: &Concert,
    buyer: &str,
) -> Result<Booking, BookingError> {
    let seat_no = seen.next_seat();
    if seen.available == 0 {
        return Ok(Booking::SoldOut { attempts: 1 });
    }
    conn.transaction::<_, OccError, _>(|conn| {
        // Deliberately past the repository: the unchecked write this function exists to show.
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
    conn: &mut Conn,
    concert_id: i32,
    seat_no: i32,
    buyer: &str,
) -> QueryResult<()> {
    // Plain insert on purpose: seat_assignments is an append-only log, not a Versioned entity.
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
pub fn assignments(conn: &mut Conn, concert_id: i32) -> Result<Vec<SeatAssignment>, BookingError> {
    seat_assignments::table
        .filter(seat_assignments::concert_id.eq(concert_id))
        .order(seat_assignments::seat_no)
        .select(SeatAssignment::as_select())
        .load(conn)
        .map_err(database)
}

/// Empties the concert tables (the apps start from a known state).
pub fn reset(conn: &mut Conn) -> QueryResult<()> {
    diesel::delete(seat_assignments::table).execute(conn)?;
    diesel::delete(concerts::table).execute(conn).map(drop)
}
