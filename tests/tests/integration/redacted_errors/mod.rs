//! No public error's `Display` or `Debug` shows SQL text, the bind values of other
//! columns or a connection string: every error type checked here was produced for real,
//! on the servers and on SQLite. Failed connections and hostile client tokens here, the
//! errors a database produces in `blocking.rs`.

use std::error::Error as StdError;
use std::time::Duration;

use diesel::r2d2::{ConnectionManager, Pool};
use diesel_occ::blocking;
use diesel_occ::retry::RetryPolicy;
use diesel_occ::{Error, PoolErrorKind, UuidToken, VersionToken};

/// The password in the URLs below.
const PASSWORD: &str = "Pa55-s3cret";
/// A column value no error may show: it is not the key and not a token.
const VALUE: i32 = 918_273;
/// A text column value no error may show.
const LABEL: &str = "label-secret-7781";
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
fn assert_no_leak(error: &dyn StdError, secrets: &[&str]) {
    let shown = [
        error.to_string(),
        format!("{error:?}"),
        format!("{error:#?}"),
    ];
    for text in &shown {
        for needle in secrets.iter().chain(SQL.iter()) {
            assert!(!text.contains(needle), "{needle:?} leaks: {text}");
        }
    }
    eprintln!("shown: {} | {:?}", shown[0], error);
}

/// Two attempts, no backoff.
fn policy() -> RetryPolicy {
    RetryPolicy::new()
        .max_attempts(2)
        .backoff(Duration::ZERO, Duration::ZERO)
}

/// Connects through the retry helper's closure source, the r2d2 pool and the deadpool
/// pool to `url` (which carries a password) where connecting fails; returns the errors.
fn failed_connects<C>(url: &str) -> Vec<Error>
where
    C: diesel::r2d2::R2D2Connection + diesel_occ::blocking::LockingConnection + 'static,
{
    let mut errors = Vec::new();
    let source = || C::establish(url);
    let result: Result<(), Error> = blocking::retry(&source, &policy(), |_, _| Ok(()));
    let error = result.expect_err("the connect fails");
    assert_eq!(pool_kind(&error), Some(PoolErrorKind::Connect), "{error:?}");
    errors.push(error);

    let pool = Pool::builder()
        .max_size(1)
        .connection_timeout(Duration::from_millis(300))
        .build_unchecked(ConnectionManager::<C>::new(url));
    let result: Result<(), Error> = blocking::retry(&pool, &policy(), |_, _| Ok(()));
    let error = result.expect_err("the pool cannot connect");
    assert_eq!(pool_kind(&error), Some(PoolErrorKind::Timeout), "{error:?}");
    errors.push(error);
    errors
}

fn pool_kind(error: &Error) -> Option<PoolErrorKind> {
    let Error::Pool(pool) = error else {
        return None;
    };
    Some(pool.kind())
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

on_every_backend!(blocking);
