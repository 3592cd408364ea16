//! The independent log of what the soak's writers were told: each acknowledged write
//! with the token the acknowledgement says the row holds, and each write whose outcome
//! is unknown. The check (`check.rs`) and the database verification read it.

use diesel_occ::UuidToken;

/// One entry of the independent log.
#[derive(Debug, Clone)]
pub(crate) enum Record {
    /// An acknowledged insert: the row holds `token` and `available`.
    Inserted {
        sku: String,
        token: UuidToken,
        available: i32,
    },
    /// An acknowledged update from `old`: the row holds `new` and `available`.
    Updated {
        sku: String,
        old: UuidToken,
        new: UuidToken,
        available: i32,
    },
    /// An acknowledged delete of the row at `old`.
    Deleted { sku: String, old: UuidToken },
    /// A write whose outcome is unknown: its connection failed after the statement may
    /// have been sent.
    Unknown { sku: String, write: Unknown },
    /// An acknowledged completion: the effect was recorded with this fence.
    Completed {
        item: i32,
        worker: String,
        fence: i64,
    },
    /// An acknowledged booking.
    Booked {
        concert: i32,
        seat_no: i32,
        buyer: String,
    },
    /// An outcome that must not happen (a hostile token accepted, a valid one refused,
    /// a worker that panicked): always a violation.
    Unexpected { what: String },
}

/// A write of an `inventory` row that may or may not have happened.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Unknown {
    /// An insert of a new row holding `available` (its token is not known).
    Insert { available: i32 },
    /// A checked update from `old` to `available`; `new` is the token it wrote when the
    /// writer knows it (a save that returned before its transaction's commit failed).
    Update {
        old: UuidToken,
        new: Option<UuidToken>,
        available: i32,
    },
    /// A checked delete of the row at `old`.
    Delete { old: UuidToken },
}

impl Unknown {
    /// The token the write was guarded by (none for an insert).
    pub(crate) fn old(&self) -> Option<UuidToken> {
        match self {
            Unknown::Insert { .. } => None,
            Unknown::Update { old, .. } | Unknown::Delete { old } => Some(*old),
        }
    }
}
