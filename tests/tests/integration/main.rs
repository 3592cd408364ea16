//! diesel-occ's behaviour on PostgreSQL, MySQL/MariaDB and SQLite, one module per subject.
//!
//! A subject writes each scenario once, in `scenarios.rs`, in async form (`async fn`,
//! `.await`, `#[tokio::test]`), and [`on_every_backend!`] compiles that file four to six
//! times: once per backend, and on each backend once per flavour, as module `blocking`
//! (a blocking Diesel connection) and module `asynchronous` (diesel-async). A test's path
//! names the subject, the backend, the flavour and the scenario:
//!
//! ```text
//! bulk::postgres::blocking::bulk_update_wraps_an_i16_token_at_max
//! bulk::sqlite::asynchronous::bulk_update_wraps_an_i16_token_at_max
//! ```
//!
//! The file opens with `flavour_prelude!();`, which brings what the flavours name alike
//! but mean differently: `Conn` (the backend's blocking connection, or its async one),
//! `db!()` (a fresh database, [`test_db!`] or [`async_test_db!`]), `db_and_conn!()` (one
//! and a connection to it), and from [`flavours`] Diesel's or diesel-async's
//! `RunQueryDsl` and `Connection`, diesel-occ's prelude, `TestDb`, `wait_until`, the
//! calls the two APIs spell differently under one name (`run_in_flavour`,
//! `install_in_flavour`), `spawn` and `joined` (a thread, or a task), diesel-occ's
//! flavoured calls (`retry`, `transaction`, `Combiner`, `Source`) and the attribute
//! `#[flavour]`. Every item that awaits carries `#[flavour]`: in `asynchronous` it leaves
//! the item as written, in `blocking` it drops `.await` and `async` (`AsyncFn` becomes
//! `Fn`) and turns `#[tokio::test]` into `#[test]` (`occ_test_flavours`, in
//! `tests/flavours`). A test says `#[flavour(test)]`, which is `#[flavour]` with
//! `#[tokio::test]` (`#[flavour(test(..))]` passes `tokio::test`'s arguments).
//!
//! ```text
//! #[flavour(test)]
//! async fn a_stale_save_conflicts() {
//!     let (_db, mut conn) = db_and_conn!();
//!     let mut stale = Counter::find(&mut conn, 1).await.expect("row 1");
//!     // ...
//! }
//! ```
//!
//! A scenario only one flavour runs (a race on tasks or on threads, a pool adapter, a
//! `Send` check, one the other flavour's API cannot express) says so,
//! `#[flavour(blocking, test)]` or `#[flavour(asynchronous, test)]` (an item other than
//! a test: without `test`), and is written in that flavour's form. Subjects that are
//! about one flavour (cancellation, the bb8 pool, the HTTP handlers' `spawn_blocking`)
//! keep a file per flavour instead, `blocking.rs` or `asynchronous.rs`, written against
//! `Conn` and `AsyncConn` (the HTTP handlers' two files only say how a handler reaches a
//! connection; the handlers are `handlers.rs`).
//!
//! The example apps' scenarios (`example_apps`) are a file per app instead, each
//! compiled once per backend by [`on_every_app_backend!`] with the apps built for that
//! backend in scope:
//!
//! ```text
//! example_apps::mysql::seat::n_buyers_one_seat_exactly_one_confirmation
//! ```
//!
//! Every test gets its own migrated database (`diesel_occ_tests::TestDb`,
//! `AsyncTestDb`), dropped when it ends. Backends are chosen as `diesel_occ_tests`
//! describes (`OCC_POSTGRES_URL`, `OCC_MYSQL_URL`, `OCC_REQUIRE`); the blocking MySQL
//! scenarios need the client library (feature `mysql`), the async ones do not.
//!
//! Races force their interleaving with barriers, never with timing.

// on_every_backend! compiles each scenario file once per backend, on purpose.
#![allow(clippy::duplicate_mod)]

/// A fresh database for the calling test, on the backend of the blocking `Conn` in
/// scope; returns from the test (after a SKIPPED line) when the backend is unreachable
/// and not required.
macro_rules! test_db {
    () => {
        match {
            crate::observe::interested_everywhere();
            diesel_occ_tests::TestDb::<Conn>::create(concat!(module_path!(), "_", line!()))
        } {
            Some(db) => db,
            None => return,
        }
    };
}

/// [`test_db!`] for the async `Conn` in scope.
macro_rules! async_test_db {
    () => {
        match {
            crate::observe::interested_everywhere();
            diesel_occ_tests::AsyncTestDb::<Conn>::create(concat!(module_path!(), "_", line!()))
                .await
        } {
            Some(db) => db,
            None => return,
        }
    };
}

/// [`test_db!`] for the blocking connection of the server in scope (see
/// [`on_every_server!`]), in either flavour: a server's scenarios reach their database
/// through blocking connections too (`shared/server_counters.rs`'s `ServerDb`).
macro_rules! server_db {
    () => {{
        use super::Conn;
        test_db!()
    }};
}

/// [`test_db!`] for the example apps in scope (`app_backend`, see
/// [`on_every_app_backend!`]): the fresh database and a pool of the apps' connections on
/// it, after the apps have applied any migrations they embed beyond the harness's and
/// checked their token columns.
macro_rules! app_db {
    () => {{
        let db = test_db!();
        app_backend::migrate(db.url()).expect("migrate the example tables");
        let pool = app_backend::pool(db.url(), 16).expect("a pool");
        (db, pool)
    }};
}

/// Compiles a subject's scenario files once per backend: modules `postgres`, `mysql` and
/// `sqlite`, each giving the files below it `Conn` (blocking), `AsyncConn` and `schema`.
/// The blocking MySQL module needs the client library (feature `mysql`). It takes
/// `scenarios` (`scenarios.rs` as modules `blocking` and `asynchronous`, see the module
/// docs), the flavours' own files (`blocking`, `asynchronous`) and the support they
/// share: the subject's `entities` (`entities.rs`) and `setup` (`setup.rs`), or
/// `asynchronous_counters` and `server_counters` from `shared/`, each a module of that
/// name (`counters` for the shared ones). The backend modules are `#[path = "."]` here
/// and in the macros below: the files sit beside the subject's mod.rs.
macro_rules! on_every_backend {
    ($($flavour:ident),+) => {
        #[path = "."]
        pub(crate) mod postgres {
            #[allow(unused_imports)]
            use {
                diesel::pg::PgConnection as Conn, diesel_async::AsyncPgConnection as AsyncConn,
                diesel_occ_tests::schema::pg as schema,
            };
            $(on_every_backend!(@file $flavour);)+
        }
        #[path = "."]
        pub(crate) mod mysql {
            #[allow(unused_imports)]
            use {diesel_async::AsyncMysqlConnection as AsyncConn, diesel_occ_tests::schema::mysql as schema};
            #[cfg(feature = "mysql")]
            #[allow(unused_imports)]
            use diesel::mysql::MysqlConnection as Conn;
            $(on_every_backend!(@mysql $flavour);)+
        }
        #[path = "."]
        pub(crate) mod sqlite {
            #[allow(unused_imports)]
            use {
                diesel::sqlite::SqliteConnection as Conn, diesel_occ_tests::schema::sqlite as schema,
            };
            #[allow(unused_imports)]
            use diesel_async::sync_connection_wrapper::SyncConnectionWrapper;
            #[allow(dead_code)]
            type AsyncConn = SyncConnectionWrapper<diesel::sqlite::SqliteConnection>;
            $(on_every_backend!(@file $flavour);)+
        }
    };
    // One scenario file, written async, compiled as both flavours (see the module docs).
    (@file scenarios) => {
        on_every_backend!(@scenarios blocking, Conn, test_db,);
        on_every_backend!(@scenarios asynchronous, AsyncConn, async_test_db, .await);
    };
    (@scenarios $flavour:ident, $conn:ident, $db:ident, $($await:tt)*) => {
        // What `flavour_prelude!()` brings the scenario file in this flavour: the
        // backend's connection and `crate::flavours::$flavour`.
        macro_rules! flavour_prelude {
            () => {
                // By name, not by glob: a scenario file's `diesel::prelude::*` must not
                // bring Diesel's `Connection` and `RunQueryDsl` in the async flavour.
                #[allow(unused_imports)]
                use {
                    super::$conn as Conn,
                    crate::flavours::$flavour::{
                        Connection, InstallInFlavour as _, RaceInFlavour as _, RunQueryDsl,
                        SchemaCheckInFlavour as _, SimpleConnection, Spawned, TestConnection,
                        TestDb, flavour, insert_rows, joined, prelude::*, raw_sql, run_sql,
                        spawn, wait_until,
                    },
                };
                #[allow(unused_imports)]
                use crate::flavours::$flavour::occ::*;
                /// A fresh database for the calling test.
                #[allow(unused_macros)]
                macro_rules! db {
                    () => {
                        $db!()
                    };
                }
                /// A fresh database for the calling test and a connection to it.
                #[allow(unused_macros)]
                macro_rules! db_and_conn {
                    () => {{
                        let db = db!();
                        let conn = db.conn()$($await)*;
                        (db, conn)
                    }};
                }
            };
        }
        #[path = "scenarios.rs"]
        mod $flavour;
    };
    // Files in `shared/` that several subjects include, as module `counters`.
    (@file asynchronous_counters) => {
        #[path = "../shared/asynchronous_counters.rs"]
        mod counters;
    };
    (@file server_counters) => {
        #[path = "../shared/server_counters.rs"]
        mod counters;
    };
    // A file beside the subject's mod.rs (the backend module is `#[path = "."]`): a
    // flavour's own file (`blocking`, `asynchronous`) or the support the subject's
    // scenario files share (`entities`, `setup`: `use super::entities::...`).
    (@file $file:ident) => {
        mod $file;
    };
    (@mysql scenarios) => {
        #[cfg(feature = "mysql")]
        on_every_backend!(@scenarios blocking, Conn, test_db,);
        on_every_backend!(@scenarios asynchronous, AsyncConn, async_test_db, .await);
    };
    (@mysql blocking) => {
        #[cfg(feature = "mysql")]
        mod blocking;
    };
    (@mysql $flavour:ident) => {
        on_every_backend!(@file $flavour);
    };
}

/// [`on_every_backend!`] for the scenarios that need a server (sessions to kill, server
/// timeouts): modules `postgres` and `mysql`, each giving the files below it `Conn`
/// (blocking, a [`servers::Server`]), `AsyncConn` and `schema`. The MySQL module needs
/// the client library (feature `mysql`) for both flavours: the async scenarios kill and
/// lock through a blocking connection.
macro_rules! on_every_server {
    ($($flavour:ident),+) => {
        #[path = "."]
        pub(crate) mod postgres {
            #[allow(unused_imports)]
            use {
                diesel::pg::PgConnection as Conn, diesel_async::AsyncPgConnection as AsyncConn,
                diesel_occ_tests::schema::pg as schema,
            };
            $(on_every_backend!(@file $flavour);)+
        }
        #[cfg(feature = "mysql")]
        #[path = "."]
        pub(crate) mod mysql {
            #[allow(unused_imports)]
            use {
                diesel::mysql::MysqlConnection as Conn,
                diesel_async::AsyncMysqlConnection as AsyncConn,
                diesel_occ_tests::schema::mysql as schema,
            };
            $(on_every_backend!(@file $flavour);)+
        }
    };
}

/// Compiles the example apps' scenario files, one per app, once per backend: modules
/// `postgres`, `mysql` and `sqlite`, each giving the files below it `Conn` (blocking) and
/// `app_backend`, the apps compiled for that backend (`diesel_occ_examples::postgres`,
/// ...). The MySQL module needs feature `mysql`: the apps' MySQL module does.
macro_rules! on_every_app_backend {
    ($($app:ident),+) => {
        #[path = "."]
        pub(crate) mod postgres {
            use {diesel::pg::PgConnection as Conn, diesel_occ_examples::postgres as app_backend};
            $(mod $app;)+
        }
        #[cfg(feature = "mysql")]
        #[path = "."]
        pub(crate) mod mysql {
            use {diesel::mysql::MysqlConnection as Conn, diesel_occ_examples::mysql as app_backend};
            $(mod $app;)+
        }
        #[path = "."]
        pub(crate) mod sqlite {
            use {diesel::sqlite::SqliteConnection as Conn, diesel_occ_examples::sqlite as app_backend};
            $(mod $app;)+
        }
    };
}

mod flavours;
mod observe;
mod pools;
mod servers;

mod adopt_migrations;
mod batch;
mod bb8_pool;
mod bulk;
mod bypass_guard;
mod cancellation;
mod checked_writes;
mod client_token;
mod combine;
mod compile_errors;
mod diesel_models;
mod escalation;
mod example_apps;
mod force_increment;
mod http_handlers;
mod key_uniqueness;
mod killed_sessions;
mod model_based;
mod module_graph;
mod observability;
mod properties;
mod redacted_errors;
mod repository;
mod retry;
mod scale_out;
mod skipped_columns;
mod soft_delete;
mod sql_names;
mod statement_cache;
mod timeouts;
mod timestamp_precision;
mod tracked;
mod transactions;
mod transient_errors;
mod versionless;
mod xmin;
