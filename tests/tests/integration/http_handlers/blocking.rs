//! The routes on blocking connections from an r2d2 pool: each handler runs its
//! database work in `spawn_blocking`, the write through `Preconditions::write`.

use std::time::Duration;

use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::{Extension, Json, Router};
use diesel::connection::SimpleConnection;
use diesel::prelude::*;
use diesel::r2d2::{ConnectionManager, PooledConnection};
use diesel_occ::prelude::*;
use diesel_occ::retry::RetryPolicy;
use diesel_occ_axum::{ETag, IfMatch, IfNoneMatch, Preconditions, Problem, Settings, Validators};
use diesel_occ_tests::TestDb;

use super::super::{Account, AccountPatch, SEED, Stamp, json, optional, token, validators};
use super::Conn;
use diesel_occ_tests::schema::pg::accounts;

type Db = TestDb<Conn>;
type Pool = diesel::r2d2::Pool<ConnectionManager<Conn>>;

/// Runs `work` where blocking is allowed.
async fn blocking<R: Send + 'static>(
    work: impl FnOnce() -> Result<R, Problem> + Send + 'static,
) -> Result<R, Problem> {
    tokio::task::spawn_blocking(work)
        .await
        .map_err(|_| Problem::internal())?
}

/// `Preconditions::write` in `spawn_blocking`, with the default retry policy, on the
/// `$entity` keyed `$id` as each attempt reads it; the closure gets it (`None`: absent).
macro_rules! write_row {
    ($preconditions:ident, $pool:ident, $entity:ty, $id:ident, |$conn:ident, $current:ident| $body:expr) => {
        blocking(move || {
            $preconditions.write(
                &$pool,
                &RetryPolicy::new(),
                |conn, attempt| attempt.find::<$entity>(conn, $id),
                |$conn, $current: Option<$entity>| $body,
            )
        })
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
async fn busy(test: &str) -> Option<((Db, PooledConnection<ConnectionManager<Conn>>), Router)> {
    let (db, pool) = seeded(test, 1).await?;
    let held = pool.get().expect("the only connection");
    let app = Router::new().route("/busy", get(checkout)).with_state(pool);
    Some(((db, held), app))
}

/// A fresh database holding the seed, and a pool of `size` connections to it that waits
/// 100 ms for a free one.
async fn seeded(test: &str, size: u32) -> Option<(Db, Pool)> {
    crate::observe::interested_everywhere();
    let db = Db::create(test)?;
    db.conn().batch_execute(SEED).expect("seed");
    let pool = Pool::builder()
        .max_size(size)
        .connection_timeout(Duration::from_millis(100))
        .build(ConnectionManager::<Conn>::new(db.url()))
        .expect("a pool");
    Some((db, pool))
}

async fn checkout(State(pool): State<Pool>) -> Result<(), Problem> {
    blocking(move || {
        let _conn = pool.get()?;
        Ok(())
    })
    .await
}

async fn show(
    State(pool): State<Pool>,
    Path(id): Path<i32>,
    preconditions: Preconditions,
) -> Result<Response, Problem> {
    let account = blocking(move || Ok(Account::find(&mut pool.get()?, id)?)).await?;
    Ok(preconditions.respond(validators(&account), || json(&account)))
}

async fn replace(
    State(pool): State<Pool>,
    Path(id): Path<i32>,
    preconditions: Preconditions,
    Json(balance): Json<i32>,
) -> Result<ETag, Problem> {
    let version = write_row!(preconditions, pool, Account, id, |conn, current| {
        let mut account = current.ok_or_else(|| diesel_occ::NotFound::of::<Account>(&id))?;
        account.balance = balance;
        account.save_checked(conn)?;
        Ok(account.version)
    });
    Ok(ETag::from_token(&version))
}

async fn patch(
    State(pool): State<Pool>,
    Path(id): Path<i32>,
    preconditions: Preconditions,
    Json(form): Json<AccountPatch>,
) -> Result<ETag, Problem> {
    let version = write_row!(preconditions, pool, Account, id, |conn, current| {
        let account = current.ok_or_else(|| diesel_occ::NotFound::of::<Account>(&id))?;
        Account::update_by_key(conn, id, &account.version, form.clone())
    });
    Ok(ETag::from_token(&version))
}

async fn remove(
    State(pool): State<Pool>,
    Path(id): Path<i32>,
    preconditions: Preconditions,
) -> Result<StatusCode, Problem> {
    write_row!(preconditions, pool, Account, id, |conn, current| {
        let account = current.ok_or_else(|| diesel_occ::NotFound::of::<Account>(&id))?;
        account.delete_checked(conn)
    });
    Ok(StatusCode::NO_CONTENT)
}

async fn create_if_absent(
    State(pool): State<Pool>,
    Path(id): Path<i32>,
    preconditions: Preconditions,
    Json(balance): Json<i32>,
) -> Result<(StatusCode, ETag), Problem> {
    let version = write_row!(preconditions, pool, Account, id, |conn, current| {
        match current {
            Some(mut account) => {
                account.balance = balance;
                account.save_checked(conn)?;
                Ok(account.version)
            }
            None => Account::new(id, balance).insert_checked(conn),
        }
    });
    Ok((StatusCode::CREATED, ETag::from_token(&version)))
}

async fn put_by_key(
    State(pool): State<Pool>,
    Path(id): Path<i32>,
    if_match: IfMatch,
    Json(balance): Json<i32>,
) -> Result<ETag, Problem> {
    let version = blocking(move || {
        let mut conn = pool.get()?;
        let expected = token(&if_match)?;
        let change = accounts::balance.eq(balance);
        Ok(Account::update_by_key(&mut conn, id, &expected, change)?)
    })
    .await?;
    Ok(ETag::from_token(&version))
}

async fn delete_by_key(
    State(pool): State<Pool>,
    Path(id): Path<i32>,
    if_match: IfMatch,
) -> Result<StatusCode, Problem> {
    blocking(move || {
        let mut conn = pool.get()?;
        Ok(Account::delete_by_key(&mut conn, id, &token(&if_match)?)?)
    })
    .await?;
    Ok(StatusCode::NO_CONTENT)
}

async fn soft_delete(
    State(pool): State<Pool>,
    Path(id): Path<i32>,
    if_match: IfMatch,
) -> Result<StatusCode, Problem> {
    blocking(move || {
        let mut conn = pool.get()?;
        let mut account = Account::find(&mut conn, id)?;
        account.version = token(&if_match)?;
        account.soft_delete_checked(&mut conn, accounts::deleted.eq(true))?;
        Ok(())
    })
    .await?;
    Ok(StatusCode::NO_CONTENT)
}

async fn upsert(
    State(pool): State<Pool>,
    Path(id): Path<i32>,
    if_match: IfMatch,
    Json(balance): Json<i32>,
) -> Result<ETag, Problem> {
    let version = blocking(move || {
        let mut account = Account::new(id, balance);
        let upserted = account.upsert_checked(&mut pool.get()?, Some(&token(&if_match)?))?;
        Ok(upserted.into_token())
    })
    .await?;
    Ok(ETag::from_token(&version))
}

async fn create(
    State(pool): State<Pool>,
    Json((id, balance)): Json<(i32, i32)>,
) -> Result<(StatusCode, ETag), Problem> {
    let version =
        blocking(move || Ok(Account::new(id, balance).insert_checked(&mut pool.get()?)?)).await?;
    Ok((StatusCode::CREATED, ETag::from_token(&version)))
}

async fn insert_if_none_match(
    State(pool): State<Pool>,
    Path(id): Path<i32>,
    if_none_match: IfNoneMatch,
    Json(balance): Json<i32>,
) -> Result<(StatusCode, ETag), Problem> {
    let version = blocking(move || {
        Account::new(id, balance)
            .insert_checked(&mut pool.get()?)
            .map_err(|error| if_none_match.problem(error))
    })
    .await?;
    Ok((StatusCode::CREATED, ETag::from_token(&version)))
}

async fn respond_to_a_put(
    State(pool): State<Pool>,
    Path(id): Path<i32>,
    if_none_match: IfNoneMatch,
) -> Result<Response, Problem> {
    let account = blocking(move || Ok(Account::find(&mut pool.get()?, id)?)).await?;
    Ok(if_none_match.respond(ETag::from_token(&account.version), || "written"))
}

async fn show_stamp(
    State(pool): State<Pool>,
    Path(id): Path<i32>,
    preconditions: Preconditions,
) -> Result<Response, Problem> {
    let stamp = blocking(move || Ok(Stamp::find(&mut pool.get()?, id)?)).await?;
    let validators = Validators::of(&stamp.updated_at);
    Ok(preconditions.respond(validators, || stamp.value.to_string()))
}

async fn replace_stamp(
    State(pool): State<Pool>,
    Path(id): Path<i32>,
    preconditions: Preconditions,
    Json(value): Json<i32>,
) -> Result<Response, Problem> {
    let stamp = write_row!(preconditions, pool, Stamp, id, |conn, current| {
        let mut stamp = current.ok_or_else(|| diesel_occ::NotFound::of::<Stamp>(&id))?;
        stamp.value = value;
        stamp.save_checked(conn)?;
        Ok(stamp)
    });
    Ok(Validators::of(&stamp.updated_at).into_response())
}

http_scenarios!(app, busy);
