//! `#[diesel(column_name = ...)]` on the key, the token and a plain field.
use diesel::prelude::*;
use diesel_occ::prelude::*;

diesel::table! {
    stock (stock_id) {
        stock_id -> Integer,
        qty -> Integer,
        row_version -> BigInt,
    }
}

#[derive(Debug, Queryable, Selectable, Identifiable, Versioned)]
#[diesel(table_name = stock, primary_key(stock_id))]
pub struct Stock {
    #[diesel(column_name = stock_id)]
    pub id: i32,
    #[diesel(column_name = qty)]
    pub available: i32,
    #[occ(version)]
    #[diesel(column_name = row_version)]
    pub version: i64,
}

fn _compiles(conn: &mut SqliteConnection) -> Result<(), diesel_occ::Error> {
    let mut stock = Stock::find(conn, 1)?;
    stock.save_checked(conn)?;
    stock.delete_checked(conn)
}

fn main() {
    assert_eq!(<Stock as Versioned>::KEY_COLUMNS, &["stock_id"]);
    assert_eq!(<Stock as Versioned>::TOKEN_COLUMN, "row_version");
}
