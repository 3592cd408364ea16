//! Changesets that leave the token alone compile for `bulk_update` and
//! `soft_delete_checked`, blocking and async: assignments, `Option`s, tuples, and
//! values that read other columns.
use diesel::prelude::*;
use diesel_occ::prelude::*;

diesel::table! {
    stock (id) {
        id -> Integer,
        available -> Integer,
        deleted -> Bool,
        note -> Nullable<Text>,
        version -> SmallInt,
    }
}

#[derive(Clone, Queryable, Selectable, Versioned)]
#[diesel(table_name = stock)]
struct Stock {
    id: i32,
    available: i32,
    deleted: bool,
    note: Option<String>,
    #[occ(version)]
    version: i16,
}

fn _blocking(stock: &mut Stock, conn: &mut SqliteConnection) -> Result<(), diesel_occ::Error> {
    Stock::bulk_update(stock::table, stock::available.eq(0)).execute(conn)?;
    Stock::bulk_update(
        stock::table.filter(stock::available.gt(0)),
        (
            stock::available.eq(stock::available - 1),
            Some(stock::note.eq("restocked")),
            None::<diesel::dsl::Eq<stock::deleted, bool>>,
        ),
    )
    .execute(conn)?;
    stock.soft_delete_checked(conn, (stock::deleted.eq(true), stock::note.eq(None::<String>)))
}

async fn _async(
    stock: &mut Stock,
    conn: &mut diesel_async::AsyncPgConnection,
) -> Result<(), diesel_occ::Error> {
    diesel_occ::asynchronous::VersionColumnDsl::soft_delete_checked(
        stock,
        conn,
        Some(stock::deleted.eq(true)),
    )
    .await
}

fn main() {}
