//! A `diesel_occ::UuidToken` on a `Binary` column (SQLite `BLOB`, MySQL `BINARY(16)`).
use diesel::prelude::*;
use diesel_occ::UuidToken;
use diesel_occ::prelude::*;

diesel::table! {
    stock (id) {
        id -> Integer,
        available -> Integer,
        version -> Binary,
    }
}

#[derive(Debug, Queryable, Selectable, Identifiable, Versioned)]
#[diesel(table_name = stock)]
pub struct Stock {
    pub id: i32,
    pub available: i32,
    #[occ(version)]
    pub version: UuidToken,
}

fn _compiles(conn: &mut SqliteConnection) -> Result<(), diesel_occ::Error> {
    let mut stock = Stock::find(conn, 1)?;
    stock.save_checked(conn)?;
    stock.delete_checked(conn)
}

fn main() {}
