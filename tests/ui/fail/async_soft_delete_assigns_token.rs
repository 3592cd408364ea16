use diesel::prelude::*;
use diesel_async::AsyncPgConnection;
use diesel_occ::asynchronous::prelude::*;

diesel::table! {
    stock (id) {
        id -> Integer,
        deleted -> Bool,
        version -> Uuid,
    }
}

#[derive(Queryable, Selectable, Versioned)]
#[diesel(table_name = stock)]
struct Stock {
    id: i32,
    deleted: bool,
    #[occ(version)]
    version: uuid::Uuid,
}

/// The async twin refuses the same marker.
async fn retire(stock: &mut Stock, conn: &mut AsyncPgConnection) -> Result<(), diesel_occ::Error> {
    stock
        .soft_delete_checked(conn, (stock::version.eq(uuid::Uuid::nil()), stock::deleted.eq(true)))
        .await
}

fn main() {}
