//! PostgreSQL's `xmin` as a database-generated token: no token column, never assigned,
//! compared in the WHERE clause and read back with `RETURNING` in the same statement.
//! Being the row's own transaction id, it is also its own bypass guard.

use diesel::prelude::*;
use diesel_occ::xmin::XminToken;
use diesel_occ_tests::schema::pg as schema;

#[derive(Debug, Clone, PartialEq, Queryable, Selectable, diesel_occ::Versioned)]
#[diesel(table_name = schema::documents, check_for_backend(diesel::pg::Pg))]
#[occ(track)]
struct Document {
    id: i32,
    title: String,
    body: String,
    #[occ(version, generated)]
    xmin: XminToken,
}

#[derive(Insertable)]
#[diesel(table_name = schema::documents)]
struct NewDocument<'a> {
    id: i32,
    title: &'a str,
    body: &'a str,
}

// PostgreSQL only: the scenario file sits beside this mod.rs.
#[path = "."]
mod postgres {
    #[allow(unused_imports)]
    use {
        diesel::pg::PgConnection as Conn, diesel_async::AsyncPgConnection as AsyncConn,
        diesel_occ_tests::schema::pg as schema,
    };

    on_every_backend!(@file scenarios);
}
