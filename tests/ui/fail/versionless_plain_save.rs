use diesel::prelude::*;
use diesel_occ::prelude::*;

diesel::table! {
    shelves (id) {
        id -> Integer,
        label -> Nullable<Text>,
        qty -> Integer,
    }
}

/// No version column: `label` and `qty` are checked with their values as read.
#[derive(Clone, PartialEq, Debug, Queryable, Selectable, Versioned)]
#[diesel(table_name = shelves)]
struct Shelf {
    id: i32,
    #[occ(check)]
    label: Option<String>,
    #[occ(check)]
    qty: i32,
}

/// The values as read are gone once the entity is edited: save it through `Tracked`.
fn save(shelf: &mut Shelf, conn: &mut SqliteConnection) -> Result<(), diesel_occ::Error> {
    shelf.qty -= 1;
    shelf.save_checked(conn)
}

fn main() {}
