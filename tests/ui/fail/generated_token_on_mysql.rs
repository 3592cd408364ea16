use diesel::prelude::*;
use diesel_occ::prelude::*;

diesel::table! {
    documents (id) {
        id -> Integer,
        body -> Text,
        rev -> Integer,
    }
}

/// A trigger maintains `rev`: a generated token, read back with RETURNING.
#[derive(Queryable, Selectable, Versioned)]
#[diesel(table_name = documents)]
struct Document {
    id: i32,
    body: String,
    #[occ(version, generated)]
    rev: i32,
}

/// MySQL has no RETURNING: this does not compile.
fn save<C>(doc: &mut Document, conn: &mut C) -> Result<(), diesel_occ::Error>
where
    C: diesel::connection::LoadConnection<Backend = diesel::mysql::Mysql>,
{
    doc.save_checked(conn)
}

fn main() {}
