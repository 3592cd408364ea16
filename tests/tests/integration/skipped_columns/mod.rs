//! Columns kept out of checked saves, `#[occ(skip)]` and Diesel's own
//! `#[diesel(skip_update)]`: full, tracked and plain checked saves never write them, so
//! a counter maintained by atomic SQL elsewhere keeps every increment.

on_every_backend!(entities, scenarios);
