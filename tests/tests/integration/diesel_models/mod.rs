//! diesel-occ with the Diesel code users already have: `#[derive(AsChangeset)]` forms in
//! the checked writes, checked inserts of models and of `Insertable` structs, and the
//! versioned upsert.

on_every_backend!(entities, scenarios);
