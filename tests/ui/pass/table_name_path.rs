//! `table_name` given as a path into a schema module, and a derive on its own.
use diesel::prelude::*;
use diesel_occ::prelude::*;

mod schema {
    diesel::table! {
        stock (id) {
            id -> Integer,
            available -> Integer,
            version -> Integer,
        }
    }
}

mod model {
    #[derive(Debug, diesel::Queryable, diesel::Selectable, diesel_occ::Versioned)]
    #[diesel(table_name = crate::schema::stock)]
    pub struct Stock {
        pub id: i32,
        pub available: i32,
        #[occ(version)]
        pub version: i32,
    }

    /// Only `Versioned`: `#[diesel(...)]` is still accepted.
    #[derive(diesel_occ::Versioned)]
    #[diesel(table_name = crate::schema::stock)]
    pub struct StockLevel {
        pub id: i32,
        pub available: i32,
        #[occ(version)]
        pub version: i32,
    }
}

use model::{Stock, StockLevel};

fn _compiles(conn: &mut SqliteConnection, level: &mut StockLevel) -> Result<(), diesel_occ::Error> {
    let mut stock = Stock::find(conn, 1)?;
    stock.save_checked(conn)?;
    level.save_checked(conn)
}

fn main() {
    assert_eq!(<Stock as Versioned>::TABLE_NAME, "stock");
}
