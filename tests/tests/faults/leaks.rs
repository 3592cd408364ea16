//! No public error's `Display` or `Debug` shows SQL text, the bind values of other
//! columns or a connection string: every error type checked here was produced for real,
//! on the servers and on SQLite.

use std::error::Error as StdError;
use std::time::Duration;

use diesel::r2d2::{ConnectionManager, Pool};
use diesel_occ::retry::{self, RetryPolicy};
use diesel_occ::{Error, PoolErrorKind, UuidToken, VersionToken};

/// The password in the URLs below.
pub(crate) const PASSWORD: &str = "Pa55-s3cret";
/// A column value no error may show: it is not the key and not a token.
pub(crate) const VALUE: i32 = 918_273;
/// A text column value no error may show.
pub(crate) const LABEL: &str = "label-secret-7781";
/// What SQL text would look like (diesel renders upper-case keywords and quotes names).
const SQL: [&str; 9] = [
    "SELECT",
    "UPDATE ",
    "INSERT",
    "DELETE",
    "WHERE",
    "VALUES",
    "binds",
    "`",
    "\"counters\".",
];

/// Asserts that neither `Display` nor `Debug` (plain and pretty) of `error` contains
/// SQL text or any of `secrets`.
pub(crate) fn assert_no_leak(error: &dyn StdError, secrets: &[&str]) {
    let shown = [
        error.to_string(),
        format!("{error:?}"),
        format!("{error:#?}"),
    ];
    for text in &shown {
        for needle in secrets.iter().chain(SQL.iter()) {
            assert!(
                !text.contains(needle),
                "{needle:?} leaks through an error: {text}"
            );
        }
    }
    eprintln!("shown: {} | {:?}", shown[0], error);
}

fn policy() -> RetryPolicy {
    RetryPolicy::new()
        .max_attempts(2)
        .backoff(Duration::ZERO, Duration::ZERO)
}

/// Connects through the retry helper's closure source, the r2d2 pool and the deadpool
/// pool to `url` (which carries a password) where connecting fails; returns the errors.
fn failed_connects<C>(url: &str) -> Vec<Error>
where
    C: diesel::r2d2::R2D2Connection + diesel_occ::backend::LockingConnection + 'static,
{
    let mut errors = Vec::new();
    let source = || C::establish(url);
    let result: Result<(), Error> = retry::retry(&source, &policy(), |_, _| Ok(()));
    let error = result.expect_err("the connect fails");
    assert!(
        matches!(&error, Error::Pool(e) if e.kind() == PoolErrorKind::Connect),
        "{error:?}"
    );
    errors.push(error);

    let pool = Pool::builder()
        .max_size(1)
        .connection_timeout(Duration::from_millis(300))
        .build_unchecked(ConnectionManager::<C>::new(url));
    let result: Result<(), Error> = retry::retry(&pool, &policy(), |_, _| Ok(()));
    let error = result.expect_err("the pool cannot connect");
    assert!(
        matches!(&error, Error::Pool(e) if e.kind() == PoolErrorKind::Timeout),
        "{error:?}"
    );
    errors.push(error);
    errors
}

async fn failed_async_connect<C>(url: &str) -> Error
where
    C: diesel_async::pooled_connection::PoolableConnection
        + diesel_occ::asynchronous::AsyncLockingConnection
        + Send
        + 'static,
    diesel_async::pooled_connection::AsyncDieselConnectionManager<C>:
        deadpool::managed::Manager<Type = C, Error = diesel_async::pooled_connection::PoolError>,
{
    use diesel_async::pooled_connection::AsyncDieselConnectionManager;
    use diesel_async::pooled_connection::deadpool::Pool;

    let pool = Pool::builder(AsyncDieselConnectionManager::<C>::new(url))
        .max_size(1)
        .wait_timeout(Some(Duration::from_secs(5)))
        .runtime(deadpool::Runtime::Tokio1)
        .build()
        .expect("pool");
    let result: Result<(), Error> =
        diesel_occ::asynchronous::retry(&pool, &policy(), async |_, _| Ok(())).await;
    let error = result.expect_err("the pool cannot connect");
    assert!(matches!(&error, Error::Pool(_)), "{error:?}");
    error
}

/// PostgreSQL on a closed port (the local server trusts every password, so a wrong
/// one would connect).
#[tokio::test]
async fn a_failed_postgres_connect_does_not_show_the_url_or_its_password() {
    let url = format!("postgres://occ_leak:{PASSWORD}@127.0.0.1:1/test");
    let mut errors = failed_connects::<diesel::pg::PgConnection>(&url);
    errors.push(failed_async_connect::<diesel_async::AsyncPgConnection>(&url).await);
    for error in &errors {
        assert_no_leak(error, &[PASSWORD, &url, "occ_leak:"]);
        if let Error::Pool(pool) = error {
            assert_no_leak(pool, &[PASSWORD, &url]);
        }
    }
}

/// MariaDB refusing an unknown user with a password.
#[cfg(feature = "mysql")]
#[tokio::test]
async fn a_failed_mysql_connect_does_not_show_the_url_or_its_password() {
    let url = format!("mysql://occ_leak:{PASSWORD}@127.0.0.1:3306/test");
    let mut errors = failed_connects::<diesel::mysql::MysqlConnection>(&url);
    errors.push(failed_async_connect::<diesel_async::AsyncMysqlConnection>(&url).await);
    for error in &errors {
        assert_no_leak(error, &[PASSWORD, &url, "occ_leak:"]);
    }
}

#[test]
fn hostile_client_tokens_are_not_echoed() {
    let hostile = format!("<script>{PASSWORD}</script>");
    let error = Error::from(UuidToken::decode(&hostile).unwrap_err());
    assert_no_leak(&error, &[PASSWORD, "<script>"]);
    let error = Error::from(i64::decode(&"9".repeat(200)).unwrap_err());
    assert_no_leak(&error, &["99999999"]);
}

/// Errors the servers and SQLite produce: a unique violation and a check violation
/// carrying values, a conflict, retries exhausted, a missing row.
macro_rules! database_leaks {
    ($backend:ident, $conn:ty, $schema:path) => {
        mod $backend {
            use std::time::Duration;

            use diesel::prelude::*;
            use diesel_occ::prelude::*;
            use diesel_occ::retry::{self, RetryPolicy};
            use diesel_occ::{Error, UuidToken};
            use diesel_occ_tests::TestDb;

            use super::{LABEL, VALUE, assert_no_leak};
            use $schema as schema;

            type Conn = $conn;

            macro_rules! test_db {
                () => {
                    match TestDb::<Conn>::create(concat!(
                        "leaks_",
                        stringify!($backend),
                        "_",
                        line!()
                    )) {
                        Some(db) => db,
                        None => return,
                    }
                };
            }

            #[derive(Debug, Clone, PartialEq, Queryable, Selectable, Insertable, Versioned)]
            #[diesel(table_name = schema::counters)]
            struct Counter {
                id: i32,
                value: i32,
                label: Option<String>,
                #[occ(version)]
                version: i32,
            }

            #[derive(Debug, Clone, PartialEq, Queryable, Selectable, Insertable, Versioned)]
            #[diesel(table_name = schema::stock)]
            struct Stock {
                id: i32,
                available: i32,
                #[occ(version)]
                version: UuidToken,
            }

            fn secret_counter() -> Counter {
                Counter {
                    id: 1,
                    value: VALUE,
                    label: Some(LABEL.to_owned()),
                    version: 1,
                }
            }

            #[test]
            fn constraint_violations_do_not_show_the_values_or_the_statement() {
                let db = test_db!();
                let mut conn = db.conn();
                let counters = schema::counters::table;
                diesel::insert_into(counters)
                    .values(secret_counter())
                    .execute(&mut conn)
                    .expect("first insert");
                let duplicate = diesel::insert_into(counters)
                    .values(secret_counter())
                    .execute(&mut conn)
                    .expect_err("duplicate key");
                let error = Error::from(duplicate);
                assert_eq!(
                    error.to_string(),
                    "database error: unique violation",
                    "{error:?}"
                );
                assert_no_leak(&error, &[&VALUE.to_string(), LABEL]);

                let mut stock = Stock {
                    id: 7,
                    available: 5,
                    version: UuidToken::initial(),
                };
                diesel::insert_into(schema::stock::table)
                    .values(&stock)
                    .execute(&mut conn)
                    .expect("stock");
                stock.available = -VALUE;
                let error = stock
                    .save_checked(&mut conn)
                    .expect_err("CHECK (available >= 0)");
                assert!(matches!(error, Error::Database(_)), "{error:?}");
                assert_no_leak(&error, &[&VALUE.to_string()]);
            }

            #[test]
            fn conflicts_and_exhausted_retries_show_key_and_tokens_only() {
                let db = test_db!();
                let mut conn = db.conn();
                diesel::insert_into(schema::counters::table)
                    .values(secret_counter())
                    .execute(&mut conn)
                    .expect("seed");
                let mut mine: Counter = Counter::find(&mut conn, 1).expect("row");
                let mut theirs = mine.clone();
                theirs.value += 1;
                theirs.save_checked(&mut conn).expect("their save");
                mine.value -= 1;
                let error = mine.save_checked(&mut conn).expect_err("stale");
                assert!(error.is_conflict());
                assert_eq!(
                    error.to_string(),
                    "concurrency conflict on counters (id=1) during update: expected token 1, \
                     the row now holds token 2"
                );
                let values = [VALUE - 1, VALUE, VALUE + 1].map(|v| v.to_string());
                let secrets: Vec<&str> = values.iter().map(String::as_str).chain([LABEL]).collect();
                assert_no_leak(&error, &secrets);

                let policy = RetryPolicy::new()
                    .max_attempts(2)
                    .backoff(Duration::ZERO, Duration::ZERO);
                let source = || Conn::establish(db.url());
                let result: Result<(), Error> = retry::retry(&source, &policy, |conn, attempt| {
                    let mut mine: Counter = attempt.find(conn, 1)?;
                    let mut theirs = mine.clone();
                    theirs.label = Some(format!("{LABEL}-{}", attempt.number()));
                    theirs.save_checked(&mut db.conn())?;
                    mine.value -= 1;
                    mine.save_checked(conn)
                });
                let error = result.expect_err("every attempt conflicts");
                assert!(matches!(error, Error::RetriesExhausted(_)), "{error:?}");
                assert_no_leak(&error, &secrets);

                let missing = Counter::find(&mut conn, 424_242).expect_err("no such row");
                assert!(missing.is_not_found());
                assert_no_leak(&missing, &secrets);
            }
        }
    };
}

database_leaks!(
    postgres,
    diesel::pg::PgConnection,
    diesel_occ_tests::schema::pg
);
#[cfg(feature = "mysql")]
database_leaks!(
    mysql,
    diesel::mysql::MysqlConnection,
    diesel_occ_tests::schema::mysql
);
database_leaks!(
    sqlite,
    diesel::sqlite::SqliteConnection,
    diesel_occ_tests::schema::sqlite
);
