use diesel::prelude::*;
use diesel_occ::prelude::*;
use diesel_occ::ChangesetColumns;

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

/// A form that carries the client's token as a field assigns the token column: the
/// checked write refuses it at compile time and names the column.
#[derive(AsChangeset, ChangesetColumns)]
#[diesel(table_name = stock)]
struct StockForm {
    name: Option<String>,
    version: i32,
}

fn patch(conn: &mut SqliteConnection, form: &StockForm) -> Result<i32, diesel_occ::Error> {
    Stock::update_by_key(conn, 1, &form.version, form)
}

fn main() {}
