//! A checked insert of an entity whose token the database generates: the token exists
//! only once the row does, so `insert_checked` cannot return it.
use diesel::prelude::*;
use diesel_occ::prelude::*;
use diesel_occ::xmin::XminToken;

diesel::table! {
    documents (id) {
        id -> Integer,
        body -> Text,
        xmin -> diesel_occ::xmin::sql_types::Xid,
    }
}

#[derive(Debug, Clone, PartialEq, Queryable, Selectable, Insertable, Versioned)]
#[diesel(table_name = documents, check_for_backend(diesel::pg::Pg))]
pub struct Document {
    pub id: i32,
    pub body: String,
    #[occ(version, generated)]
    #[diesel(skip_insertion)]
    pub xmin: XminToken,
}

/// A repository's create, generic over the entity: the bound names the fix.
fn create<T: InsertDsl<PgConnection>>(entity: &mut T, conn: &mut PgConnection) {
    let _ = entity.insert_checked(conn);
}

fn main() {
    let _insert = |doc: &mut Document, conn: &mut PgConnection| doc.insert_checked(conn);
    let _generic = |doc: &mut Document, conn: &mut PgConnection| create(doc, conn);
}
