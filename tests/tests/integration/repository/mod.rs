//! The examples' generic repository (`diesel_occ_examples::repository`), whose methods
//! each carry one public bound, run on every backend, blocking and async: creates,
//! reads, saves, writes by a client's token and deletes of a counter, with the stale
//! writer refused at each checked write.

use diesel_occ_tests::entities::Counter;

/// A new counter; its token is the repository's to assign.
fn counter(id: i32, value: i32) -> Counter {
    let new = Counter::new(id, value);
    Counter { version: 0, ..new }
}

on_every_backend!(scenarios);
