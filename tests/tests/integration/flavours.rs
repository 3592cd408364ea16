//! What a scenario file (`scenarios.rs`) names the same way in both flavours, for each
//! flavour: `flavour_prelude!()` (see [`on_every_backend!`]) brings one of these modules
//! into the file, with the backend's `Conn` beside it.
//!
//! Where the blocking and async APIs spell a call differently (`Race::run` and
//! `Race::run_asynchronous`), a trait here gives both one name, async in `asynchronous`
//! and blocking in `blocking`, so the scenario is written once with `.await` and the
//! blocking flavour drops it.

/// The blocking flavour: Diesel's connections, threads for the racing writers.
pub(crate) mod blocking {
    #[allow(unused_imports)]
    pub(crate) use {
        diesel::connection::SimpleConnection,
        diesel::{Connection, RunQueryDsl},
        diesel_occ::prelude,
        diesel_occ_tests::{TestConnection, TestDb, wait_until},
        occ_test_flavours::blocking as flavour,
    };

    use diesel_occ::schema_check::SchemaCheck;
    use diesel_occ::testing::{Race, RaceReport};
    use diesel_occ_tests::statements::StatementCounter;

    /// [`Race::run`], under the name both flavours share.
    pub(crate) trait RaceInFlavour {
        /// Runs the writers, each on a thread of its own.
        fn run_in_flavour<S, T, R, W>(&self, read: R, write: W) -> RaceReport<T>
        where
            R: Fn(usize) -> S + Sync,
            W: Fn(usize, S) -> T + Sync,
            T: Send;
    }

    impl RaceInFlavour for Race {
        fn run_in_flavour<S, T, R, W>(&self, read: R, write: W) -> RaceReport<T>
        where
            R: Fn(usize) -> S + Sync,
            W: Fn(usize, S) -> T + Sync,
            T: Send,
        {
            self.run(read, write)
        }
    }

    /// [`StatementCounter::install`], under the name both flavours share.
    pub(crate) trait InstallInFlavour {
        /// A fresh counter on `conn`.
        fn install_in_flavour<C: diesel::Connection>(conn: &mut C) -> Self;
    }

    impl InstallInFlavour for StatementCounter {
        fn install_in_flavour<C: diesel::Connection>(conn: &mut C) -> Self {
            StatementCounter::install(conn)
        }
    }
    /// [`SchemaCheck::run`], under the name both flavours share: implemented for each
    /// backend's connection, whose bounds the check's own are met by.
    pub(crate) trait SchemaCheckInFlavour<C> {
        /// Runs the check on `conn`.
        fn run_in_flavour(&self, conn: &mut C) -> Result<(), diesel_occ::Error>;
    }

    macro_rules! schema_check_in_flavour {
        ($($(#[$cfg:meta])* $conn:ty),+) => {$(
            $(#[$cfg])*
            impl SchemaCheckInFlavour<$conn> for SchemaCheck {
                fn run_in_flavour(&self, conn: &mut $conn) -> Result<(), diesel_occ::Error> {
                    self.run(conn)
                }
            }
        )+};
    }

    schema_check_in_flavour!(
        diesel::pg::PgConnection,
        #[cfg(feature = "mysql")]
        diesel::mysql::MysqlConnection,
        diesel::sqlite::SqliteConnection
    );

    /// diesel-occ's calls that both flavours name alike, and Diesel's
    /// `TransactionManager`: a scenario file has them by glob, so its own names win.
    pub(crate) mod occ {
        pub(crate) use diesel::connection::TransactionManager;
        pub(crate) use diesel_occ::blocking::{Combinable, Combiner, ConnectionSource as Source};
        pub(crate) use diesel_occ::blocking::{retry, retry_with_standby};
        pub(crate) use diesel_occ::transaction;
    }

    /// Work started by [`spawn`]: a thread of its own.
    pub(crate) type Spawned<T> = std::thread::JoinHandle<T>;

    /// Starts `work` on a thread of its own (a task, in the async flavour).
    pub(crate) fn spawn<T: Send + 'static>(
        work: impl FnOnce() -> T + Send + 'static,
    ) -> Spawned<T> {
        std::thread::spawn(work)
    }

    /// What the spawned work returned, or the payload it panicked with.
    pub(crate) fn joined<T>(spawned: Spawned<T>) -> std::thread::Result<T> {
        spawned.join()
    }

    /// Runs `sql` as is on a connection of its own: another writer's raw statement,
    /// past diesel-occ and any token, or the test's own DDL.
    pub(crate) fn raw_sql<C: TestConnection>(db: &TestDb<C>, sql: &str) {
        run_sql(&mut db.conn(), sql);
    }

    /// Inserts `values` into `table` on `conn` (a `&mut` connection), past diesel-occ:
    /// the test's own seed rows.
    macro_rules! insert_rows {
        ($conn:expr, $table:expr, $values:expr) => {
            diesel::RunQueryDsl::execute(diesel::insert_into($table).values($values), $conn)
                .expect("insert the seed rows")
        };
    }
    pub(crate) use insert_rows;

    /// Runs `sql` as is on `conn`: the test's own DDL or session settings.
    pub(crate) fn run_sql(conn: &mut impl SimpleConnection, sql: &str) {
        conn.batch_execute(sql)
            .unwrap_or_else(|e| panic!("{sql}: {e}"));
    }
}

/// The async flavour: diesel-async's connections, the racing writers polled together.
pub(crate) mod asynchronous {
    #[allow(unused_imports)]
    pub(crate) use {
        diesel_async::{
            AsyncConnection as Connection, RunQueryDsl, SimpleAsyncConnection as SimpleConnection,
        },
        diesel_occ::asynchronous::prelude,
        diesel_occ_tests::{
            AsyncTestConnection as TestConnection, AsyncTestDb as TestDb,
            wait_until_async as wait_until,
        },
        occ_test_flavours::asynchronous as flavour,
    };

    use diesel_occ::schema_check::SchemaCheck;
    use diesel_occ::testing::{Race, RaceReport};
    use diesel_occ_tests::statements::StatementCounter;

    /// [`Race::run_asynchronous`], under the name both flavours share.
    pub(crate) trait RaceInFlavour {
        /// Runs the writers, polled together by the returned future.
        async fn run_in_flavour<S, T, R, W>(&self, read: R, write: W) -> RaceReport<T>
        where
            R: AsyncFn(usize) -> S,
            W: AsyncFn(usize, S) -> T;
    }

    impl RaceInFlavour for Race {
        async fn run_in_flavour<S, T, R, W>(&self, read: R, write: W) -> RaceReport<T>
        where
            R: AsyncFn(usize) -> S,
            W: AsyncFn(usize, S) -> T,
        {
            self.run_asynchronous(read, write).await
        }
    }

    /// [`StatementCounter::install_async`], under the name both flavours share.
    pub(crate) trait InstallInFlavour {
        /// A fresh counter on `conn`.
        fn install_in_flavour<C: diesel_async::AsyncConnection>(conn: &mut C) -> Self;
    }

    impl InstallInFlavour for StatementCounter {
        fn install_in_flavour<C: diesel_async::AsyncConnection>(conn: &mut C) -> Self {
            StatementCounter::install_async(conn)
        }
    }
    /// [`SchemaCheck::run_async`], under the name both flavours share: implemented for
    /// each backend's connection, whose bounds the check's own are met by.
    pub(crate) trait SchemaCheckInFlavour<C> {
        /// Runs the check on `conn`.
        async fn run_in_flavour(&self, conn: &mut C) -> Result<(), diesel_occ::Error>;
    }

    macro_rules! schema_check_in_flavour {
        ($($conn:ty),+) => {$(
            impl SchemaCheckInFlavour<$conn> for SchemaCheck {
                async fn run_in_flavour(&self, conn: &mut $conn) -> Result<(), diesel_occ::Error> {
                    self.run_async(conn).await
                }
            }
        )+};
    }

    schema_check_in_flavour!(
        diesel_async::AsyncPgConnection,
        diesel_async::AsyncMysqlConnection,
        diesel_async::sync_connection_wrapper::SyncConnectionWrapper<
            diesel::sqlite::SqliteConnection,
        >
    );

    /// diesel-occ's calls that both flavours name alike, and diesel-async's
    /// `TransactionManager`: a scenario file has them by glob, so its own names win.
    pub(crate) mod occ {
        pub(crate) use diesel_async::TransactionManager;
        pub(crate) use diesel_occ::asynchronous::{AsyncConnectionSource as Source, retry};
        pub(crate) use diesel_occ::asynchronous::{Combinable, Combiner};
        pub(crate) use diesel_occ::asynchronous::{retry_with_standby, transaction};
    }

    /// Work started by [`spawn`]: a task of its own.
    pub(crate) type Spawned<T> = tokio::task::JoinHandle<T>;

    /// Starts the future `work` makes on a task of its own (a thread, in the blocking
    /// flavour, where `work` is the closure itself).
    pub(crate) fn spawn<F>(work: impl FnOnce() -> F) -> Spawned<F::Output>
    where
        F: Future<Output: Send> + Send + 'static,
    {
        tokio::spawn(work())
    }

    /// What the spawned task returned, or the payload it panicked with (a task that was
    /// aborted is not joined here).
    pub(crate) async fn joined<T>(spawned: Spawned<T>) -> std::thread::Result<T> {
        spawned.await.map_err(tokio::task::JoinError::into_panic)
    }

    /// Runs `sql` as is on a connection of its own: another writer's raw statement,
    /// past diesel-occ and any token, or the test's own DDL.
    pub(crate) async fn raw_sql<C: TestConnection>(db: &TestDb<C>, sql: &str) {
        run_sql(&mut db.conn().await, sql).await;
    }

    /// Inserts `values` into `table` on `conn` (a `&mut` connection), past diesel-occ:
    /// the test's own seed rows.
    macro_rules! insert_rows_async {
        ($conn:expr, $table:expr, $values:expr) => {
            diesel_async::RunQueryDsl::execute(diesel::insert_into($table).values($values), $conn)
                .await
                .expect("insert the seed rows")
        };
    }
    pub(crate) use insert_rows_async as insert_rows;

    /// Runs `sql` as is on `conn`: the test's own DDL or session settings.
    pub(crate) async fn run_sql(conn: &mut impl SimpleConnection, sql: &str) {
        conn.batch_execute(sql)
            .await
            .unwrap_or_else(|e| panic!("{sql}: {e}"));
    }
}
