//! The articles repository: diesel-occ's async API on a diesel-async deadpool pool of
//! `AsyncPgConnection`, `AsyncMysqlConnection` (feature `mysql`) or
//! `SyncConnectionWrapper<SqliteConnection>`.

use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

use diesel::prelude::*;
use diesel_async::pooled_connection::deadpool::Pool;
use diesel_async::pooled_connection::{AsyncDieselConnectionManager, ManagerConfig};
use diesel_async::sync_connection_wrapper::SyncConnectionWrapper;
use diesel_async::{AsyncConnection, AsyncPgConnection, SimpleAsyncConnection};
use diesel_occ::asynchronous::prelude::*;
use diesel_occ::{Error as OccError, UuidToken};

use crate::db::Target;
use crate::schema::articles;

type SqliteAsync = SyncConnectionWrapper<diesel::sqlite::SqliteConnection>;

/// An article. `version` is the concurrency token, sent to clients as the ETag.
#[derive(Debug, Clone, PartialEq, Queryable, Selectable, Insertable, Versioned)]
#[diesel(table_name = articles)]
pub struct Article {
    /// The key: a UUID the service assigns.
    pub id: String,
    /// The title.
    pub title: String,
    /// The text.
    pub body: String,
    /// The concurrency token.
    #[occ(version)]
    pub version: UuidToken,
}

/// Awaited after a write's precondition passed and before its statement runs.
///
/// A seam for tests (a barrier here makes two requests race at the save) and for
/// tracing; `None` in production.
pub type BeforeSave = Arc<dyn Fn() -> Pin<Box<dyn Future<Output = ()> + Send>> + Send + Sync>;

/// Why the repository could not do what was asked.
#[derive(Debug, Clone, PartialEq)]
pub enum StoreError {
    /// No article with this id.
    NotFound,
    /// The client's token is already stale: nothing was written.
    PreconditionFailed {
        /// The token the row holds now.
        current: UuidToken,
    },
    /// The row changed between the precondition check and the save: nothing was written.
    Conflict {
        /// The token the row holds now.
        current: UuidToken,
    },
    /// The row was deleted between the precondition check and the save.
    Deleted,
    /// No connection could be had from the pool.
    Unavailable,
    /// The database failed. Logged server-side; clients see no detail.
    Internal,
}

impl fmt::Display for StoreError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            StoreError::NotFound => "no such article",
            StoreError::PreconditionFailed { .. } => "the client's token is stale",
            StoreError::Conflict { .. } => "the article changed while saving",
            StoreError::Deleted => "the article was deleted while saving",
            StoreError::Unavailable => "no database connection available",
            StoreError::Internal => "database failure",
        })
    }
}

impl std::error::Error for StoreError {}

impl StoreError {
    /// An error met before the save: reading the row, checking the client's token.
    fn before_save(error: OccError) -> StoreError {
        match error {
            OccError::NotFound(_) => StoreError::NotFound,
            OccError::Conflict(conflict) => match conflict.current::<UuidToken>() {
                Some(current) => StoreError::PreconditionFailed { current },
                None => StoreError::NotFound,
            },
            other => StoreError::other(other),
        }
    }

    /// An error met by the guarded write itself.
    fn at_save(error: OccError) -> StoreError {
        match error {
            OccError::Conflict(conflict) => match conflict.current::<UuidToken>() {
                Some(current) => StoreError::Conflict { current },
                None => StoreError::Deleted,
            },
            other => StoreError::other(other),
        }
    }

    fn other(error: OccError) -> StoreError {
        match &error {
            OccError::Pool(_) => {
                tracing::warn!(error = %error, "no database connection");
                StoreError::Unavailable
            }
            OccError::Database(db) => {
                // The driver's text stays in the server's log.
                tracing::error!(kind = db.kind(), detail = ?db.diesel_error(), "database failure");
                StoreError::Internal
            }
            _ => {
                tracing::error!(error = %error, "unexpected failure");
                StoreError::Internal
            }
        }
    }

    fn database(error: diesel::result::Error) -> StoreError {
        StoreError::other(error.into())
    }
}

enum Pools {
    Postgres(Pool<AsyncPgConnection>),
    #[cfg(feature = "mysql")]
    Mysql(Pool<diesel_async::AsyncMysqlConnection>),
    Sqlite(Pool<SqliteAsync>),
}

/// The articles, behind a pool of async connections.
pub struct ArticleStore {
    pools: Pools,
    before_save: Option<BeforeSave>,
}

impl fmt::Debug for ArticleStore {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let backend = match self.pools {
            Pools::Postgres(_) => "PostgreSQL",
            #[cfg(feature = "mysql")]
            Pools::Mysql(_) => "MySQL/MariaDB",
            Pools::Sqlite(_) => "SQLite",
        };
        f.debug_struct("ArticleStore")
            .field("backend", &backend)
            .finish_non_exhaustive()
    }
}

/// Runs `$body` with `$conn: &mut C` checked out of the store's pool, whatever the
/// backend: the body is compiled once per connection type, so it needs no bounds.
macro_rules! with_connection {
    ($store:expr, |$conn:ident| $body:expr) => {
        match &$store.pools {
            Pools::Postgres(pool) => {
                let mut object = pool.get().await.map_err(|_| StoreError::Unavailable)?;
                let $conn = &mut *object;
                $body
            }
            #[cfg(feature = "mysql")]
            Pools::Mysql(pool) => {
                let mut object = pool.get().await.map_err(|_| StoreError::Unavailable)?;
                let $conn = &mut *object;
                $body
            }
            Pools::Sqlite(pool) => {
                let mut object = pool.get().await.map_err(|_| StoreError::Unavailable)?;
                let $conn = &mut *object;
                $body
            }
        }
    };
}

/// Loads the article and checks it holds one of the client's tokens: the library's
/// `find_checked` for the usual single ETag, a membership test for an `If-Match` list.
macro_rules! load_matching {
    ($conn:ident, $id:expr, $expected:expr) => {{
        let id: String = $id.to_owned();
        match $expected {
            [one] => Article::find_checked($conn, id, one)
                .await
                .map_err(StoreError::before_save)?,
            many => {
                let article = Article::find($conn, id)
                    .await
                    .map_err(StoreError::before_save)?;
                if !many.contains(&article.version) {
                    return Err(StoreError::PreconditionFailed {
                        current: article.version,
                    });
                }
                article
            }
        }
    }};
}

impl ArticleStore {
    /// Migrates the database (with the blocking driver, once) and opens a pool of at
    /// most `max_size` async connections.
    pub async fn open(target: &Target, max_size: usize) -> crate::AppResult<ArticleStore> {
        let migrate = target.clone();
        tokio::task::spawn_blocking(move || migrate.connect_and_migrate().map(drop)).await??;
        let pools = match target {
            Target::Postgres(url) => Pools::Postgres(
                Pool::builder(AsyncDieselConnectionManager::new(url.as_str()))
                    .max_size(max_size)
                    .build()?,
            ),
            #[cfg(feature = "mysql")]
            Target::Mysql(url) => Pools::Mysql(
                Pool::builder(AsyncDieselConnectionManager::new(url.as_str()))
                    .max_size(max_size)
                    .build()?,
            ),
            #[cfg(not(feature = "mysql"))]
            Target::Mysql(_) => return Err(crate::db::DbError::MysqlNotBuilt.into()),
            Target::Sqlite(path) => {
                let mut config = ManagerConfig::<SqliteAsync>::default();
                config.custom_setup = Box::new(|url| {
                    let url = url.to_owned();
                    Box::pin(async move {
                        let mut conn = SqliteAsync::establish(&url).await?;
                        // Writers wait for the file lock instead of failing at once.
                        conn.batch_execute("PRAGMA busy_timeout = 10000")
                            .await
                            .map_err(diesel::ConnectionError::CouldntSetupConfiguration)?;
                        Ok(conn)
                    })
                });
                let path = path.to_str().ok_or("the SQLite path is not UTF-8")?;
                Pools::Sqlite(
                    Pool::builder(AsyncDieselConnectionManager::new_with_config(path, config))
                        .max_size(max_size)
                        .build()?,
                )
            }
        };
        Ok(ArticleStore {
            pools,
            before_save: None,
        })
    }

    /// Installs a hook awaited between a write's precondition check and its save.
    pub fn with_before_save(mut self, hook: BeforeSave) -> ArticleStore {
        self.before_save = Some(hook);
        self
    }

    async fn before_save(&self) {
        if let Some(hook) = &self.before_save {
            hook().await;
        }
    }

    /// Inserts an article with a fresh id and token.
    pub async fn create(&self, title: String, body: String) -> Result<Article, StoreError> {
        let article = Article {
            id: uuid::Uuid::new_v4().hyphenated().to_string(),
            title,
            body,
            version: UuidToken::initial(),
        };
        with_connection!(self, |conn| {
            diesel_async::RunQueryDsl::execute(
                diesel::insert_into(articles::table).values(article.clone()),
                conn,
            )
            .await
            .map_err(StoreError::database)?;
        });
        Ok(article)
    }

    /// Reads an article.
    pub async fn get(&self, id: &str) -> Result<Article, StoreError> {
        with_connection!(self, |conn| Article::find(conn, id.to_owned())
            .await
            .map_err(StoreError::before_save))
    }

    /// Edits an article for a client holding one of `expected`: the precondition is
    /// checked before the edit, and the save carries the token in its predicate.
    pub async fn update(
        &self,
        id: &str,
        expected: &[UuidToken],
        edit: impl FnOnce(&mut Article) + Send,
    ) -> Result<Article, StoreError> {
        with_connection!(self, |conn| {
            let mut article = load_matching!(conn, id, expected);
            edit(&mut article);
            self.before_save().await;
            article
                .save_checked(conn)
                .await
                .map_err(StoreError::at_save)?;
            Ok(article)
        })
    }

    /// Deletes an article for a client holding one of `expected`.
    pub async fn delete(&self, id: &str, expected: &[UuidToken]) -> Result<(), StoreError> {
        with_connection!(self, |conn| {
            let article = load_matching!(conn, id, expected);
            self.before_save().await;
            article
                .delete_checked(conn)
                .await
                .map_err(StoreError::at_save)
        })
    }

    /// Empties the articles table.
    pub async fn reset(&self) -> Result<(), StoreError> {
        with_connection!(self, |conn| {
            diesel_async::RunQueryDsl::execute(diesel::delete(articles::table), conn)
                .await
                .map_err(StoreError::database)?;
        });
        Ok(())
    }
}
