//! The scenario suite, written once (in `sync_suite.rs`) and run on every backend.

#[macro_use]
mod sync_suite;
#[macro_use]
mod utc_suite;

sync_suite!(
    postgres,
    diesel::pg::PgConnection,
    diesel_occ_tests::schema::pg
);
#[cfg(feature = "mysql")]
sync_suite!(
    mysql,
    diesel::mysql::MysqlConnection,
    diesel_occ_tests::schema::mysql
);
sync_suite!(
    sqlite,
    diesel::sqlite::SqliteConnection,
    diesel_occ_tests::schema::sqlite
);

utc_suite!(
    postgres_utc,
    diesel::pg::PgConnection,
    diesel_occ_tests::schema::pg
);
utc_suite!(
    sqlite_utc,
    diesel::sqlite::SqliteConnection,
    diesel_occ_tests::schema::sqlite
);

mod client_token;
mod postgres_only;
