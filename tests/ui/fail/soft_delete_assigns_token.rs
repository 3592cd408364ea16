use diesel::prelude::*;
use diesel_occ::prelude::*;

diesel::table! {
    stock (id) {
        id -> Integer,
        deleted -> Bool,
        version -> BigInt,
    }
}

#[derive(Queryable, Selectable, Versioned)]
#[diesel(table_name = stock)]
struct Stock {
    id: i32,
    deleted: bool,
    #[occ(version)]
    version: i64,
}

/// The checked soft delete writes the token itself: a marker that assigns it too does
/// not compile.
fn retire(stock: &mut Stock, conn: &mut SqliteConnection) -> Result<(), diesel_occ::Error> {
    stock.soft_delete_checked(conn, (stock::deleted.eq(true), Some(stock::version.eq(0))))
}

fn main() {}
