//! A composite key: the key is a tuple in `primary_key(...)` order, not field order.
use diesel::prelude::*;
use diesel_occ::prelude::*;

diesel::table! {
    stock (warehouse, sku) {
        sku -> Text,
        warehouse -> Integer,
        available -> Integer,
        version -> Integer,
    }
}

#[derive(Debug, Queryable, Selectable, Identifiable, Versioned)]
#[diesel(table_name = stock, primary_key(warehouse, sku))]
pub struct Stock {
    pub sku: String,
    pub warehouse: i32,
    pub available: i32,
    #[occ(version)]
    pub version: i32,
}

fn _compiles(conn: &mut SqliteConnection) -> Result<(), diesel_occ::Error> {
    let key: (i32, String) = (7, "A-1".to_owned());
    let mut stock = Stock::find(conn, key)?;
    stock.save_checked(conn)?;
    stock.delete_checked(conn)
}

fn main() {
    assert_eq!(<Stock as Versioned>::KEY_COLUMNS, &["warehouse", "sku"]);
}
