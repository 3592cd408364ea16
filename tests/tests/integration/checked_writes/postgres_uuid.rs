//! PostgreSQL maps `uuid::Uuid` directly: no `UuidToken` needed.

use diesel::pg::PgConnection;
use diesel::prelude::*;
use diesel_occ::prelude::*;
use diesel_occ_tests::TestDb;
use diesel_occ_tests::schema::pg as schema;

use crate::flavours::blocking::insert_rows;

#[derive(Debug, Clone, PartialEq, Queryable, Selectable, Insertable, Versioned)]
#[diesel(table_name = schema::stock)]
struct Stock {
    id: i32,
    available: i32,
    #[occ(version)]
    version: uuid::Uuid,
}

#[test]
fn plain_uuid_token_on_postgres() {
    let Some(db) = TestDb::<PgConnection>::create("pg_plain_uuid") else {
        return;
    };
    let mut conn = db.conn();
    let first = uuid::Uuid::initial();
    let row = {
        use schema::stock::dsl::*;
        (id.eq(1), available.eq(2), version.eq(first))
    };
    insert_rows!(&mut conn, schema::stock::table, row);
    let mut stock = Stock::find_checked(&mut conn, 1, &first).unwrap();
    stock.available = 1;
    stock.save_checked(&mut conn).unwrap();
    assert_eq!(Stock::find(&mut conn, 1).unwrap(), stock);
    let nil = Stock::find_checked(&mut conn, 1, &uuid::Uuid::nil()).unwrap_err();
    assert!(matches!(nil, diesel_occ::Error::InvalidToken(_)));
}
