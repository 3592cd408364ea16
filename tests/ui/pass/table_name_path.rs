//! `table_name` given as a path into a schema module, a derive on its own, and a field
//! type naming a module called like the table (which the derive must not shadow).
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

    diesel::table! {
        kinds (id) {
            id -> Integer,
            kind -> Integer,
            version -> Integer,
        }
    }
}

/// Not the table: a module of the application's own that the table's name coincides with.
mod kinds {
    pub type Kind = i32;
}

/// `crate::schema::kinds` is the table, `kinds::Kind` the crate root's module.
#[derive(diesel_occ::Versioned)]
#[diesel(table_name = crate::schema::kinds)]
pub struct Kind {
    pub id: i32,
    pub kind: kinds::Kind,
    #[occ(version)]
    pub version: i32,
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
    assert_eq!(<Kind as Versioned>::TABLE_NAME, "kinds");
}
