//! Whether a changeset's SQL text is the same on every call: what decides if the
//! `UPDATE` of [`update_by_key`](crate::VersionColumnDsl::update_by_key) is kept in
//! Diesel's statement cache.
//!
//! Diesel's cache never evicts, and on MySQL and MariaDB every statement it keeps holds
//! one of the server's `max_prepared_stmt_count` slots, shared by all connections. A
//! PATCH of k `Option` assignments has 2^k texts, so a changeset with an optional part
//! is prepared for one execution and closed, as Diesel's own `UPDATE` is, and only a
//! changeset without one (one text: a `PUT` of every field) is cached. The rule is a
//! property of the changeset's type, decided at compile time: no state is kept, and no
//! caller can change it for another.
//!
//! The compiler learns it from the check diesel-occ already makes on every changeset
//! ([`NoTokenAssignment`](super::NoTokenAssignment), Diesel's `ValidGrouping` against
//! "every column but the token"): an `Option` in it, or a
//! [`ChangesetColumns`](crate::ChangesetColumns) form with a field that skips its
//! `None`, reports [`HasOptionalParts`] where Diesel's expressions report whether they
//! aggregate. Diesel names no other way to look inside `column.eq(value)`.
//!
//! ```
//! # include!(concat!(env!("CARGO_MANIFEST_DIR"), "/src/doctest_setup.rs"));
//! use diesel::connection::InstrumentationEvent;
//! use diesel::prelude::*;
//! use diesel_occ::prelude::*;
//! use diesel_occ::statement::NoTokenAssignment;
//! use std::sync::{Arc, Mutex};
//!
//! /// A `PUT`: every field, one text.
//! #[derive(AsChangeset, ChangesetColumns)]
//! #[diesel(table_name = stock)]
//! struct Replace { available: i32, deleted: bool }
//!
//! /// A `PATCH`: `None` leaves the column alone, four texts.
//! #[derive(AsChangeset, ChangesetColumns)]
//! #[diesel(table_name = stock)]
//! struct Patch { available: Option<i32>, deleted: Option<bool> }
//!
//! # fn main() -> Result<(), diesel_occ::Error> {
//! assert!(<Replace as NoTokenAssignment<stock::version>>::FIXED_TEXT);
//! assert!(!<Patch as NoTokenAssignment<stock::version>>::FIXED_TEXT);
//!
//! let mut conn = connection();
//! let cached = Arc::new(Mutex::new(Vec::new()));
//! let log = Arc::clone(&cached);
//! conn.set_instrumentation(move |event: InstrumentationEvent<'_>| {
//!     if let InstrumentationEvent::CacheQuery { sql, .. } = event {
//!         log.lock().unwrap().push(sql.starts_with("UPDATE"));
//!     }
//! });
//! let mut etag = 1;
//! for available in 0..3 {
//!     etag = Stock::update_by_key(&mut conn, 1, &etag, Replace { available, deleted: false })?;
//!     etag = Stock::update_by_key(&mut conn, 1, &etag, Patch { available: Some(available), deleted: None })?;
//! }
//! // The `PUT` is prepared once and reused; no `PATCH` text is kept.
//! assert_eq!(cached.lock().unwrap().iter().filter(|update| **update).count(), 1);
//! # Ok(())
//! # }
//! ```

use diesel::expression::MixedAggregates;
use diesel::expression::is_aggregate::{Never, No, Yes};

/// The `IsAggregate` of a changeset, checked against "every column but the token",
/// that holds an `Option` part: its text varies with which parts are `Some`.
#[doc(hidden)]
#[derive(Debug, Clone, Copy)]
pub struct HasOptionalParts;

impl MixedAggregates<HasOptionalParts> for HasOptionalParts {
    type Output = HasOptionalParts;
}

impl MixedAggregates<Yes> for HasOptionalParts {
    type Output = HasOptionalParts;
}

impl MixedAggregates<No> for HasOptionalParts {
    type Output = HasOptionalParts;
}

impl MixedAggregates<Never> for HasOptionalParts {
    type Output = HasOptionalParts;
}

impl MixedAggregates<HasOptionalParts> for Yes {
    type Output = HasOptionalParts;
}

impl MixedAggregates<HasOptionalParts> for No {
    type Output = HasOptionalParts;
}

// `Never` mixed with anything is that thing: Diesel's own impl covers it.

/// Whether a changeset whose `IsAggregate` (against "every column but the token") is
/// `Self` always renders the same SQL text.
#[doc(hidden)]
pub trait TextIsFixed {
    /// True when the text never varies.
    const FIXED: bool;
}

impl TextIsFixed for Yes {
    const FIXED: bool = true;
}

impl TextIsFixed for No {
    const FIXED: bool = true;
}

impl TextIsFixed for Never {
    const FIXED: bool = true;
}

impl TextIsFixed for HasOptionalParts {
    const FIXED: bool = false;
}

#[cfg(test)]
mod tests {
    use diesel::prelude::*;

    use crate::statement::NoTokenAssignment;

    diesel::table! { stock (id) { id -> Integer, available -> Integer, note -> Text, version -> Integer } }

    fn fixed<C: NoTokenAssignment<stock::version>>(_: &C) -> bool {
        C::FIXED_TEXT
    }

    #[test]
    fn a_changeset_with_an_option_part_has_no_fixed_text() {
        assert!(fixed(&stock::available.eq(1)));
        assert!(fixed(&(
            stock::available.eq(stock::available + 1),
            stock::note.eq("n")
        )));
        assert!(!fixed(&Some(stock::available.eq(1))));
        assert!(!fixed(&None::<diesel::dsl::Eq<stock::available, i32>>));
        assert!(!fixed(&(stock::available.eq(1), Some(stock::note.eq("n")))));
        assert!(!fixed(&(Some(stock::note.eq("n")), stock::available.eq(1))));
        assert!(!fixed(&Some((stock::note.eq("n"), stock::available.eq(1)))));
    }
}
