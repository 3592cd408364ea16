//! The model-based (state-machine) test on async connections (diesel-async; SQLite through
//! `SyncConnectionWrapper`): the same model, programs and checks as the blocking
//! flavour, run by an executor that awaits each call on a runtime of its own.

use std::collections::BTreeMap;
use std::future::Future;
use std::marker::PhantomData;
use std::panic::{self, AssertUnwindSafe};
use std::time::Duration;

use diesel::prelude::{ExpressionMethods, QueryDsl, SelectableHelper};
use diesel_async::RunQueryDsl;
use diesel_occ::asynchronous::AsyncConnectionSource;
use diesel_occ::asynchronous::prelude::*;
use diesel_occ::retry::RetryPolicy;
use diesel_occ::{Error, PoolError, SaveOutcome, Tracked, Upserted};
use diesel_occ_tests::{AsyncTestConnection, AsyncTestDb, Backend};

use super::super::model::{End, Inner, Key, Merge, Setup};
use super::super::runner::{self, Entity, Executor, PlannedPanic, Run, Seen};
use super::entities::{Counter, NewCounter, NewStamp, Stamp};
use super::{AsyncConn as Conn, schema};

/// The writes of one entity type on `Conn`, as the executor awaits them. The futures
/// are `Send`, as the async `transaction` requires of its closure's.
trait Store: Entity {
    fn clear(conn: &mut Conn) -> impl Future<Output = ()> + Send;
    fn seed(conn: &mut Conn, rows: &[(Key, i32, Self::Token)]) -> impl Future<Output = ()> + Send;
    fn all(conn: &mut Conn) -> impl Future<Output = Vec<Self>> + Send;
    fn fetch(conn: &mut Conn, key: Key) -> impl Future<Output = Result<Self, Error>> + Send;
    fn checked_save(&mut self, conn: &mut Conn) -> impl Future<Output = Result<(), Error>> + Send;
    fn checked_delete(&self, conn: &mut Conn) -> impl Future<Output = Result<(), Error>> + Send;
    fn by_key_update(
        conn: &mut Conn,
        key: Key,
        expected: &Self::Token,
        value: i32,
    ) -> impl Future<Output = Result<Self::Token, Error>> + Send;
    fn by_key_delete(
        conn: &mut Conn,
        key: Key,
        expected: &Self::Token,
    ) -> impl Future<Output = Result<(), Error>> + Send;
    fn checked_insert(
        &mut self,
        conn: &mut Conn,
    ) -> impl Future<Output = Result<Self::Token, Error>> + Send;
    fn checked_insert_from(
        conn: &mut Conn,
        key: Key,
        value: i32,
    ) -> impl Future<Output = Result<Self::Token, Error>> + Send;
    /// `save_checked_where` under `value >= floor`.
    fn checked_save_where(
        &mut self,
        conn: &mut Conn,
        floor: i32,
    ) -> impl Future<Output = Result<(), Error>> + Send;
    fn checked_upsert(
        &mut self,
        conn: &mut Conn,
        expected: Option<&Self::Token>,
    ) -> impl Future<Output = Result<Upserted<Self::Token>, Error>> + Send;
    fn increment(&mut self, conn: &mut Conn) -> impl Future<Output = Result<(), Error>> + Send;
    fn batch_save(
        batch: &mut [Self],
        conn: &mut Conn,
    ) -> impl Future<Output = Result<(), Error>> + Send;
    fn bulk(
        conn: &mut Conn,
        keys: &[Key],
        value: i32,
    ) -> impl Future<Output = Result<usize, Error>> + Send;
    fn soft_delete(&mut self, conn: &mut Conn) -> impl Future<Output = Result<(), Error>> + Send;
    fn tracked_save(
        &mut self,
        conn: &mut Conn,
        value: i32,
        merging: bool,
    ) -> impl Future<Output = Result<Option<Merge>, Error>> + Send;
    fn track(self) -> Tracked<Self>;
    fn untrack(tracked: Tracked<Self>) -> Self;
    fn tracked_edit(tracked: &mut Tracked<Self>) -> &mut Self;
    fn tracked_checked_save(
        tracked: &mut Tracked<Self>,
        conn: &mut Conn,
    ) -> impl Future<Output = Result<(), Error>> + Send;
    fn tracked_checked_delete(
        tracked: &Tracked<Self>,
        conn: &mut Conn,
    ) -> impl Future<Output = Result<(), Error>> + Send;
}

macro_rules! store {
    ($entity:ident, $new:ident, $table:ident) => {
        impl Store for $entity {
            async fn clear(conn: &mut Conn) {
                diesel::delete(schema::$table::table)
                    .execute(conn)
                    .await
                    .expect("empty the table");
            }

            async fn seed(conn: &mut Conn, rows: &[(Key, i32, Self::Token)]) {
                for (key, value, token) in rows {
                    diesel::insert_into(schema::$table::table)
                        .values(Self::with_token(*key, *value, token.clone()))
                        .execute(conn)
                        .await
                        .expect("seed a row");
                }
            }

            async fn all(conn: &mut Conn) -> Vec<Self> {
                schema::$table::table
                    .select(Self::as_select())
                    .load(conn)
                    .await
                    .expect("the rows")
            }

            async fn fetch(conn: &mut Conn, key: Key) -> Result<Self, Error> {
                <Self as EntityDsl<Conn>>::find(conn, key).await
            }

            async fn checked_save(&mut self, conn: &mut Conn) -> Result<(), Error> {
                self.save_checked(conn).await
            }

            async fn checked_delete(&self, conn: &mut Conn) -> Result<(), Error> {
                self.delete_checked(conn).await
            }

            async fn by_key_update(
                conn: &mut Conn,
                key: Key,
                expected: &Self::Token,
                value: i32,
            ) -> Result<Self::Token, Error> {
                <Self as VersionColumnDsl<Conn>>::update_by_key(
                    conn,
                    key,
                    expected,
                    schema::$table::value.eq(value),
                )
                .await
            }

            async fn by_key_delete(
                conn: &mut Conn,
                key: Key,
                expected: &Self::Token,
            ) -> Result<(), Error> {
                <Self as VersionColumnDsl<Conn>>::delete_by_key(conn, key, expected).await
            }

            async fn checked_insert(&mut self, conn: &mut Conn) -> Result<Self::Token, Error> {
                self.insert_checked(conn).await
            }

            async fn checked_insert_from(
                conn: &mut Conn,
                key: Key,
                value: i32,
            ) -> Result<Self::Token, Error> {
                <Self as InsertDsl<Conn>>::insert_checked_from(conn, $new { id: key, value }).await
            }

            async fn checked_save_where(&mut self, conn: &mut Conn, floor: i32) -> Result<(), Error> {
                self.save_checked_where(conn, schema::$table::value.ge(floor))
                    .await
            }

            async fn checked_upsert(
                &mut self,
                conn: &mut Conn,
                expected: Option<&Self::Token>,
            ) -> Result<Upserted<Self::Token>, Error> {
                self.upsert_checked(conn, expected).await
            }

            async fn increment(&mut self, conn: &mut Conn) -> Result<(), Error> {
                self.force_increment(conn).await
            }

            async fn batch_save(batch: &mut [Self], conn: &mut Conn) -> Result<(), Error> {
                batch.save_all_checked(conn).await
            }

            async fn bulk(conn: &mut Conn, keys: &[Key], value: i32) -> Result<usize, Error> {
                use schema::$table::dsl;
                Ok(Self::bulk_update(
                    dsl::$table.filter(dsl::id.eq_any(keys)),
                    dsl::value.eq(value),
                )
                .execute(conn)
                .await?)
            }

            async fn soft_delete(&mut self, conn: &mut Conn) -> Result<(), Error> {
                self.soft_delete_checked(conn, schema::$table::value.eq(-1))
                    .await
            }

            async fn tracked_save(
                &mut self,
                conn: &mut Conn,
                value: i32,
                merging: bool,
            ) -> Result<Option<Merge>, Error> {
                let mut tracked = Tracked::new(self.clone());
                Entity::set_value(tracked.edit(), value);
                let result = if merging {
                    tracked.save_merging(conn).await.map(|outcome| {
                        Some(match outcome {
                            SaveOutcome::Saved => Merge::Saved,
                            SaveOutcome::Merged { .. } => Merge::Merged,
                            SaveOutcome::Overlap(_) => Merge::Overlap,
                        })
                    })
                } else {
                    TrackedDsl::save_checked(&mut tracked, conn)
                        .await
                        .map(|()| None)
                };
                *self = tracked.into_inner();
                result
            }

            fn track(self) -> Tracked<Self> {
                Tracked::new(self)
            }

            fn untrack(tracked: Tracked<Self>) -> Self {
                tracked.into_inner()
            }

            fn tracked_edit(tracked: &mut Tracked<Self>) -> &mut Self {
                tracked.edit()
            }

            async fn tracked_checked_save(
                tracked: &mut Tracked<Self>,
                conn: &mut Conn,
            ) -> Result<(), Error> {
                TrackedDsl::save_checked(tracked, conn).await
            }

            async fn tracked_checked_delete(
                tracked: &Tracked<Self>,
                conn: &mut Conn,
            ) -> Result<(), Error> {
                TrackedDsl::delete_checked(tracked, conn).await
            }
        }
    };
}

store!(Counter, NewCounter, counters);
store!(Stamp, NewStamp, stamped_seconds);

/// A client's connection as the retry helper's source: every attempt gets it.
struct Borrowed<'c>(tokio::sync::Mutex<&'c mut Conn>);

impl AsyncConnectionSource for Borrowed<'_> {
    type Connection = Conn;
    type Pooled<'a>
        = tokio::sync::MappedMutexGuard<'a, Conn>
    where
        Self: 'a;

    async fn checkout(&self) -> Result<Self::Pooled<'_>, PoolError> {
        Ok(tokio::sync::MutexGuard::map(self.0.lock().await, |conn| {
            &mut **conn
        }))
    }
}

/// Three attempts, no backoff: enough to see whether a conflict is retried.
fn policy() -> RetryPolicy {
    RetryPolicy::new()
        .max_attempts(3)
        .backoff(Duration::ZERO, Duration::ZERO)
}

/// One connection per client, each call awaited on the executor's runtime.
struct Asynchronous<E> {
    runtime: tokio::runtime::Runtime,
    conns: Vec<Conn>,
    entity: PhantomData<E>,
}

/// What a transaction's closure is given: the entity, or a tracked one.
trait Passed<E: Store>: Send {
    fn edit_value(&mut self, value: i32);
    fn save(&mut self, conn: &mut Conn) -> impl Future<Output = Result<(), Error>> + Send;
    fn delete(&self, conn: &mut Conn) -> impl Future<Output = Result<(), Error>> + Send;
    /// `*self = found` (tracked from now).
    fn replace(&mut self, found: E);
}

impl<E: Store> Passed<E> for E {
    fn edit_value(&mut self, value: i32) {
        Entity::set_value(self, value);
    }

    fn save(&mut self, conn: &mut Conn) -> impl Future<Output = Result<(), Error>> + Send {
        self.checked_save(conn)
    }

    fn delete(&self, conn: &mut Conn) -> impl Future<Output = Result<(), Error>> + Send {
        self.checked_delete(conn)
    }

    fn replace(&mut self, found: E) {
        *self = found;
    }
}

impl<E: Store> Passed<E> for Tracked<E> {
    fn edit_value(&mut self, value: i32) {
        Entity::set_value(E::tracked_edit(self), value);
    }

    fn save(&mut self, conn: &mut Conn) -> impl Future<Output = Result<(), Error>> + Send {
        E::tracked_checked_save(self, conn)
    }

    fn delete(&self, conn: &mut Conn) -> impl Future<Output = Result<(), Error>> + Send {
        E::tracked_checked_delete(self, conn)
    }

    fn replace(&mut self, found: E) {
        *self = found.track();
    }
}

/// A step of a transaction's closure; `Err` ends the closure.
async fn step<E: Store, P: Passed<E>>(
    conn: &mut Conn,
    entity: &mut P,
    step: &Inner,
    seen: &mut Vec<Seen<E::Token>>,
) -> Result<(), Error> {
    let result = match *step {
        Inner::Save { value } | Inner::CatchConflict { value } => {
            entity.edit_value(value);
            entity.save(conn).await.map(|()| Seen::Done)
        }
        Inner::Delete => entity.delete(conn).await.map(|()| Seen::Done),
        Inner::Insert { key, value } | Inner::CatchTaken { key, value } => E::create(key, value)
            .checked_insert(conn)
            .await
            .map(Seen::Token),
        Inner::Replace { key } => E::fetch(conn, key).await.map(|found| {
            entity.replace(found);
            Seen::Done
        }),
        Inner::CatchRefused => diesel::sql_query("SELECT * FROM occ_no_such_table")
            .execute(conn)
            .await
            .map(|_| Seen::Done)
            .map_err(Error::from),
    };
    match result {
        Ok(done) => {
            seen.push(done);
            Ok(())
        }
        Err(error) => {
            seen.push(Seen::error(&error));
            if runner::caught(step, &error) {
                Ok(())
            } else {
                Err(error)
            }
        }
    }
}

impl<E: Store> Executor<E> for Asynchronous<E>
where
    for<'a> &'a mut E: diesel_occ::Restore,
    for<'a> &'a mut Tracked<E>: diesel_occ::Restore,
{
    fn reset(&mut self, rows: &[(Key, i32, E::Token)]) {
        let conn = &mut self.conns[0];
        self.runtime.block_on(async {
            E::clear(conn).await;
            E::seed(conn, rows).await;
        });
    }

    fn rows(&mut self) -> BTreeMap<Key, (i32, E::Token)> {
        self.runtime
            .block_on(E::all(&mut self.conns[0]))
            .into_iter()
            .map(|row| {
                let (key, value, token) = row.parts();
                (key, (value, token.clone()))
            })
            .collect()
    }

    fn find(&mut self, client: usize, key: Key) -> Result<E, Error> {
        self.runtime
            .block_on(E::fetch(&mut self.conns[client], key))
    }

    fn save(&mut self, client: usize, entity: &mut E) -> Result<(), Error> {
        self.runtime
            .block_on(entity.checked_save(&mut self.conns[client]))
    }

    fn delete(&mut self, client: usize, entity: &E) -> Result<(), Error> {
        self.runtime
            .block_on(entity.checked_delete(&mut self.conns[client]))
    }

    fn update_by_key(
        &mut self,
        client: usize,
        key: Key,
        expected: &E::Token,
        value: i32,
    ) -> Result<E::Token, Error> {
        self.runtime.block_on(E::by_key_update(
            &mut self.conns[client],
            key,
            expected,
            value,
        ))
    }

    fn delete_by_key(&mut self, client: usize, key: Key, expected: &E::Token) -> Result<(), Error> {
        self.runtime
            .block_on(E::by_key_delete(&mut self.conns[client], key, expected))
    }

    fn insert(&mut self, client: usize, entity: &mut E) -> Result<E::Token, Error> {
        self.runtime
            .block_on(entity.checked_insert(&mut self.conns[client]))
    }

    fn insert_from(&mut self, client: usize, key: Key, value: i32) -> Result<E::Token, Error> {
        self.runtime
            .block_on(E::checked_insert_from(&mut self.conns[client], key, value))
    }

    fn save_where(&mut self, client: usize, entity: &mut E, floor: i32) -> Result<(), Error> {
        self.runtime
            .block_on(entity.checked_save_where(&mut self.conns[client], floor))
    }

    fn upsert(
        &mut self,
        client: usize,
        entity: &mut E,
        expected: Option<&E::Token>,
    ) -> Result<Upserted<E::Token>, Error> {
        self.runtime
            .block_on(entity.checked_upsert(&mut self.conns[client], expected))
    }

    fn force_increment(&mut self, client: usize, entity: &mut E) -> Result<(), Error> {
        self.runtime
            .block_on(entity.increment(&mut self.conns[client]))
    }

    fn save_all(&mut self, client: usize, entities: &mut [E]) -> Result<(), Error> {
        self.runtime
            .block_on(E::batch_save(entities, &mut self.conns[client]))
    }

    fn bulk_update(&mut self, client: usize, keys: &[Key], value: i32) -> Result<usize, Error> {
        self.runtime
            .block_on(E::bulk(&mut self.conns[client], keys, value))
    }

    fn soft_delete(&mut self, client: usize, entity: &mut E) -> Result<(), Error> {
        self.runtime
            .block_on(entity.soft_delete(&mut self.conns[client]))
    }

    fn retry_by_key(
        &mut self,
        client: usize,
        key: Key,
        expected: &E::Token,
        value: i32,
    ) -> Result<E::Token, Error> {
        let source = Borrowed(tokio::sync::Mutex::new(&mut self.conns[client]));
        let policy = policy();
        self.runtime.block_on(diesel_occ::asynchronous::retry(
            &source,
            &policy,
            async |conn, _| E::by_key_update(conn, key, expected, value).await,
        ))
    }

    fn retry_save(&mut self, client: usize, key: Key, value: i32) -> Result<E, Error> {
        let source = Borrowed(tokio::sync::Mutex::new(&mut self.conns[client]));
        let policy = policy();
        self.runtime.block_on(diesel_occ::asynchronous::retry(
            &source,
            &policy,
            async |conn, _| {
                let mut entity = E::fetch(conn, key).await?;
                entity.set_value(value);
                entity.checked_save(conn).await?;
                Ok(entity)
            },
        ))
    }

    fn tracked_save(
        &mut self,
        client: usize,
        entity: &mut E,
        value: i32,
        merging: bool,
    ) -> Result<Option<Merge>, Error> {
        self.runtime
            .block_on(entity.tracked_save(&mut self.conns[client], value, merging))
    }

    fn transaction(
        &mut self,
        client: usize,
        entity: &mut E,
        steps: &[Inner],
        end: End,
        tracked: bool,
    ) -> Seen<E::Token> {
        let conn = &mut self.conns[client];
        if tracked {
            let mut passed = entity.clone().track();
            let seen = transaction(&self.runtime, conn, &mut passed, steps, end);
            *entity = E::untrack(passed);
            seen
        } else {
            transaction(&self.runtime, conn, entity, steps, end)
        }
    }
}

/// `diesel_occ::asynchronous::transaction` with `passed` as its single `&mut` entity.
fn transaction<E: Store, P: Passed<E>>(
    runtime: &tokio::runtime::Runtime,
    conn: &mut Conn,
    passed: &mut P,
    steps: &[Inner],
    end: End,
) -> Seen<E::Token>
where
    for<'a> &'a mut P: diesel_occ::Restore + Send,
{
    let mut seen = Vec::new();
    let called = panic::catch_unwind(AssertUnwindSafe(|| {
        runtime.block_on(diesel_occ::asynchronous::transaction(
            conn,
            &mut *passed,
            async |conn, passed| {
                for inner in steps {
                    step(conn, &mut **passed, inner, &mut seen).await?;
                }
                match end {
                    End::Commit => Ok(()),
                    End::Fail => Err(runner::rollback()),
                    End::Panic => panic::panic_any(PlannedPanic),
                }
            },
        ))
    }));
    runner::outcome(called, seen)
}

/// The database and the executor with `clients` connections to it; `None` when the
/// backend is skipped.
fn executor<E: Store>(test: &str, clients: usize) -> Option<(AsyncTestDb<Conn>, Asynchronous<E>)> {
    crate::observe::interested_everywhere();
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a runtime");
    let db = runtime.block_on(AsyncTestDb::<Conn>::create(test))?;
    let conns = runtime.block_on(async {
        let mut conns = Vec::new();
        for _ in 0..clients {
            conns.push(db.conn().await);
        }
        conns
    });
    Some((
        db,
        Asynchronous {
            runtime,
            conns,
            entity: PhantomData,
        },
    ))
}

/// What the runs of `E` model on this backend.
fn setup<E: Entity>(run: Run) -> Setup {
    Setup {
        exact: E::EXACT,
        reinsert: E::EXACT,
        dooms: <Conn as AsyncTestConnection>::BACKEND == Backend::Postgres,
        keys: if E::EXACT { 3 } else { 5 },
        clients: 3,
        ops: run.ops,
    }
}

#[test]
fn integer_tokens_follow_the_model() {
    let Some((_db, executor)) = executor::<Counter>(concat!(module_path!(), "_", line!()), 3)
    else {
        return;
    };
    let run = Run::from_env();
    runner::assert_model::<Counter, _>(module_path!(), executor, setup::<Counter>(run), run);
}

#[test]
fn whole_second_timestamp_tokens_follow_the_model() {
    let Some((_db, executor)) = executor::<Stamp>(concat!(module_path!(), "_", line!()), 3) else {
        return;
    };
    let run = Run::from_env();
    runner::assert_model::<Stamp, _>(module_path!(), executor, setup::<Stamp>(run), run);
}
