use diesel::prelude::*;
use diesel_occ::prelude::*;

diesel::table! {
    stock (id) {
        id -> Integer,
        name -> Text,
        version -> Integer,
    }
}

#[derive(Queryable, Selectable, Versioned)]
#[diesel(table_name = stock)]
struct Stock {
    id: i32,
    name: String,
    #[occ(version)]
    version: i32,
}

/// The bulk update advances the token itself: assigning it too does not compile.
fn rename(conn: &mut SqliteConnection) -> QueryResult<usize> {
    Stock::bulk_update(stock::table, (stock::name.eq("z"), stock::version.eq(999))).execute(conn)
}

fn main() {}
