//! Writes that carry their own guard: a checked save with an extra predicate, and the
//! update and delete by key and a client's token that never load the row.
//!
//! The scenarios are plain test functions over a `Conn` type (`blocking.rs`,
//! `asynchronous.rs`); `per_backend!` compiles them once per backend.

use diesel::prelude::*;
use diesel_occ::{ConflictState, Error};

use diesel_occ_tests::schema::pg::counters;

#[derive(Debug, Clone, PartialEq, Queryable, Selectable, Insertable, diesel_occ::Versioned)]
#[diesel(table_name = counters)]
struct Counter {
    id: i32,
    value: i32,
    label: Option<String>,
    #[occ(version)]
    version: i32,
}

/// A counter row at version 1.
fn counter(id: i32, value: i32) -> Counter {
    Counter {
        id,
        value,
        label: None,
        version: 1,
    }
}

fn state(error: &Error) -> &ConflictState {
    error.as_conflict().expect("a concurrency conflict").state()
}

/// One module per backend with the scenario file compiled for its connection types.
macro_rules! per_backend {
    ($file:literal: $($(#[$attr:meta])* $backend:ident => $schema:path, $conn:ty $(, $blocking:ty)?;)*) => {$(
        $(#[$attr])*
        mod $backend {
            #[allow(unused_imports)]
            use $schema as schema;
            type Conn = $conn;
            $(type BlockingConn = $blocking;)?
            include!($file);
        }
    )*};
}

mod blocking {
    per_backend!("blocking.rs":
        postgres => diesel_occ_tests::schema::pg, diesel::pg::PgConnection;
        #[cfg(feature = "mysql")]
        mysql => diesel_occ_tests::schema::mysql, diesel::mysql::MysqlConnection;
        sqlite => diesel_occ_tests::schema::sqlite, diesel::sqlite::SqliteConnection;
    );
}

mod asynchronous {
    per_backend!("asynchronous.rs":
        postgres => diesel_occ_tests::schema::pg, diesel_async::AsyncPgConnection, diesel::pg::PgConnection;
        #[cfg(feature = "mysql")]
        mysql => diesel_occ_tests::schema::mysql, diesel_async::AsyncMysqlConnection, diesel::mysql::MysqlConnection;
        sqlite => diesel_occ_tests::schema::sqlite, diesel_async::sync_connection_wrapper::SyncConnectionWrapper<diesel::sqlite::SqliteConnection>,
            diesel::sqlite::SqliteConnection;
    );
}
