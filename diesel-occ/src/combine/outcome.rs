//! What a failed group may have written, for the blocking and the async combiner.
//!
//! A group (or a change run alone) that failed is run again only when its failure is
//! known to have written nothing. When the connection died after the group's UPDATE or
//! COMMIT may have reached the server, the outcome is unknown: the group is never run
//! again, and its callers get [`Error::OutcomeUnknown`].

use crate::error::Error;

/// True for a save's error that says by itself that nothing was written: a conflict (the
/// token check matched no row) or a transient error (the server rolled the statement or
/// its transaction back). Any other error is known only when the connection still
/// answers, which proves the server reported it (the statement failed, in autocommit
/// nothing of it stays) rather than the connection dying under it.
pub(crate) fn known_unwritten(error: &Error) -> bool {
    error.is_conflict() || error.is_transient()
}

/// The error of a save whose outcome is unknown, after logging the one it replaces.
pub(crate) fn unknown(error: &Error) -> Error {
    tracing::warn!(
        target: "diesel_occ",
        %error,
        "occ combiner lost its connection at a save; the group's outcome is unknown"
    );
    Error::OutcomeUnknown
}

/// The result of a group's retry loop, given whether its last attempt saved inside the
/// attempt's transaction (`committing`): that attempt's closure returned `Ok`, so an
/// error the loop ended with came from the COMMIT, and a COMMIT that failed without
/// being retried may have been applied by the server. A commit the server refused with
/// a transient error (rolled back) was retried, and ends in exhaustion when the policy
/// gives up.
///
/// Conservative in one case: a COMMIT refused transiently followed by an attempt that
/// fails before its closure runs (the source cannot hand out a connection) is reported
/// as unknown, although nothing was written.
pub(crate) fn after_commit<T>(result: Result<T, Error>, committing: bool) -> Result<T, Error> {
    match result {
        Err(error)
            if committing
                && !matches!(error, Error::RetriesExhausted(_) | Error::OutcomeUnknown) =>
        {
            Err(unknown(&error))
        }
        other => other,
    }
}

#[cfg(test)]
mod tests {
    use diesel::result::{DatabaseErrorKind as Kind, Error as DieselError};

    use super::*;

    fn database(kind: Kind, message: &str) -> Error {
        DieselError::DatabaseError(kind, Box::new(message.to_owned())).into()
    }

    #[test]
    fn conflicts_and_transient_errors_wrote_nothing_other_errors_need_the_connection() {
        assert!(known_unwritten(&database(
            Kind::Unknown,
            "deadlock detected"
        )));
        assert!(known_unwritten(&database(Kind::SerializationFailure, "")));
        assert!(!known_unwritten(&database(Kind::ClosedConnection, "")));
        assert!(!known_unwritten(&database(Kind::CheckViolation, "")));
    }

    #[test]
    fn a_commit_that_failed_for_good_after_a_save_is_unknown() {
        let lost = || Err::<(), _>(database(Kind::ClosedConnection, ""));
        assert!(matches!(
            after_commit(lost(), true),
            Err(Error::OutcomeUnknown)
        ));
        // The failure came before the save (or there was no save): its own error.
        assert!(matches!(
            after_commit(lost(), false),
            Err(Error::Database(_))
        ));
        assert!(after_commit(Ok(()), true).is_ok());
    }
}
