// Diesel's `save_changes` (and `update(&entity).set(&entity)`) would write the entity
// without the token check and store the token it read: a versioned entity may not be
// Diesel's `AsChangeset`.
use diesel::prelude::*;
use diesel_occ::Versioned;

diesel::table! {
    stock (id) {
        id -> Integer,
        available -> Integer,
        version -> Integer,
    }
}

#[derive(Queryable, Identifiable, AsChangeset, Versioned)]
#[diesel(table_name = stock)]
struct Stock {
    id: i32,
    available: i32,
    #[occ(version)]
    version: i32,
}

fn main() {}
