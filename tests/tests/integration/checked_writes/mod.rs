//! Checked saves and deletes: the token in the WHERE, the typed conflict and what it
//! holds, every token kind (integer widths, UUIDs, timestamps) and key shape (composite,
//! renamed columns), client-held tokens and forced races between two writers.

on_every_backend!(scenarios);

/// `DateTime<Utc>` tokens, on the backends where Diesel maps them: PostgreSQL
/// (`timestamptz`) and SQLite (text); not MySQL.
#[path = "."]
mod utc_tokens {
    #[path = "."]
    mod postgres {
        use diesel::pg::PgConnection as Conn;
        use diesel_occ_tests::schema::pg as schema;
        #[path = "utc_tokens.rs"]
        mod blocking;
    }
    #[path = "."]
    mod sqlite {
        use diesel::sqlite::SqliteConnection as Conn;
        use diesel_occ_tests::schema::sqlite as schema;
        #[path = "utc_tokens.rs"]
        mod blocking;
    }
}

mod postgres_uuid;
