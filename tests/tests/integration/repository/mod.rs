//! The examples' generic repository (`diesel_occ_examples::repository`), whose methods
//! each carry one public bound, run on every backend, blocking and async: creates,
//! reads, saves, writes by a client's token and deletes of a counter, with the stale
//! writer refused at each checked write.

use diesel::prelude::*;

use diesel_occ_tests::schema::pg::counters;

#[derive(Debug, Clone, PartialEq, Queryable, Selectable, Insertable, diesel_occ::Versioned)]
#[diesel(table_name = counters)]
struct Counter {
    id: i32,
    value: i32,
    label: Option<String>,
    #[occ(version)]
    version: i32,
}

/// A new counter; its token is the repository's to assign.
fn counter(id: i32, value: i32) -> Counter {
    Counter {
        id,
        value,
        label: None,
        version: 0,
    }
}

on_every_backend!(blocking, asynchronous);
