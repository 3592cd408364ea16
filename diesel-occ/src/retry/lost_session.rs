//! Telling a dead session from a failed statement, so that the retry helpers keep a
//! connection whose session is gone out of its pool: a pool that does not test
//! connections at checkout (r2d2's `test_on_check_out(false)`, deadpool's
//! `RecyclingMethod::Fast`) would hand it out again, and the next operation would fail
//! on it.

use crate::error::Error;

/// Whether an attempt failed because its connection is gone or unusable (the server
/// closed it, a request could not be sent).
pub(crate) fn connection_lost<T>(result: &Result<T, Error>) -> bool {
    use diesel::result::{DatabaseErrorKind as Kind, Error as E};
    matches!(
        result,
        Err(Error::Database(error)) if matches!(
            error.diesel_error(),
            E::DatabaseError(Kind::ClosedConnection | Kind::UnableToSendCommand, _)
        )
    )
}

/// Whether an attempt failed with a database error the driver did not classify, which
/// is how the MySQL drivers report a session the server killed or closed: whether the
/// connection still works is then worth one round trip.
pub(crate) fn unexplained<T>(result: &Result<T, Error>) -> bool {
    use diesel::result::{DatabaseErrorKind as Kind, Error as E};
    matches!(
        result,
        Err(Error::Database(error)) if error.transient().is_none() && matches!(
            error.diesel_error(),
            E::DatabaseError(Kind::Unknown, _)
        )
    )
}

/// Whether an attempt's error says that one of its connections may be dead: it was
/// lost, or the driver did not classify the error. Only the standby helpers ask.
#[cfg(feature = "standby")]
pub(crate) fn suspect<T>(result: &Result<T, Error>) -> bool {
    connection_lost(result) || unexplained(result)
}

/// True when the connection still answers a query.
pub(crate) fn alive<C: diesel::Connection>(conn: &mut C) -> bool {
    conn.batch_execute("SELECT 1").is_ok()
}

/// Whether a connection whose attempt ended cleanly must still be discarded: its
/// session was lost, or the error was unexplained and the connection no longer answers.
pub(crate) fn dead_after<C: diesel::Connection, T>(
    conn: &mut C,
    result: &Result<T, Error>,
) -> bool {
    connection_lost(result) || unexplained(result) && !alive(conn)
}

#[cfg(test)]
mod tests {
    use diesel::result::{DatabaseErrorKind as Kind, Error as E};

    use super::*;

    fn failed(kind: Kind) -> Result<(), Error> {
        Err(E::DatabaseError(kind, Box::new(String::from("gone"))).into())
    }

    /// Only a lost connection, or an error the driver could not classify, makes a
    /// connection suspect.
    #[test]
    fn only_a_lost_or_unexplained_error_makes_a_connection_suspect() {
        fn suspect<T>(result: &Result<T, Error>) -> bool {
            let either = connection_lost(result) || unexplained(result);
            #[cfg(feature = "standby")]
            assert_eq!(super::suspect(result), either);
            either
        }
        assert!(connection_lost(&failed(Kind::ClosedConnection)));
        assert!(connection_lost(&failed(Kind::UnableToSendCommand)));
        assert!(suspect(&failed(Kind::Unknown)));
        for kind in [Kind::UniqueViolation, Kind::SerializationFailure] {
            assert!(!suspect(&failed(kind)), "{kind:?}");
        }
        assert!(!suspect::<()>(&Ok(())));
        assert!(!suspect::<()>(&Err(E::NotFound.into())));
    }
}
