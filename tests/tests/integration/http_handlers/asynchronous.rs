//! The routes on diesel-async connections from a deadpool pool, as an axum service
//! usually holds them.

use std::time::Duration;

use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::{Extension, Json, Router};
use diesel::prelude::*;
use diesel_async::SimpleAsyncConnection;
use diesel_async::pooled_connection::AsyncDieselConnectionManager;
use diesel_async::pooled_connection::deadpool::{Object, Pool};
use diesel_occ::asynchronous::prelude::*;
use diesel_occ::retry::RetryPolicy;
use diesel_occ_axum::{ETag, IfMatch, IfNoneMatch, Preconditions, Problem, Settings, Validators};
use diesel_occ_tests::AsyncTestDb;

use super::super::{Account, AccountPatch, SEED, Stamp, json, optional, token, validators};
use super::AsyncConn as Conn;
use diesel_occ_tests::schema::pg::accounts;

type Db = AsyncTestDb<Conn>;

/// `Preconditions::write_async` with the default retry policy, on the `$entity` keyed
/// `$id` as each attempt reads it; the closure gets it (`None`: absent).
macro_rules! write_row {
    ($preconditions:ident, $pool:ident, $entity:ty, $id:ident, |$conn:ident, $current:ident| $body:expr) => {
        $preconditions
            .write_async(
                &$pool,
                &RetryPolicy::new(),
                async |conn, attempt| attempt.find::<$entity>(conn, $id).await,
                async |$conn, $current: Option<$entity>| $body,
            )
            .await?
    };
}

/// The router over a fresh seeded database for `test`, `None` when the backend is skipped.
async fn app(test: &str, settings: Settings) -> Option<(Db, Router)> {
    let (db, pool) = seeded(test, 4).await?;
    let app = routes!().with_state(pool).layer(Extension(settings));
    Some((db, app))
}

/// A router whose pool's only connection is taken (held with the database): `GET /busy`
/// checks one out.
async fn busy(test: &str) -> Option<((Db, Object<Conn>), Router)> {
    let (db, pool) = seeded(test, 1).await?;
    let held = pool.get().await.expect("the only connection");
    let app = Router::new().route("/busy", get(checkout)).with_state(pool);
    Some(((db, held), app))
}

/// A fresh database holding the seed, and a pool of `size` connections to it that waits
/// 100 ms for a free one.
async fn seeded(test: &str, size: usize) -> Option<(Db, Pool<Conn>)> {
    crate::observe::interested_everywhere();
    let db = Db::create(test).await?;
    db.conn().await.batch_execute(SEED).await.expect("seed");
    let manager = AsyncDieselConnectionManager::<Conn>::new(db.url());
    let pool = Pool::builder(manager)
        .max_size(size)
        .wait_timeout(Some(Duration::from_millis(100)))
        .runtime(deadpool::Runtime::Tokio1)
        .build()
        .expect("a pool");
    Some((db, pool))
}

async fn checkout(State(pool): State<Pool<Conn>>) -> Result<(), Problem> {
    let _conn = pool.get().await?;
    Ok(())
}

async fn show(
    State(pool): State<Pool<Conn>>,
    Path(id): Path<i32>,
    preconditions: Preconditions,
) -> Result<Response, Problem> {
    let account = Account::find(&mut pool.get().await?, id).await?;
    Ok(preconditions.respond(validators(&account), || json(&account)))
}

async fn replace(
    State(pool): State<Pool<Conn>>,
    Path(id): Path<i32>,
    preconditions: Preconditions,
    Json(balance): Json<i32>,
) -> Result<ETag, Problem> {
    let version = write_row!(preconditions, pool, Account, id, |conn, current| {
        let mut account = current.ok_or_else(|| diesel_occ::NotFound::of::<Account>(&id))?;
        account.balance = balance;
        account.save_checked(conn).await?;
        Ok(account.version)
    });
    Ok(ETag::from_token(&version))
}

async fn patch(
    State(pool): State<Pool<Conn>>,
    Path(id): Path<i32>,
    preconditions: Preconditions,
    Json(form): Json<AccountPatch>,
) -> Result<ETag, Problem> {
    let version = write_row!(preconditions, pool, Account, id, |conn, current| {
        let account = current.ok_or_else(|| diesel_occ::NotFound::of::<Account>(&id))?;
        Account::update_by_key(conn, id, &account.version, form.clone()).await
    });
    Ok(ETag::from_token(&version))
}

async fn remove(
    State(pool): State<Pool<Conn>>,
    Path(id): Path<i32>,
    preconditions: Preconditions,
) -> Result<StatusCode, Problem> {
    write_row!(preconditions, pool, Account, id, |conn, current| {
        let account = current.ok_or_else(|| diesel_occ::NotFound::of::<Account>(&id))?;
        account.delete_checked(conn).await
    });
    Ok(StatusCode::NO_CONTENT)
}

async fn create_if_absent(
    State(pool): State<Pool<Conn>>,
    Path(id): Path<i32>,
    preconditions: Preconditions,
    Json(balance): Json<i32>,
) -> Result<(StatusCode, ETag), Problem> {
    let version = write_row!(preconditions, pool, Account, id, |conn, current| {
        match current {
            // `If-None-Match: *` let it through only when absent; a PUT without it
            // replaces.
            Some(mut account) => {
                account.balance = balance;
                account.save_checked(conn).await?;
                Ok(account.version)
            }
            None => Account::new(id, balance).insert_checked(conn).await,
        }
    });
    Ok((StatusCode::CREATED, ETag::from_token(&version)))
}

async fn put_by_key(
    State(pool): State<Pool<Conn>>,
    Path(id): Path<i32>,
    if_match: IfMatch,
    Json(balance): Json<i32>,
) -> Result<ETag, Problem> {
    let mut conn = pool.get().await?;
    let change = accounts::balance.eq(balance);
    let version = Account::update_by_key(&mut conn, id, &token(&if_match)?, change).await?;
    Ok(ETag::from_token(&version))
}

async fn delete_by_key(
    State(pool): State<Pool<Conn>>,
    Path(id): Path<i32>,
    if_match: IfMatch,
) -> Result<StatusCode, Problem> {
    Account::delete_by_key(&mut pool.get().await?, id, &token(&if_match)?).await?;
    Ok(StatusCode::NO_CONTENT)
}

async fn soft_delete(
    State(pool): State<Pool<Conn>>,
    Path(id): Path<i32>,
    if_match: IfMatch,
) -> Result<StatusCode, Problem> {
    let mut conn = pool.get().await?;
    let mut account = Account::find(&mut conn, id).await?;
    account.version = token(&if_match)?;
    account
        .soft_delete_checked(&mut conn, accounts::deleted.eq(true))
        .await?;
    Ok(StatusCode::NO_CONTENT)
}

async fn upsert(
    State(pool): State<Pool<Conn>>,
    Path(id): Path<i32>,
    if_match: IfMatch,
    Json(balance): Json<i32>,
) -> Result<ETag, Problem> {
    let mut account = Account::new(id, balance);
    let expected = token(&if_match)?;
    let upserted = account
        .upsert_checked(&mut pool.get().await?, Some(&expected))
        .await?;
    Ok(ETag::from_token(upserted.token()))
}

async fn create(
    State(pool): State<Pool<Conn>>,
    Json((id, balance)): Json<(i32, i32)>,
) -> Result<(StatusCode, ETag), Problem> {
    let version = Account::new(id, balance)
        .insert_checked(&mut pool.get().await?)
        .await?;
    Ok((StatusCode::CREATED, ETag::from_token(&version)))
}

async fn insert_if_none_match(
    State(pool): State<Pool<Conn>>,
    Path(id): Path<i32>,
    if_none_match: IfNoneMatch,
    Json(balance): Json<i32>,
) -> Result<(StatusCode, ETag), Problem> {
    let mut conn = pool.get().await?;
    let version = Account::new(id, balance)
        .insert_checked(&mut conn)
        .await
        .map_err(|error| if_none_match.problem(error))?;
    Ok((StatusCode::CREATED, ETag::from_token(&version)))
}

async fn respond_to_a_put(
    State(pool): State<Pool<Conn>>,
    Path(id): Path<i32>,
    if_none_match: IfNoneMatch,
) -> Result<Response, Problem> {
    let account = Account::find(&mut pool.get().await?, id).await?;
    Ok(if_none_match.respond(ETag::from_token(&account.version), || "written"))
}

async fn show_stamp(
    State(pool): State<Pool<Conn>>,
    Path(id): Path<i32>,
    preconditions: Preconditions,
) -> Result<Response, Problem> {
    let stamp = Stamp::find(&mut pool.get().await?, id).await?;
    let validators = Validators::of(&stamp.updated_at);
    Ok(preconditions.respond(validators, || stamp.value.to_string()))
}

async fn replace_stamp(
    State(pool): State<Pool<Conn>>,
    Path(id): Path<i32>,
    preconditions: Preconditions,
    Json(value): Json<i32>,
) -> Result<Response, Problem> {
    let stamp = write_row!(preconditions, pool, Stamp, id, |conn, current| {
        let mut stamp = current.ok_or_else(|| diesel_occ::NotFound::of::<Stamp>(&id))?;
        stamp.value = value;
        stamp.save_checked(conn).await?;
        Ok(stamp)
    });
    Ok(Validators::of(&stamp.updated_at).into_response())
}

http_scenarios!(app, busy);
