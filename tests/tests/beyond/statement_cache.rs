//! Prepared statements stay bounded: saves whose column set varies (tracked saves of
//! every subset of the fields, full saves with every pattern of `None` fields) leave a
//! connection with a small, fixed number of prepared statements, however many distinct
//! texts they run. MariaDB's `max_prepared_stmt_count` is one limit for the whole server.
//!
//! Counted three ways: the statements Diesel's cache keeps (its `CacheQuery` events, on
//! every backend), the statements the server holds open for the session (MariaDB's
//! `Com_stmt_prepare - Com_stmt_close`, PostgreSQL's `pg_prepared_statements`), and on
//! MariaDB the server-wide `Prepared_stmt_count`.

#![allow(missing_docs, unreachable_pub)] // table! output, as in a Diesel schema.rs

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use diesel::connection::InstrumentationEvent;

/// Twelve trackable, nullable columns: 4096 subsets, 4096 `None` patterns.
pub const COLUMNS: usize = 12;
/// How many saves each test runs: every pattern once.
pub const PATTERNS: u32 = 1 << COLUMNS;
/// Prepared statements one connection may keep after every pattern: the full save, the
/// find and the token query, with room to spare. Without the bound it is thousands.
pub const BOUND: i64 = 16;

diesel::table! {
    stmt_wide (id) {
        id -> Integer,
        c0 -> Nullable<Integer>,
        c1 -> Nullable<Integer>,
        c2 -> Nullable<Integer>,
        c3 -> Nullable<Integer>,
        c4 -> Nullable<Integer>,
        c5 -> Nullable<Integer>,
        c6 -> Nullable<Integer>,
        c7 -> Nullable<Integer>,
        c8 -> Nullable<Integer>,
        c9 -> Nullable<Integer>,
        c10 -> Nullable<Integer>,
        c11 -> Nullable<Integer>,
        version -> Integer,
    }
}

/// The table, in SQL every backend accepts.
pub const CREATE: &str = "CREATE TABLE stmt_wide (id INTEGER PRIMARY KEY, \
    c0 INTEGER, c1 INTEGER, c2 INTEGER, c3 INTEGER, c4 INTEGER, c5 INTEGER, \
    c6 INTEGER, c7 INTEGER, c8 INTEGER, c9 INTEGER, c10 INTEGER, c11 INTEGER, \
    version INTEGER NOT NULL)";
pub const SEED: &str = "INSERT INTO stmt_wide VALUES (1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1)";

/// The columns of `pattern` (bit i: column i), with `value` or `None`.
pub fn values(pattern: u32, value: i32) -> [Option<i32>; COLUMNS] {
    std::array::from_fn(|i| (pattern & (1 << i) != 0).then_some(value))
}

/// Counts the statements Diesel's statement cache prepares and keeps.
#[derive(Debug, Clone, Default)]
pub struct CacheCount(Arc<AtomicUsize>);

impl CacheCount {
    pub fn instrumentation(&self) -> impl FnMut(InstrumentationEvent<'_>) + Send + 'static {
        let count = Arc::clone(&self.0);
        move |event: InstrumentationEvent<'_>| {
            if let InstrumentationEvent::CacheQuery { .. } = event {
                count.fetch_add(1, Ordering::Relaxed);
            }
        }
    }

    pub fn get(&self) -> usize {
        self.0.load(Ordering::Relaxed)
    }
}

macro_rules! wide_entity {
    () => {
        #[derive(Debug, Clone, PartialEq, Queryable, Selectable, Versioned)]
        #[diesel(table_name = crate::statement_cache::stmt_wide)]
        #[occ(track)]
        struct Wide {
            id: i32,
            c0: Option<i32>,
            c1: Option<i32>,
            c2: Option<i32>,
            c3: Option<i32>,
            c4: Option<i32>,
            c5: Option<i32>,
            c6: Option<i32>,
            c7: Option<i32>,
            c8: Option<i32>,
            c9: Option<i32>,
            c10: Option<i32>,
            c11: Option<i32>,
            #[occ(version)]
            version: i32,
        }

        impl Wide {
            fn set(&mut self, values: [Option<i32>; crate::statement_cache::COLUMNS]) {
                let [c0, c1, c2, c3, c4, c5, c6, c7, c8, c9, c10, c11] = values;
                (self.c0, self.c1, self.c2, self.c3) = (c0, c1, c2, c3);
                (self.c4, self.c5, self.c6, self.c7) = (c4, c5, c6, c7);
                (self.c8, self.c9, self.c10, self.c11) = (c8, c9, c10, c11);
            }

            fn get(&self) -> [Option<i32>; crate::statement_cache::COLUMNS] {
                [
                    self.c0, self.c1, self.c2, self.c3, self.c4, self.c5, self.c6, self.c7,
                    self.c8, self.c9, self.c10, self.c11,
                ]
            }
        }
    };
}

/// The statements the server holds open for a blocking connection's session (`None`
/// where the backend has no server to ask).
pub trait OpenStatements: diesel::Connection {
    fn open_statements(&mut self) -> Option<i64>;
    /// MariaDB's server-wide `Prepared_stmt_count`.
    fn server_prepared(&mut self) -> Option<i64> {
        None
    }
}

#[derive(diesel::QueryableByName)]
struct Status {
    #[diesel(sql_type = diesel::sql_types::Text)]
    #[diesel(column_name = Variable_name)]
    name: String,
    #[diesel(sql_type = diesel::sql_types::Text)]
    #[diesel(column_name = Value)]
    value: String,
}

#[derive(diesel::QueryableByName)]
struct Count {
    #[diesel(sql_type = diesel::sql_types::BigInt)]
    count: i64,
}

fn status_value(rows: &[Status], name: &str) -> i64 {
    rows.iter()
        .find(|row| row.name.eq_ignore_ascii_case(name))
        .and_then(|row| row.value.parse().ok())
        .unwrap_or_else(|| panic!("no status {name}"))
}

/// Statements this MariaDB session prepared and has not closed.
pub const MYSQL_OPEN: &str =
    "SHOW SESSION STATUS WHERE Variable_name IN ('Com_stmt_prepare', 'Com_stmt_close')";
pub const MYSQL_SERVER: &str = "SHOW GLOBAL STATUS LIKE 'Prepared_stmt_count'";
pub const PG_OPEN: &str = "SELECT count(*) AS count FROM pg_prepared_statements";

fn mysql_open(rows: &[Status]) -> i64 {
    status_value(rows, "Com_stmt_prepare") - status_value(rows, "Com_stmt_close")
}

impl OpenStatements for diesel::pg::PgConnection {
    fn open_statements(&mut self) -> Option<i64> {
        use diesel::RunQueryDsl;
        let count: Count = diesel::sql_query(PG_OPEN)
            .get_result(self)
            .expect("pg_prepared_statements");
        Some(count.count)
    }
}

#[cfg(feature = "mysql")]
impl OpenStatements for diesel::mysql::MysqlConnection {
    fn open_statements(&mut self) -> Option<i64> {
        use diesel::RunQueryDsl;
        let rows: Vec<Status> = diesel::sql_query(MYSQL_OPEN)
            .load(self)
            .expect("session status");
        Some(mysql_open(&rows))
    }

    fn server_prepared(&mut self) -> Option<i64> {
        use diesel::RunQueryDsl;
        let rows: Vec<Status> = diesel::sql_query(MYSQL_SERVER)
            .load(self)
            .expect("global status");
        Some(status_value(&rows, "Prepared_stmt_count"))
    }
}

impl OpenStatements for diesel::sqlite::SqliteConnection {
    fn open_statements(&mut self) -> Option<i64> {
        None
    }
}

/// The same, on an async connection.
pub trait AsyncOpenStatements: diesel_async::AsyncConnection {
    fn open_statements(&mut self) -> impl std::future::Future<Output = Option<i64>> + Send;
    fn server_prepared(&mut self) -> impl std::future::Future<Output = Option<i64>> + Send {
        async { None }
    }
}

impl AsyncOpenStatements for diesel_async::AsyncPgConnection {
    async fn open_statements(&mut self) -> Option<i64> {
        use diesel_async::RunQueryDsl;
        let count: Count = diesel::sql_query(PG_OPEN)
            .get_result(self)
            .await
            .expect("pg_prepared_statements");
        Some(count.count)
    }
}

impl AsyncOpenStatements for diesel_async::AsyncMysqlConnection {
    async fn open_statements(&mut self) -> Option<i64> {
        use diesel_async::RunQueryDsl;
        let rows: Vec<Status> = diesel::sql_query(MYSQL_OPEN)
            .load(self)
            .await
            .expect("session status");
        Some(mysql_open(&rows))
    }

    async fn server_prepared(&mut self) -> Option<i64> {
        use diesel_async::RunQueryDsl;
        let rows: Vec<Status> = diesel::sql_query(MYSQL_SERVER)
            .load(self)
            .await
            .expect("global status");
        Some(status_value(&rows, "Prepared_stmt_count"))
    }
}

impl AsyncOpenStatements
    for diesel_async::sync_connection_wrapper::SyncConnectionWrapper<
        diesel::sqlite::SqliteConnection,
    >
{
    async fn open_statements(&mut self) -> Option<i64> {
        None
    }
}

/// Other sessions (tests running beside this one) move the server-wide count too: this
/// much slack for them, still far below the thousands an unbounded cache leaves.
pub const SERVER_SLACK: i64 = 512;

/// The three counts after every pattern, against the counts before.
pub fn assert_bounded(
    what: &str,
    cached: usize,
    open: (Option<i64>, Option<i64>),
    server: (Option<i64>, Option<i64>),
) {
    let grew = |(before, after): (Option<i64>, Option<i64>)| Some(after? - before?);
    let (open, server) = (grew(open), grew(server));
    let report = format!(
        "{what}: Diesel's cache kept {cached} statements, the session holds {open:?} more, \
         Prepared_stmt_count grew by {server:?}"
    );
    assert!(i64::try_from(cached).unwrap() <= BOUND, "{report}");
    assert!(open.is_none_or(|open| open <= BOUND), "{report}");
    assert!(
        server.is_none_or(|server| server <= BOUND + SERVER_SLACK),
        "{report}"
    );
}

macro_rules! statement_cache_sync {
    ($backend:ident, $conn:ty) => {
        mod $backend {
            use diesel::connection::SimpleConnection;
            use diesel::prelude::*;
            use diesel_occ::Tracked;
            use diesel_occ::prelude::*;
            use diesel_occ_tests::TestDb;

            use crate::statement_cache::{
                CREATE, CacheCount, OpenStatements, PATTERNS, SEED, assert_bounded, values,
            };

            type Conn = $conn;

            wide_entity!();

            fn setup() -> Option<(TestDb<Conn>, Conn)> {
                let db = TestDb::<Conn>::create(concat!(
                    "stmt_cache_",
                    stringify!($backend),
                    "_",
                    line!()
                ))?;
                let mut conn = db.conn();
                conn.batch_execute(CREATE).expect("create table");
                conn.batch_execute(SEED).expect("seed row");
                Some((db, conn))
            }

            #[test]
            fn tracked_saves_of_every_column_set_keep_the_prepared_statements_bounded() {
                let Some((_db, mut conn)) = setup() else {
                    return;
                };
                let cached = CacheCount::default();
                conn.set_instrumentation(cached.instrumentation());
                let open = conn.open_statements();
                let server = conn.server_prepared();
                let mut tracked = Tracked::new(Wide::find(&mut conn, 1).expect("row"));
                for pattern in 0..PATTERNS {
                    // Every column in `pattern` changes, the others keep their value.
                    let mut edited = tracked.get();
                    for (column, value) in edited.iter_mut().zip(values(pattern, 1)) {
                        if value.is_some() {
                            *column = Some(column.unwrap_or(0) + 1);
                        }
                    }
                    tracked.set(edited);
                    assert_eq!(tracked.changed().len(), pattern.count_ones() as usize);
                    tracked.save_checked(&mut conn).expect("tracked save");
                }
                assert_bounded(
                    "tracked saves",
                    cached.get(),
                    (open, conn.open_statements()),
                    (server, conn.server_prepared()),
                );
                let stored = Wide::find(&mut conn, 1).expect("row");
                assert_eq!(stored, *tracked.current());
                assert_eq!(stored.version, 1 + PATTERNS as i32);
            }

            #[test]
            fn full_saves_of_every_none_pattern_keep_the_prepared_statements_bounded() {
                let Some((_db, mut conn)) = setup() else {
                    return;
                };
                let cached = CacheCount::default();
                conn.set_instrumentation(cached.instrumentation());
                let open = conn.open_statements();
                let server = conn.server_prepared();
                let mut row = Wide::find(&mut conn, 1).expect("row");
                for pattern in 0..PATTERNS {
                    // `None` leaves its column alone: one SQL text per pattern.
                    row.set(values(pattern, pattern as i32));
                    row.save_checked(&mut conn).expect("save");
                }
                assert_bounded(
                    "full saves",
                    cached.get(),
                    (open, conn.open_statements()),
                    (server, conn.server_prepared()),
                );
                let stored = Wide::find(&mut conn, 1).expect("row");
                // Column i was last written by the last pattern with bit i set.
                let last = (PATTERNS - 1) as i32;
                assert_eq!(stored.get(), values(PATTERNS - 1, last));
                assert_eq!(stored.version, 1 + PATTERNS as i32);
            }
        }
    };
}

macro_rules! statement_cache_async {
    ($backend:ident, $conn:ty, $sync_conn:ty) => {
        mod $backend {
            use diesel::prelude::{Queryable, Selectable};
            use diesel_async::{AsyncConnection, SimpleAsyncConnection};
            use diesel_occ::Tracked;
            use diesel_occ::asynchronous::prelude::*;
            use diesel_occ_tests::TestDb;

            use crate::statement_cache::{
                AsyncOpenStatements, CREATE, CacheCount, PATTERNS, SEED, assert_bounded, values,
            };

            type Conn = $conn;

            wide_entity!();

            async fn setup() -> Option<(TestDb<$sync_conn>, Conn)> {
                let db = TestDb::<$sync_conn>::create(concat!(
                    "stmt_cache_",
                    stringify!($backend),
                    "_",
                    line!()
                ))?;
                let mut conn = Conn::establish(db.url()).await.expect("async connection");
                conn.batch_execute(CREATE).await.expect("create table");
                conn.batch_execute(SEED).await.expect("seed row");
                Some((db, conn))
            }

            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn tracked_saves_of_every_column_set_keep_the_prepared_statements_bounded() {
                let Some((_db, mut conn)) = setup().await else {
                    return;
                };
                let cached = CacheCount::default();
                conn.set_instrumentation(cached.instrumentation());
                let open = conn.open_statements().await;
                let server = conn.server_prepared().await;
                let mut tracked = Tracked::new(Wide::find(&mut conn, 1).await.expect("row"));
                for pattern in 0..PATTERNS {
                    let mut edited = tracked.get();
                    for (column, value) in edited.iter_mut().zip(values(pattern, 1)) {
                        if value.is_some() {
                            *column = Some(column.unwrap_or(0) + 1);
                        }
                    }
                    tracked.set(edited);
                    tracked.save_checked(&mut conn).await.expect("tracked save");
                }
                let after = (conn.open_statements().await, conn.server_prepared().await);
                assert_bounded(
                    "tracked saves",
                    cached.get(),
                    (open, after.0),
                    (server, after.1),
                );
                let stored = Wide::find(&mut conn, 1).await.expect("row");
                assert_eq!(stored, *tracked.current());
                assert_eq!(stored.version, 1 + PATTERNS as i32);
            }

            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn full_saves_of_every_none_pattern_keep_the_prepared_statements_bounded() {
                let Some((_db, mut conn)) = setup().await else {
                    return;
                };
                let cached = CacheCount::default();
                conn.set_instrumentation(cached.instrumentation());
                let open = conn.open_statements().await;
                let server = conn.server_prepared().await;
                let mut row = Wide::find(&mut conn, 1).await.expect("row");
                for pattern in 0..PATTERNS {
                    row.set(values(pattern, pattern as i32));
                    row.save_checked(&mut conn).await.expect("save");
                }
                let after = (conn.open_statements().await, conn.server_prepared().await);
                assert_bounded(
                    "full saves",
                    cached.get(),
                    (open, after.0),
                    (server, after.1),
                );
                let stored = Wide::find(&mut conn, 1).await.expect("row");
                let last = (PATTERNS - 1) as i32;
                assert_eq!(stored.get(), values(PATTERNS - 1, last));
                assert_eq!(stored.version, 1 + PATTERNS as i32);
            }
        }
    };
}

statement_cache_sync!(postgres, diesel::pg::PgConnection);
#[cfg(feature = "mysql")]
statement_cache_sync!(mysql, diesel::mysql::MysqlConnection);
statement_cache_sync!(sqlite, diesel::sqlite::SqliteConnection);

statement_cache_async!(
    postgres_async,
    diesel_async::AsyncPgConnection,
    diesel::pg::PgConnection
);
#[cfg(feature = "mysql")]
statement_cache_async!(
    mysql_async,
    diesel_async::AsyncMysqlConnection,
    diesel::mysql::MysqlConnection
);
statement_cache_async!(
    sqlite_async,
    diesel_async::sync_connection_wrapper::SyncConnectionWrapper<diesel::sqlite::SqliteConnection>,
    diesel::sqlite::SqliteConnection
);
