//! `#[occ(version, generated)]`: PostgreSQL's `xmin`, read back with `RETURNING`.
use diesel::prelude::*;
use diesel_occ::xmin::XminToken;
use diesel_occ::prelude::*;
use diesel_occ::versioned::VersionedParts;

diesel::table! {
    documents (id) {
        id -> Integer,
        body -> Text,
        xmin -> diesel_occ::xmin::sql_types::Xid,
    }
}

#[derive(Debug, Clone, PartialEq, Queryable, Selectable, Versioned)]
#[diesel(table_name = documents, check_for_backend(diesel::pg::Pg))]
#[occ(track)]
pub struct Document {
    pub id: i32,
    pub body: String,
    #[occ(version, generated)]
    pub xmin: XminToken,
}

/// The async API runs the same statements, for a full and for a tracked save.
async fn save_async(
    doc: &mut Document,
    tracked: &mut diesel_occ::Tracked<Document>,
    conn: &mut diesel_async::AsyncPgConnection,
) -> Result<(), diesel_occ::Error> {
    diesel_occ::asynchronous::CheckedDsl::save_checked(doc, conn).await?;
    diesel_occ::asynchronous::TrackedDsl::save_checked(tracked, conn).await
}

fn main() {
    assert!(<Document as VersionedParts>::GENERATED_TOKEN);
    let _save = |doc: &mut Document, conn: &mut PgConnection| doc.save_checked(conn);
    let _delete = |doc: &Document, conn: &mut PgConnection| doc.delete_checked(conn);
    let _batch = |docs: &mut [Document], conn: &mut PgConnection| docs.save_all_checked(conn);
    let _tracked = |doc: &mut diesel_occ::Tracked<Document>, conn: &mut PgConnection| {
        TrackedDsl::save_checked(doc, conn)
    };
    let _ = save_async;
}
