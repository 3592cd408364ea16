use diesel::prelude::*;
use diesel_occ::prelude::*;

diesel::table! {
    shelves (id) {
        id -> Integer,
        qty -> Integer,
    }
}

#[derive(Clone, PartialEq, Debug, Queryable, Selectable, Versioned)]
#[diesel(table_name = shelves)]
struct Shelf {
    id: i32,
    #[occ(check)]
    qty: i32,
}

/// No token for a client (no ETag): no write by key and client token, no token-only
/// write.
fn by_key(shelf: &mut Shelf, conn: &mut SqliteConnection) -> Result<(), diesel_occ::Error> {
    Shelf::update_by_key(conn, 1, shelf.token(), shelves::qty.eq(0))?;
    shelf.force_increment(conn)
}

/// A repository's delete by a client's ETag, generic over the entity: the bound names why.
fn delete<T: VersionColumnDsl<SqliteConnection>>(conn: &mut SqliteConnection, key: T::Key, etag: &T::Token) {
    let _ = T::delete_by_key(conn, key, etag);
}

fn main() {
    let _generic = |conn: &mut SqliteConnection, shelf: &Shelf| delete::<Shelf>(conn, 1, shelf.token());
}
