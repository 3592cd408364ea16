//! Columns a checked save never writes: `#[diesel(skip_update)]` and `#[occ(skip)]`.
use diesel::prelude::*;
use diesel_occ::prelude::*;

diesel::table! {
    stock (id) {
        id -> Integer,
        available -> Integer,
        views -> BigInt,
        created_at -> Timestamp,
        version -> Integer,
    }
}

#[derive(Debug, Queryable, Selectable, Identifiable, Versioned)]
#[diesel(table_name = stock)]
pub struct Stock {
    pub id: i32,
    pub available: i32,
    #[occ(skip)]
    pub views: i64,
    #[diesel(skip_update)]
    pub created_at: chrono::NaiveDateTime,
    #[occ(version)]
    pub version: i32,
}

fn _compiles(conn: &mut SqliteConnection) -> Result<(), diesel_occ::Error> {
    let mut stock = Stock::find(conn, 1)?;
    stock.save_checked(conn)
}

fn main() {}
