//! A `chrono::NaiveDateTime` token on a `Timestamp` column.
use diesel::prelude::*;
use diesel_occ::prelude::*;

diesel::table! {
    stock (id) {
        id -> Integer,
        available -> Integer,
        updated_at -> Timestamp,
    }
}

#[derive(Debug, Queryable, Selectable, Identifiable, Versioned)]
#[diesel(table_name = stock)]
pub struct Stock {
    pub id: i32,
    pub available: i32,
    #[occ(version)]
    pub updated_at: chrono::NaiveDateTime,
}

fn _compiles(conn: &mut SqliteConnection) -> Result<(), diesel_occ::Error> {
    let mut stock = Stock::find(conn, 1)?;
    stock.save_checked(conn)?;
    stock.delete_checked(conn)
}

fn main() {}
