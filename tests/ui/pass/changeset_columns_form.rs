use diesel::prelude::*;
use diesel_occ::prelude::*;
use diesel_occ::ChangesetColumns;

diesel::table! {
    stock (id) {
        id -> Integer,
        name -> Text,
        note -> Nullable<Text>,
        version -> Integer,
    }
}

#[derive(Queryable, Selectable, Versioned)]
#[diesel(table_name = stock)]
struct Stock {
    id: i32,
    name: String,
    note: Option<String>,
    #[occ(version)]
    version: i32,
}

/// The key is skipped as Diesel's `AsChangeset` skips it, a renamed column is named
/// by its column, and a `skip_update` field (here the client's token) is not assigned.
#[derive(AsChangeset, ChangesetColumns)]
#[diesel(table_name = stock, treat_none_as_null = true)]
struct StockForm<'a> {
    id: i32,
    #[diesel(column_name = name)]
    title: &'a str,
    note: Option<&'a str>,
    #[diesel(skip_update)]
    version: i32,
}

fn patch(conn: &mut SqliteConnection, form: &StockForm<'_>) -> Result<i32, diesel_occ::Error> {
    Stock::update_by_key(conn, form.id, &form.version, form)
}

fn main() {
    let _ = patch;
}
