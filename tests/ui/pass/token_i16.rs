//! An `i16` counter token on a `SmallInt` column.
use diesel::prelude::*;
use diesel_occ::prelude::*;

diesel::table! {
    stock (id) {
        id -> Integer,
        available -> Integer,
        version -> SmallInt,
    }
}

#[derive(Debug, Queryable, Selectable, Identifiable, Versioned)]
#[diesel(table_name = stock)]
pub struct Stock {
    pub id: i32,
    pub available: i32,
    #[occ(version)]
    pub version: i16,
}

fn _compiles(conn: &mut SqliteConnection) -> Result<(), diesel_occ::Error> {
    let mut stock = Stock::find(conn, 1)?;
    stock.save_checked(conn)?;
    stock.delete_checked(conn)
}

fn main() {}
