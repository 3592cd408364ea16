use diesel::prelude::*;
use diesel_occ::Versioned;

diesel::table! {
    shelves (id) {
        id -> Integer,
        qty -> Integer,
        version -> Integer,
    }
}

#[derive(Queryable, Versioned)]
#[diesel(table_name = shelves)]
struct Shelf {
    #[occ(check)]
    id: i32,
    #[occ(check)]
    qty: i32,
    #[occ(version)]
    version: i32,
}

fn main() {}
