//! Issue 39: each checked write compiles in a function generic over the entity and the
//! connection with ONE public bound of the trait that holds it, blocking.
use diesel::prelude::*;
use diesel_occ::prelude::*;
use diesel_occ::retry::Attempt;
use diesel_occ::{Error, Tracked, Upserted};

/// `EntityDsl`: the loads and the checked delete.
fn entity<T: EntityDsl<C>, C: Connection>(conn: &mut C, key: T::Key, etag: &T::Token) -> Result<(), Error> {
    let row = T::find(conn, key.clone())?;
    let checked = T::find_checked(conn, key, etag)?;
    drop(checked);
    row.delete_checked(conn)
}

/// `CheckedDsl`: the saves.
fn checked<T: CheckedDsl<C>, C: Connection, P: CheckedPredicate<T, C>>(
    row: &mut T,
    conn: &mut C,
    predicate: P,
) -> Result<(), Error> {
    row.save_checked(conn)?;
    row.save_checked_where(conn, predicate)
}

/// `VersionColumnDsl`: by key with a client's token, the token alone, the soft delete.
fn version_column<T, C, Changes, Marker>(
    entity: &mut T,
    conn: &mut C,
    key: T::Key,
    etag: &T::Token,
    changes: Changes,
    marker: Marker,
) -> Result<T::Token, Error>
where
    T: VersionColumnDsl<C>,
    C: Connection,
    Changes: CheckedChanges<T, C>,
    Marker: CheckedChanges<T, C>,
{
    let fresh = T::update_by_key(conn, key.clone(), etag, changes)?;
    entity.force_increment(conn)?;
    entity.soft_delete_checked(conn, marker)?;
    T::delete_by_key(conn, key, &fresh)?;
    Ok(fresh)
}

/// `InsertDsl`: the checked inserts and the upsert.
fn insert<T: InsertDsl<C>, C: Connection, F: InsertableForm<T, C>>(
    entity: &mut T,
    conn: &mut C,
    form: F,
) -> Result<Upserted<T::Token>, Error> {
    let token = entity.insert_checked(conn)?;
    T::insert_checked_from(conn, form)?;
    entity.upsert_checked(conn, Some(&token))
}

/// `BatchDsl`: a batch of saves.
fn batch<T, C: Connection>(entities: &mut [T], conn: &mut C) -> Result<(), Error>
where
    [T]: BatchDsl<C>,
{
    entities.save_all_checked(conn)
}

/// `TrackedDsl`: the saves of a tracked entity.
fn tracked<T: diesel_occ::Tracking, C: Connection>(
    entity: &mut Tracked<T>,
    conn: &mut C,
) -> Result<(), Error>
where
    Tracked<T>: TrackedDsl<C, Entity = T>,
{
    entity.save_checked(conn)?;
    let _merged = entity.save_merging(conn)?;
    let _theirs: T = entity.load_current(conn)?;
    entity.delete_checked(conn)
}

/// `AttemptDsl`: a retry attempt's read.
fn attempt<T: EntityDsl<C>, C: Connection>(attempt: &Attempt, conn: &mut C, key: T::Key) -> Result<T, Error>
where
    Attempt: AttemptDsl<C>,
{
    attempt.find::<T>(conn, key)
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

/// A derived entity meets every bound, on each backend's connection.
fn main() {
    let _ = entity::<Stock, SqliteConnection>;
    let _ = checked::<Stock, PgConnection, AtLeast>;
    let _ = version_column::<Stock, SqliteConnection, Available, Deleted>;
    let _ = insert::<Stock, SqliteConnection, NewStock>;
    let _ = batch::<Stock, PgConnection>;
    let _ = tracked::<Stock, SqliteConnection>;
    let _ = attempt::<Stock, SqliteConnection>;
}
