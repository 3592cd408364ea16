//! The model-based (state-machine) test in one flavour: the executor (one connection per
//! client; the async flavour awaits each call on a runtime of its own), the runs for
//! both token kinds, and the sabotage twins.

flavour_prelude!();

#[flavour(blocking)]
use std::cell::{RefCell, RefMut};
use std::collections::BTreeMap;
use std::marker::PhantomData;
use std::panic::{self, AssertUnwindSafe};
use std::time::Duration;

use diesel::prelude::*;
#[flavour(asynchronous)]
use diesel_occ::asynchronous::{AsyncConnectionSource, retry, transaction};
#[flavour(blocking)]
use diesel_occ::blocking::{ConnectionSource, retry};
use diesel_occ::retry::RetryPolicy;
#[flavour(blocking)]
use diesel_occ::transaction;
use diesel_occ::{Error, PoolError, SaveOutcome, Tracked, Upserted, VersionToken};
use diesel_occ_tests::Backend;

use super::super::model::{End, Inner, Key, Merge, Ops, Setup};
use super::super::runner::{self, Entity, Executor, PlannedPanic, Run, Seen};
use super::entities::{Counter, NewCounter, NewStamp, Stamp};
use super::schema;

/// The writes of one entity type on `Conn`, as the executor calls them. The async
/// flavour's futures are `Send`, as the async `transaction` requires of its closure's.
#[flavour]
trait Store: Entity {
    fn clear(conn: &mut Conn) -> impl Future<Output = ()> + Send;
    fn seed(conn: &mut Conn, rows: &[(Key, i32, Self::Token)]) -> impl Future<Output = ()> + Send;
    fn all(conn: &mut Conn) -> impl Future<Output = Vec<Self>> + Send;
    fn fetch(conn: &mut Conn, key: Key) -> impl Future<Output = Result<Self, Error>> + Send;
    fn checked_save(&mut self, conn: &mut Conn) -> impl Future<Output = Result<(), Error>> + Send;
    /// The sabotage twin of `checked_save`: the same write without the token in its
    /// predicate.
    fn blind_save(&mut self, conn: &mut Conn) -> impl Future<Output = Result<(), Error>> + Send;
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
    /// The sabotage twin of `checked_insert_from`: a taken key's row is deleted first,
    /// so the insert overwrites it instead of reporting the key taken.
    fn blind_insert_from(
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
    /// The sabotage twin of `checked_save_where`: the condition without the token.
    fn blind_save_where(
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

#[flavour]
macro_rules! store {
    ($entity:ident, $new:ident, $table:ident, $token:ident) => {
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

            async fn blind_save(&mut self, conn: &mut Conn) -> Result<(), Error> {
                use schema::$table::dsl;
                let fresh = self.token().next_token_at(0);
                let written = diesel::update(dsl::$table.find(self.id))
                    .set((dsl::value.eq(self.value), dsl::$token.eq(&fresh)))
                    .execute(conn)
                    .await?;
                if written == 0 {
                    return self.save_checked(conn).await; // the row is gone: its conflict
                }
                self.set_token(fresh);
                Ok(())
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

            async fn blind_insert_from(
                conn: &mut Conn,
                key: Key,
                value: i32,
            ) -> Result<Self::Token, Error> {
                diesel::delete(schema::$table::table.find(key))
                    .execute(conn)
                    .await?;
                Self::checked_insert_from(conn, key, value).await
            }

            async fn checked_save_where(
                &mut self,
                conn: &mut Conn,
                floor: i32,
            ) -> Result<(), Error> {
                self.save_checked_where(conn, schema::$table::value.ge(floor))
                    .await
            }

            async fn blind_save_where(&mut self, conn: &mut Conn, floor: i32) -> Result<(), Error> {
                use schema::$table::dsl;
                let fresh = self.token().next_token_at(0);
                let written =
                    diesel::update(dsl::$table.find(self.id).filter(dsl::value.ge(floor)))
                        .set((dsl::value.eq(self.value), dsl::$token.eq(&fresh)))
                        .execute(conn)
                        .await?;
                if written == 0 {
                    return self.checked_save_where(conn, floor).await; // its conflict
                }
                self.set_token(fresh);
                Ok(())
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

store!(Counter, NewCounter, counters, version);
store!(Stamp, NewStamp, stamped_seconds, updated_at);

/// Runs each call to its end: the blocking flavour's calls have ended when they return.
#[flavour(blocking)]
struct Driver;

#[flavour(blocking)]
impl Driver {
    fn new() -> Driver {
        Driver
    }

    fn drive<T>(&self, done: T) -> T {
        done
    }
}

/// Runs each call to its end: the async flavour's on a runtime of the executor's own.
#[flavour(asynchronous)]
struct Driver(tokio::runtime::Runtime);

#[flavour(asynchronous)]
impl Driver {
    fn new() -> Driver {
        Driver(
            tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .expect("a runtime"),
        )
    }

    fn drive<F: Future>(&self, call: F) -> F::Output {
        self.0.block_on(call)
    }
}

/// What lends a client's connection to one attempt of the retry helper at a time.
#[flavour(blocking)]
type Lock<T> = RefCell<T>;
/// What lends a client's connection to one attempt of the retry helper at a time.
#[flavour(asynchronous)]
type Lock<T> = tokio::sync::Mutex<T>;

/// A client's connection as the retry helper's source: every attempt gets it.
struct Borrowed<'c>(Lock<&'c mut Conn>);

#[flavour(blocking)]
impl ConnectionSource for Borrowed<'_> {
    type Connection = Conn;
    type Pooled<'a>
        = RefMut<'a, Conn>
    where
        Self: 'a;

    fn checkout(&self) -> Result<RefMut<'_, Conn>, PoolError> {
        Ok(RefMut::map(self.0.borrow_mut(), |conn| &mut **conn))
    }
}

#[flavour(asynchronous)]
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

/// One connection per client to a database of the executor's own.
struct Clients<E> {
    driver: Driver,
    conns: Vec<Conn>,
    /// Dropped after the connections to it.
    _db: TestDb<Conn>,
    /// Saves go through [`Store::blind_save`] and [`Store::blind_save_where`], inserts
    /// from a form through [`Store::blind_insert_from`].
    sabotage: bool,
    entity: PhantomData<E>,
}

impl<E: Store> Clients<E> {
    /// Three clients on a fresh database; `None` when the backend is skipped.
    #[flavour]
    fn open(test: &str, sabotage: bool) -> Option<Self> {
        crate::observe::interested_everywhere();
        let driver = Driver::new();
        let db = driver.drive(TestDb::<Conn>::create(test))?;
        let conns = driver.drive(async {
            let mut conns = Vec::new();
            for _ in 0..3 {
                conns.push(db.conn().await);
            }
            conns
        });
        Some(Clients {
            driver,
            conns,
            _db: db,
            sabotage,
            entity: PhantomData,
        })
    }
}

/// What a transaction's closure is given: the entity, or a tracked one.
#[flavour]
trait Passed<E: Store>: Send {
    fn edit_value(&mut self, value: i32);
    fn save(&mut self, conn: &mut Conn) -> impl Future<Output = Result<(), Error>> + Send;
    fn delete(&self, conn: &mut Conn) -> impl Future<Output = Result<(), Error>> + Send;
    /// `*self = found` (tracked from now).
    fn replace(&mut self, found: E);
}

#[flavour]
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

#[flavour]
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
#[flavour]
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

#[flavour]
impl<E: Store> Executor<E> for Clients<E>
where
    for<'a> &'a mut E: diesel_occ::Restore,
    for<'a> &'a mut Tracked<E>: diesel_occ::Restore,
{
    // In the blocking flavour, `drive` passes on the `()` these calls return.
    #[allow(clippy::unit_arg)]
    fn reset(&mut self, rows: &[(Key, i32, E::Token)]) {
        let conn = &mut self.conns[0];
        self.driver.drive(E::clear(conn));
        self.driver.drive(E::seed(conn, rows));
    }

    fn rows(&mut self) -> BTreeMap<Key, (i32, E::Token)> {
        self.driver
            .drive(E::all(&mut self.conns[0]))
            .into_iter()
            .map(|row| {
                let (key, value, token) = row.parts();
                (key, (value, token.clone()))
            })
            .collect()
    }

    fn find(&mut self, client: usize, key: Key) -> Result<E, Error> {
        self.driver.drive(E::fetch(&mut self.conns[client], key))
    }

    fn save(&mut self, client: usize, entity: &mut E) -> Result<(), Error> {
        let conn = &mut self.conns[client];
        if self.sabotage {
            self.driver.drive(entity.blind_save(conn))
        } else {
            self.driver.drive(entity.checked_save(conn))
        }
    }

    fn delete(&mut self, client: usize, entity: &E) -> Result<(), Error> {
        self.driver
            .drive(entity.checked_delete(&mut self.conns[client]))
    }

    fn update_by_key(
        &mut self,
        client: usize,
        key: Key,
        expected: &E::Token,
        value: i32,
    ) -> Result<E::Token, Error> {
        let conn = &mut self.conns[client];
        self.driver
            .drive(E::by_key_update(conn, key, expected, value))
    }

    fn delete_by_key(&mut self, client: usize, key: Key, expected: &E::Token) -> Result<(), Error> {
        self.driver
            .drive(E::by_key_delete(&mut self.conns[client], key, expected))
    }

    fn insert(&mut self, client: usize, entity: &mut E) -> Result<E::Token, Error> {
        self.driver
            .drive(entity.checked_insert(&mut self.conns[client]))
    }

    fn insert_from(&mut self, client: usize, key: Key, value: i32) -> Result<E::Token, Error> {
        let conn = &mut self.conns[client];
        if self.sabotage {
            self.driver.drive(E::blind_insert_from(conn, key, value))
        } else {
            self.driver.drive(E::checked_insert_from(conn, key, value))
        }
    }

    fn save_where(&mut self, client: usize, entity: &mut E, floor: i32) -> Result<(), Error> {
        let conn = &mut self.conns[client];
        if self.sabotage {
            self.driver.drive(entity.blind_save_where(conn, floor))
        } else {
            self.driver.drive(entity.checked_save_where(conn, floor))
        }
    }

    fn upsert(
        &mut self,
        client: usize,
        entity: &mut E,
        expected: Option<&E::Token>,
    ) -> Result<Upserted<E::Token>, Error> {
        self.driver
            .drive(entity.checked_upsert(&mut self.conns[client], expected))
    }

    fn force_increment(&mut self, client: usize, entity: &mut E) -> Result<(), Error> {
        self.driver.drive(entity.increment(&mut self.conns[client]))
    }

    fn save_all(&mut self, client: usize, entities: &mut [E]) -> Result<(), Error> {
        self.driver
            .drive(E::batch_save(entities, &mut self.conns[client]))
    }

    fn bulk_update(&mut self, client: usize, keys: &[Key], value: i32) -> Result<usize, Error> {
        self.driver
            .drive(E::bulk(&mut self.conns[client], keys, value))
    }

    fn soft_delete(&mut self, client: usize, entity: &mut E) -> Result<(), Error> {
        self.driver
            .drive(entity.soft_delete(&mut self.conns[client]))
    }

    fn retry_by_key(
        &mut self,
        client: usize,
        key: Key,
        expected: &E::Token,
        value: i32,
    ) -> Result<E::Token, Error> {
        let source = Borrowed(Lock::new(&mut self.conns[client]));
        self.driver
            .drive(retry(&source, &policy(), async |conn, _| {
                E::by_key_update(conn, key, expected, value).await
            }))
    }

    fn retry_save(&mut self, client: usize, key: Key, value: i32) -> Result<E, Error> {
        let source = Borrowed(Lock::new(&mut self.conns[client]));
        self.driver
            .drive(retry(&source, &policy(), async |conn, _| {
                let mut entity = E::fetch(conn, key).await?;
                entity.set_value(value);
                entity.checked_save(conn).await?;
                Ok(entity)
            }))
    }

    fn tracked_save(
        &mut self,
        client: usize,
        entity: &mut E,
        value: i32,
        merging: bool,
    ) -> Result<Option<Merge>, Error> {
        self.driver
            .drive(entity.tracked_save(&mut self.conns[client], value, merging))
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
            let seen = in_transaction(&self.driver, conn, &mut passed, steps, end);
            *entity = E::untrack(passed);
            seen
        } else {
            in_transaction(&self.driver, conn, entity, steps, end)
        }
    }
}

/// `diesel_occ::transaction` (or the async one) with `passed` as its single `&mut`
/// entity.
#[flavour]
fn in_transaction<E: Store, P: Passed<E>>(
    driver: &Driver,
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
        driver.drive(transaction(conn, &mut *passed, async |conn, passed| {
            for inner in steps {
                step(conn, &mut **passed, inner, &mut seen).await?;
            }
            match end {
                End::Commit => Ok(()),
                End::Fail => Err(runner::rollback()),
                End::Panic => panic::panic_any(PlannedPanic),
            }
        }))
    }));
    runner::outcome(called, seen)
}

/// What the runs of `E` model on this backend.
fn setup<E: Entity>(ops: Ops) -> Setup {
    Setup {
        exact: E::EXACT,
        reinsert: E::EXACT,
        dooms: <Conn as TestConnection>::BACKEND == Backend::Postgres,
        keys: if E::EXACT { 3 } else { 5 },
        clients: 3,
        ops,
    }
}

#[test]
fn integer_tokens_follow_the_model() {
    let Some(clients) = Clients::open(module_path!(), false) else {
        return;
    };
    let run = Run::from_env();
    runner::assert_model::<Counter, _>(module_path!(), clients, setup::<Counter>(run.ops), run);
}

#[test]
fn whole_second_timestamp_tokens_follow_the_model() {
    let Some(clients) = Clients::open(module_path!(), false) else {
        return;
    };
    let run = Run::from_env();
    runner::assert_model::<Stamp, _>(module_path!(), clients, setup::<Stamp>(run.ops), run);
}

/// The twins: writes without their check (`Clients::sabotage`). The same seed and
/// operations pass with the checked writes and fail with the blind ones, and the shrunk
/// program shows it, failing at a step that calls `call`. Exact integer tokens and no
/// clock: the same program every run. The operations are those that meet the contract
/// on the main this was written on, and a retryable conflict on a client's token
/// (issue 37 point 6) is accepted, so that only the twin can fail.
#[flavour(blocking)]
fn assert_twin_caught(ops: &str, call: &str) {
    let (Some(plain), Some(twin)) = (
        Clients::open(module_path!(), false),
        Clients::open(module_path!(), true),
    ) else {
        return;
    };
    let run = Run {
        cases: 64,
        steps: 12,
        seed: 37,
        ops: Ops::parse(ops),
        retryable_client_tokens: true,
    };
    let setup = setup::<Counter>(run.ops);
    if let Err(failure) = runner::check::<Counter, _>(plain, setup, run) {
        panic!("the plain run must pass: {failure:?}");
    }
    match runner::check::<Counter, _>(twin, setup, run) {
        Ok(()) => panic!("the model did not catch {call} without its check"),
        Err(failure) => {
            eprintln!(
                "{}: the twin of {call} is caught; shortest program ({} steps):\n{}  failed at {}",
                module_path!(),
                failure.steps,
                failure.program,
                failure.reason
            );
            assert!(
                failure.reason.contains(call),
                "the failing step calls {call}: {}",
                failure.reason
            );
            assert!(
                failure.steps <= 4,
                "shrunk to a few steps: {}",
                failure.program
            );
        }
    }
}

#[flavour(blocking)]
#[test]
fn the_model_catches_a_save_without_its_token_check() {
    assert_twin_caught("find,save,delete,update_by_key,insert", "save_checked");
}

#[flavour(blocking)]
#[test]
fn the_model_catches_a_conditional_save_without_its_token_check() {
    assert_twin_caught("find,save_where,update_by_key", "save_checked_where");
}

#[flavour(blocking)]
#[test]
fn the_model_catches_an_insert_from_a_form_that_overwrites_a_taken_key() {
    assert_twin_caught(
        "find,insert_from,delete,update_by_key",
        "insert_checked_from",
    );
}
