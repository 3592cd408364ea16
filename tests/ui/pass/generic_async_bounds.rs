//! Issue 39: each async checked write compiles in a function generic over the entity and
//! the connection with ONE public bound of the trait that holds it, and the futures
//! stay `Send` (a generic repository's methods can be spawned).
use diesel::prelude::*;
use diesel_async::AsyncConnection;
use diesel_async::AsyncPgConnection;
use diesel_occ::asynchronous::prelude::*;
use diesel_occ::retry::Attempt;
use diesel_occ::{Error, Tracked, Upserted};

fn send<F: std::future::Future + Send>(future: F) -> F {
    future
}

async fn entity<T: EntityDsl<C>, C: AsyncConnection>(conn: &mut C, key: T::Key, etag: &T::Token) -> Result<(), Error> {
    let row = send(T::find(conn, key.clone())).await?;
    let checked = send(T::find_checked(conn, key, etag)).await?;
    drop(checked);
    send(row.delete_checked(conn)).await
}

async fn checked<T: CheckedDsl<C>, C: AsyncConnection, P: CheckedPredicate<T, C>>(
    row: &mut T,
    conn: &mut C,
    predicate: P,
) -> Result<(), Error> {
    send(row.save_checked(conn)).await?;
    send(row.save_checked_where(conn, predicate)).await
}

async fn version_column<T, C, Changes, Marker>(
    entity: &mut T,
    conn: &mut C,
    key: T::Key,
    etag: &T::Token,
    changes: Changes,
    marker: Marker,
) -> Result<T::Token, Error>
where
    T: VersionColumnDsl<C>,
    C: AsyncConnection,
    Changes: CheckedChanges<T, C>,
    Marker: CheckedChanges<T, C>,
{
    let fresh = send(T::update_by_key(conn, key.clone(), etag, changes)).await?;
    send(entity.force_increment(conn)).await?;
    send(entity.soft_delete_checked(conn, marker)).await?;
    send(T::delete_by_key(conn, key, &fresh)).await?;
    Ok(fresh)
}

async fn insert<T: InsertDsl<C>, C: AsyncConnection, F: InsertableForm<T, C>>(
    entity: &mut T,
    conn: &mut C,
    form: F,
) -> Result<Upserted<T::Token>, Error> {
    let token = send(entity.insert_checked(conn)).await?;
    send(T::insert_checked_from(conn, form)).await?;
    send(entity.upsert_checked(conn, Some(&token))).await
}

async fn batch<T, C: AsyncConnection>(entities: &mut [T], conn: &mut C) -> Result<(), Error>
where
    [T]: BatchDsl<C>,
{
    entities.save_all_checked(conn).await
}

async fn tracked<T: diesel_occ::Tracking, C: AsyncConnection>(
    entity: &mut Tracked<T>,
    conn: &mut C,
) -> Result<(), Error>
where
    Tracked<T>: TrackedDsl<C, Entity = T>,
{
    entity.save_checked(conn).await?;
    let _merged = entity.save_merging(conn).await?;
    let _theirs: T = entity.load_current(conn).await?;
    entity.delete_checked(conn).await
}

async fn attempt<T: EntityDsl<C>, C: AsyncConnection>(attempt: &Attempt, conn: &mut C, key: T::Key) -> Result<T, Error>
where
    Attempt: AttemptDsl<C>,
{
    attempt.find::<T>(conn, key).await
}

diesel::table! {
    stock (id) {
        id -> Integer,
        available -> Integer,
        deleted -> Bool,
        version -> Integer,
    }
}

#[derive(Clone, Queryable, Selectable, Insertable, Versioned)]
#[diesel(table_name = stock)]
#[occ(track)]
struct Stock {
    id: i32,
    available: i32,
    deleted: bool,
    #[occ(version)]
    version: i32,
}

#[derive(Insertable)]
#[diesel(table_name = stock)]
struct NewStock {
    id: i32,
    available: i32,
    deleted: bool,
}

type Available = diesel::dsl::Eq<stock::available, i32>;
type Deleted = diesel::dsl::Eq<stock::deleted, bool>;
type AtLeast = diesel::dsl::GtEq<stock::available, i32>;

/// A derived entity meets every bound on an async connection.
fn main() {
    let _ = entity::<Stock, AsyncPgConnection>;
    let _ = checked::<Stock, AsyncPgConnection, AtLeast>;
    let _ = version_column::<Stock, AsyncPgConnection, Available, Deleted>;
    let _ = insert::<Stock, AsyncPgConnection, NewStock>;
    let _ = batch::<Stock, AsyncPgConnection>;
    let _ = tracked::<Stock, AsyncPgConnection>;
    let _ = attempt::<Stock, AsyncPgConnection>;
}
