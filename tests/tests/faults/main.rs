//! Faults on the real servers: a server connection killed during a retry attempt,
//! statement and lock timeouts, an exhausted pool, waits bounded by a retry deadline,
//! and what the resulting errors show.
//!
//! ```text
//! cargo nextest run -p diesel-occ-tests --features mysql --test faults
//! ```
//!
//! Every fault is placed by a barrier inside the attempt, never by timing: a killer
//! thread with its own connection terminates the attempt's server session and waits
//! until the server has removed it before the attempt goes on; a lock holder takes the
//! row lock before the attempt writes and keeps it until the attempt has failed. After
//! every fault the row is read back on a new connection: the library either reported
//! the write or left the row as it was. See RELIABILITY.md for what each test shows.

#[macro_use]
mod sync_faults;
#[macro_use]
mod async_faults;
mod deadlines;
mod dialect;
mod leaks;

sync_faults!(
    postgres,
    diesel::pg::PgConnection,
    diesel_occ_tests::schema::pg,
    crate::dialect::pg
);
#[cfg(feature = "mysql")]
sync_faults!(
    mysql,
    diesel::mysql::MysqlConnection,
    diesel_occ_tests::schema::mysql,
    crate::dialect::mysql
);

async_faults!(
    postgres_async,
    diesel_async::AsyncPgConnection,
    diesel::pg::PgConnection,
    diesel_occ_tests::schema::pg,
    crate::dialect::pg
);
#[cfg(feature = "mysql")]
async_faults!(
    mysql_async,
    diesel_async::AsyncMysqlConnection,
    diesel::mysql::MysqlConnection,
    diesel_occ_tests::schema::mysql,
    crate::dialect::mysql
);
