//! The routes' handlers, written once for both flavours. The flavour's file gives them
//! (`use super::*`) its diesel-occ prelude, `Pool`, `Db` and `seeded`, and the macros
//! `with_conn!` (its body on a pooled connection, in `spawn_blocking` when blocking),
//! `done!` (a call's result, awaited on diesel-async) and `write_row!`
//! (`Preconditions::write` or `write_async`).

use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::routing::{delete, get, post, put};
use axum::{Extension, Json, Router};
use diesel::prelude::*;
use diesel_occ_axum::{ETag, IfMatch, IfNoneMatch, Preconditions, Problem, Settings, Validators};
use diesel_occ_tests::schema::pg::accounts;

use super::*;
use crate::http_handlers::{Account, AccountPatch, Stamp, json, token, validators};

/// The router over a fresh seeded database for `test`, `None` when the backend is skipped.
pub(super) async fn app(test: &str, settings: Settings) -> Option<(Db, Router)> {
    let (db, pool) = seeded(test, 4).await?;
    let account = get(show).put(replace).patch(patch).delete(remove);
    let app = Router::new()
        .route("/accounts", post(create))
        .route("/accounts/{id}", account)
        .route("/create/{id}", put(create_if_absent))
        .route("/by-key/{id}", put(put_by_key).delete(delete_by_key))
        .route("/soft/{id}", delete(soft_delete))
        .route("/upsert/{id}", put(upsert))
        .route("/insert/{id}", put(insert_if_none_match))
        .route("/respond/{id}", put(respond_to_a_put))
        .route("/optional", get(optional))
        .route("/stamps/{id}", get(show_stamp).put(replace_stamp));
    Some((db, app.with_state(pool).layer(Extension(settings))))
}

/// A router whose pool's only connection is taken (held with the database): `GET /busy`
/// checks one out.
pub(super) async fn busy(test: &str) -> Option<(impl Sized, Router)> {
    let (db, pool) = seeded(test, 1).await?;
    let held = done!(pool.get()).expect("the only connection");
    let app = Router::new().route("/busy", get(checkout)).with_state(pool);
    Some(((db, held), app))
}

async fn optional(if_match: Option<IfMatch>) -> &'static str {
    if_match.map_or("absent", |_| "present")
}

async fn checkout(State(pool): State<Pool>) -> Result<(), Problem> {
    with_conn!(pool, |_conn| Ok(()));
    Ok(())
}

async fn show(
    State(pool): State<Pool>,
    Path(id): Path<i32>,
    preconditions: Preconditions,
) -> Result<Response, Problem> {
    let account = with_conn!(pool, |conn| Ok(done!(Account::find(conn, id))?));
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
        done!(account.save_checked(conn))?;
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
        let row = current.ok_or_else(|| diesel_occ::NotFound::of::<Account>(&id))?;
        done!(Account::update_by_key(conn, id, &row.version, form.clone()))
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
        done!(account.delete_checked(conn))
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
            // `If-None-Match: *` let it through only when absent; a PUT without it
            // replaces.
            Some(mut account) => {
                account.balance = balance;
                done!(account.save_checked(conn))?;
                Ok(account.version)
            }
            None => done!(Account::new(id, balance).insert_checked(conn)),
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
    let version = with_conn!(pool, |conn| {
        let (expected, change) = (token(&if_match)?, accounts::balance.eq(balance));
        Ok(done!(Account::update_by_key(conn, id, &expected, change))?)
    });
    Ok(ETag::from_token(&version))
}

async fn delete_by_key(
    State(pool): State<Pool>,
    Path(id): Path<i32>,
    if_match: IfMatch,
) -> Result<StatusCode, Problem> {
    with_conn!(pool, |conn| {
        Ok(done!(Account::delete_by_key(conn, id, &token(&if_match)?))?)
    });
    Ok(StatusCode::NO_CONTENT)
}

async fn soft_delete(
    State(pool): State<Pool>,
    Path(id): Path<i32>,
    if_match: IfMatch,
) -> Result<StatusCode, Problem> {
    with_conn!(pool, |conn| {
        let mut account = done!(Account::find(conn, id))?;
        account.version = token(&if_match)?;
        let deleted = accounts::deleted.eq(true);
        Ok(done!(account.soft_delete_checked(conn, deleted))?)
    });
    Ok(StatusCode::NO_CONTENT)
}

async fn upsert(
    State(pool): State<Pool>,
    Path(id): Path<i32>,
    if_match: IfMatch,
    Json(balance): Json<i32>,
) -> Result<ETag, Problem> {
    let version = with_conn!(pool, |conn| {
        let mut account = Account::new(id, balance);
        let upserted = done!(account.upsert_checked(conn, Some(&token(&if_match)?)))?;
        Ok(upserted.into_token())
    });
    Ok(ETag::from_token(&version))
}

async fn create(
    State(pool): State<Pool>,
    Json((id, balance)): Json<(i32, i32)>,
) -> Result<(StatusCode, ETag), Problem> {
    let mut account = Account::new(id, balance);
    let version = with_conn!(pool, |conn| Ok(done!(account.insert_checked(conn))?));
    Ok((StatusCode::CREATED, ETag::from_token(&version)))
}

async fn insert_if_none_match(
    State(pool): State<Pool>,
    Path(id): Path<i32>,
    if_none_match: IfNoneMatch,
    Json(balance): Json<i32>,
) -> Result<(StatusCode, ETag), Problem> {
    let mut account = Account::new(id, balance);
    let version = with_conn!(pool, |conn| {
        done!(account.insert_checked(conn)).map_err(|error| if_none_match.problem(error))
    });
    Ok((StatusCode::CREATED, ETag::from_token(&version)))
}

async fn respond_to_a_put(
    State(pool): State<Pool>,
    Path(id): Path<i32>,
    if_none_match: IfNoneMatch,
) -> Result<Response, Problem> {
    let account = with_conn!(pool, |conn| Ok(done!(Account::find(conn, id))?));
    Ok(if_none_match.respond(ETag::from_token(&account.version), || "written"))
}

async fn show_stamp(
    State(pool): State<Pool>,
    Path(id): Path<i32>,
    preconditions: Preconditions,
) -> Result<Response, Problem> {
    let stamp = with_conn!(pool, |conn| Ok(done!(Stamp::find(conn, id))?));
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
        done!(stamp.save_checked(conn))?;
        Ok(stamp)
    });
    Ok(Validators::of(&stamp.updated_at).into_response())
}
