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

#[derive(AsChangeset)]
#[diesel(table_name = stock)]
struct Rename {
    name: String,
}

/// Diesel's derived changeset does not say which columns it assigns, so the bulk update
/// cannot prove it leaves the token alone: derive `ChangesetColumns` beside it.
fn rename(conn: &mut SqliteConnection) -> QueryResult<usize> {
    Stock::bulk_update(stock::table, Rename { name: "z".into() }).execute(conn)
}

fn main() {}
