//! `#[diesel(...)]` keys that belong to Diesel's derives are skipped whole, including
//! values with commas inside angle brackets.
use std::marker::PhantomData;

use diesel::backend::Backend;
use diesel::deserialize::{self, FromSql, Queryable};
use diesel::prelude::*;
use diesel::sql_types::Integer;
use diesel_occ::prelude::*;

diesel::table! {
    stock (id) {
        id -> Integer,
        available -> Integer,
        version -> Integer,
    }
}

/// A deserialization wrapper with two type parameters.
pub struct Loaded<T, Tag>(T, PhantomData<Tag>);

impl<DB: Backend, Tag> Queryable<Integer, DB> for Loaded<i32, Tag>
where
    i32: FromSql<Integer, DB>,
{
    type Row = i32;

    fn build(row: i32) -> deserialize::Result<Self> {
        Ok(Loaded(row, PhantomData))
    }
}

impl<Tag> From<Loaded<i32, Tag>> for i32 {
    fn from(loaded: Loaded<i32, Tag>) -> i32 {
        loaded.0
    }
}

#[derive(Debug, Queryable, Selectable, Identifiable, Versioned)]
#[diesel(table_name = stock, check_for_backend(diesel::sqlite::Sqlite))]
pub struct Stock {
    pub id: i32,
    #[diesel(deserialize_as = Loaded<i32, ()>, treat_none_as_null = false)]
    pub available: i32,
    #[occ(version)]
    pub version: i32,
}

fn _compiles(conn: &mut SqliteConnection) -> Result<(), diesel_occ::Error> {
    let mut stock = Stock::find(conn, 1)?;
    stock.save_checked(conn)
}

fn main() {}
