//! `Option` fields: `None` leaves the column alone unless `treat_none_as_null`, set on
//! the struct or overridden per field.
use diesel::prelude::*;
use diesel_occ::prelude::*;

diesel::table! {
    stock (id) {
        id -> Integer,
        note -> Nullable<Text>,
        reserved -> Nullable<Integer>,
        version -> Integer,
    }
}

#[derive(Debug, Queryable, Selectable, Identifiable, Versioned)]
#[diesel(table_name = stock)]
pub struct Stock {
    pub id: i32,
    pub note: Option<String>,
    #[diesel(treat_none_as_null = true)]
    pub reserved: Option<i32>,
    #[occ(version)]
    pub version: i32,
}

#[derive(Debug, Queryable, Selectable, Identifiable, Versioned)]
#[diesel(table_name = stock, treat_none_as_null = true)]
pub struct NullingStock {
    pub id: i32,
    pub note: Option<String>,
    #[diesel(treat_none_as_null = false)]
    pub reserved: Option<i32>,
    #[occ(version)]
    pub version: i32,
}

fn _compiles(conn: &mut SqliteConnection) -> Result<(), diesel_occ::Error> {
    let mut stock = Stock::find(conn, 1)?;
    stock.save_checked(conn)?;
    let mut nulling = NullingStock::find(conn, 1)?;
    nulling.save_checked(conn)
}

fn main() {}
