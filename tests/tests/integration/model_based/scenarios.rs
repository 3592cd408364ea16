//! The model-based (state-machine) test in one flavour: the executor (one connection per
//! client; the async flavour awaits each call on a runtime of its own), the runs for
//! both token kinds, and the sabotage twins.

flavour_prelude!();

#[flavour(blocking)]
use std::cell::{RefCell, RefMut};
use std::collections::BTreeMap;
use std::panic::{self, AssertUnwindSafe};
use std::time::Duration;

use chrono::NaiveDateTime;
use diesel::prelude::*;
#[flavour(asynchronous)]
use diesel_occ::asynchronous::AsyncConnectionSource;
#[flavour(blocking)]
use diesel_occ::blocking::ConnectionSource;
use diesel_occ::retry::RetryPolicy;
use diesel_occ::{Error, PoolError, SaveOutcome, Tracked, VersionToken};
use diesel_occ_tests::Backend;

use super::super::model::{Call, Inner, Key, Merge, Op, Ops, Setup, Transaction};
use super::super::runner::{self, Entity, Executor, Run, Seen};
use super::entities::{Counter, NewCounter, NewStamp, Stamp};
use super::schema;

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
        let mut runtime = tokio::runtime::Builder::new_current_thread();
        Driver(runtime.enable_all().build().expect("a runtime"))
    }

    fn drive<F: Future>(&self, call: F) -> F::Output {
        self.0.block_on(call)
    }
}

/// What lends a client's connection to one attempt of the retry helper at a time.
#[flavour(blocking)]
type Lock<T> = RefCell<T>;
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
        let guard = self.0.lock().await;
        Ok(tokio::sync::MutexGuard::map(guard, |conn| &mut **conn))
    }
}

/// Three attempts, no backoff: enough to see whether a conflict is retried.
fn policy() -> RetryPolicy {
    let policy = RetryPolicy::new().max_attempts(3);
    policy.backoff(Duration::ZERO, Duration::ZERO)
}

/// One connection per client to a database of the executor's own.
struct Clients {
    driver: Driver,
    conns: Vec<Conn>,
    /// Dropped after the connections to it.
    _db: TestDb<Conn>,
    /// Saves, conditional saves and inserts from a form go through their twins without
    /// the check (`executor!`).
    sabotage: bool,
}

impl Clients {
    /// Three clients on a fresh database; `None` when the backend is skipped.
    #[flavour]
    fn open(test: &str, sabotage: bool) -> Option<Self> {
        crate::observe::interested_everywhere();
        let driver = Driver::new();
        let db = driver.drive(TestDb::<Conn>::create(test))?;
        let conns = (0..3).map(|_| driver.drive(db.conn())).collect();
        let _db = db;
        Some(Clients {
            driver,
            conns,
            _db,
            sabotage,
        })
    }
}

/// What a transaction's closure is given: the entity, or a tracked one. The async
/// flavour's futures are `Send`, as the async `transaction` requires of its closure's.
#[flavour]
trait Passed: Send {
    type Token: VersionToken + Clone;
    fn edit_value(&mut self, value: i32);
    fn save(&mut self, conn: &mut Conn) -> impl Future<Output = Result<(), Error>> + Send;
    fn delete(&self, conn: &mut Conn) -> impl Future<Output = Result<(), Error>> + Send;
    /// `*self = find(key)?` (tracked from now).
    fn replace(
        &mut self,
        conn: &mut Conn,
        key: Key,
    ) -> impl Future<Output = Result<(), Error>> + Send;
    /// `insert_checked` of a new entity.
    fn insert(
        conn: &mut Conn,
        key: Key,
        value: i32,
    ) -> impl Future<Output = Result<Self::Token, Error>> + Send;
}

/// A step of a transaction's closure; `Err` ends the closure.
#[flavour]
async fn step<P: Passed>(
    conn: &mut Conn,
    entity: &mut P,
    step: &Inner,
    seen: &mut Vec<Seen<P::Token>>,
) -> Result<(), Error> {
    let result = match *step {
        Inner::Save { value } | Inner::CatchConflict { value } => {
            entity.edit_value(value);
            entity.save(conn).await.map(|()| Seen::Done)
        }
        Inner::Delete => entity.delete(conn).await.map(|()| Seen::Done),
        Inner::Insert { key, value } | Inner::CatchTaken { key, value } => {
            P::insert(conn, key, value).await.map(Seen::Token)
        }
        Inner::Replace { key } => entity.replace(conn, key).await.map(|()| Seen::Done),
        Inner::CatchRefused => {
            let refused = diesel::sql_query("SELECT * FROM occ_no_such_table").execute(conn);
            refused.await.map(|_| Seen::Done).map_err(Error::from)
        }
    };
    seen.push(result.as_ref().map_or_else(Seen::error, Clone::clone));
    match result {
        Err(error) if !runner::caught(step, &error) => Err(error),
        _ => Ok(()),
    }
}

/// This flavour's `transaction` with `passed` as its single `&mut` entity.
#[flavour]
fn in_transaction<P: Passed>(
    driver: &Driver,
    conn: &mut Conn,
    passed: &mut P,
    closure: &Transaction,
) -> Seen<P::Token>
where
    for<'a> &'a mut P: diesel_occ::Restore + Send,
{
    let mut seen = Vec::new();
    let called = panic::catch_unwind(AssertUnwindSafe(|| {
        driver.drive(transaction(conn, &mut *passed, async |conn, passed| {
            for inner in &closure.steps {
                step(conn, &mut **passed, inner, &mut seen).await?;
            }
            runner::end(closure.end)
        }))
    }));
    runner::outcome(called, seen)
}

/// The entity of `$table` (its token column `$token` of type `$tok`, its create form
/// `$form`): its [`Passed`] forms and the [`Executor`] of it on [`Clients`].
#[flavour]
macro_rules! executor {
    ($entity:ident, $form:ident, $table:ident, $token:ident, $tok:ty) => {
        impl Passed for $entity {
            type Token = $tok;

            fn edit_value(&mut self, value: i32) {
                self.value = value;
            }

            async fn save(&mut self, conn: &mut Conn) -> Result<(), Error> {
                self.save_checked(conn).await
            }

            async fn delete(&self, conn: &mut Conn) -> Result<(), Error> {
                self.delete_checked(conn).await
            }

            async fn replace(&mut self, conn: &mut Conn, key: Key) -> Result<(), Error> {
                *self = $entity::find(conn, key).await?;
                Ok(())
            }

            async fn insert(conn: &mut Conn, key: Key, value: i32) -> Result<Self::Token, Error> {
                $entity::create(key, value).insert_checked(conn).await
            }
        }

        impl Passed for Tracked<$entity> {
            type Token = $tok;

            fn edit_value(&mut self, value: i32) {
                self.edit().value = value;
            }

            async fn save(&mut self, conn: &mut Conn) -> Result<(), Error> {
                TrackedDsl::save_checked(self, conn).await
            }

            async fn delete(&self, conn: &mut Conn) -> Result<(), Error> {
                TrackedDsl::delete_checked(self, conn).await
            }

            async fn replace(&mut self, conn: &mut Conn, key: Key) -> Result<(), Error> {
                *self = Tracked::new($entity::find(conn, key).await?);
                Ok(())
            }

            async fn insert(conn: &mut Conn, key: Key, value: i32) -> Result<Self::Token, Error> {
                <$entity as Passed>::insert(conn, key, value).await
            }
        }

        impl Executor<$entity> for Clients {
            // In the blocking flavour, `drive` passes on the `()` the block returns.
            #[allow(clippy::unit_arg)]
            fn reset(&mut self, rows: &[(Key, i32, $tok)]) {
                let (conn, table) = (&mut self.conns[0], schema::$table::table);
                self.driver.drive(async {
                    let emptied = diesel::delete(table).execute(conn).await;
                    emptied.expect("empty the table");
                    for (key, value, token) in rows {
                        let row = $entity::with_token(*key, *value, token.clone());
                        let seeded = diesel::insert_into(table).values(row).execute(conn).await;
                        seeded.expect("seed a row");
                    }
                });
            }

            fn rows(&mut self) -> BTreeMap<Key, (i32, $tok)> {
                let all = schema::$table::table.select($entity::as_select());
                let conn = &mut self.conns[0];
                let rows: Vec<$entity> = self.driver.drive(all.load(conn)).expect("the rows");
                BTreeMap::from_iter(rows.into_iter().map(|r| (r.id, (r.value, r.$token))))
            }

            fn save_all(&mut self, client: usize, batch: &mut [$entity]) -> Seen<$tok> {
                let conn = &mut self.conns[client];
                Seen::done(&self.driver.drive(batch.save_all_checked(conn)))
            }

            fn call(&mut self, op: &Op, e: &mut $entity) -> Seen<$tok> {
                use schema::$table::dsl;

                /// `save_checked` (`floor`: `save_checked_where` under `value >= floor`),
                /// or with `sabotage` its twin: the same write without the token in its
                /// predicate. When the twin writes nothing, the checked write says why.
                async fn save(
                    e: &mut $entity,
                    conn: &mut Conn,
                    floor: Option<i32>,
                    sabotage: bool,
                ) -> Result<(), Error> {
                    let fresh = e.token().next_token_at(0);
                    let row = dsl::$table
                        .find(e.id)
                        .filter(dsl::value.ge(floor.unwrap_or(i32::MIN)));
                    let blind =
                        diesel::update(row).set((dsl::value.eq(e.value), dsl::$token.eq(&fresh)));
                    if sabotage && blind.execute(conn).await? > 0 {
                        e.set_token(fresh);
                        return Ok(());
                    }
                    match floor {
                        Some(floor) => e.save_checked_where(conn, dsl::value.ge(floor)).await,
                        None => e.save_checked(conn).await,
                    }
                }

                let conn = &mut self.conns[op.client];
                if let Call::Transaction(ref closure) = op.call {
                    if !closure.tracked {
                        return in_transaction(&self.driver, conn, e, closure);
                    }
                    let mut passed = Tracked::new(e.clone());
                    let seen = in_transaction(&self.driver, conn, &mut passed, closure);
                    *e = passed.into_inner();
                    return seen;
                }
                let (key, value, sabotage) = (op.key, op.value, self.sabotage);
                let set_value = dsl::value.eq(value);
                self.driver.drive(async {
                    match op.call {
                        Call::Find => Seen::found(e, $entity::find(conn, key).await),
                        Call::Save => Seen::done(&save(e, conn, None, sabotage).await),
                        Call::SaveWhere { floor } => {
                            Seen::done(&save(e, conn, Some(floor), sabotage).await)
                        }
                        Call::Delete => Seen::done(&e.delete_checked(conn).await),
                        Call::UpdateByKey => Seen::token(
                            &$entity::update_by_key(conn, key, e.token(), set_value).await,
                        ),
                        Call::DeleteByKey => {
                            Seen::done(&$entity::delete_by_key(conn, key, e.token()).await)
                        }
                        Call::Insert => Seen::token(&e.insert_checked(conn).await),
                        Call::InsertFrom => {
                            if sabotage {
                                // The twin: a taken key's row is deleted first, so the
                                // insert overwrites it instead of reporting the key taken.
                                let taken = diesel::delete(dsl::$table.find(key));
                                taken.execute(conn).await.expect("delete the row");
                            }
                            let form = $form { id: key, value };
                            Seen::token(&$entity::insert_checked_from(conn, form).await)
                        }
                        Call::UpsertSome => {
                            let expected = e.token().clone();
                            Seen::upserted(&e.upsert_checked(conn, Some(&expected)).await)
                        }
                        Call::UpsertNone => Seen::upserted(&e.upsert_checked(conn, None).await),
                        Call::ForceIncrement => Seen::done(&e.force_increment(conn).await),
                        Call::BulkUpdate { ref keys } => {
                            let rows = dsl::$table.filter(dsl::id.eq_any(keys));
                            let update = $entity::bulk_update(rows, set_value);
                            let written = update.execute(conn).await.map_err(Error::from);
                            Seen::of(&written, |count| Seen::Count(*count))
                        }
                        Call::SoftDelete => {
                            Seen::done(&e.soft_delete_checked(conn, dsl::value.eq(-1)).await)
                        }
                        Call::RetryByKey => {
                            let source = Borrowed(Lock::new(&mut *conn));
                            let retried = retry(&source, &policy(), async |conn, _| {
                                $entity::update_by_key(conn, key, e.token(), set_value).await
                            })
                            .await;
                            Seen::token(&retried)
                        }
                        Call::RetrySave => {
                            let source = Borrowed(Lock::new(&mut *conn));
                            let saved = retry(&source, &policy(), async |conn, _| {
                                let mut entity = $entity::find(conn, key).await?;
                                entity.value = value;
                                entity.save_checked(conn).await?;
                                Ok(entity)
                            })
                            .await;
                            Seen::found(e, saved)
                        }
                        Call::TrackedSave { merge } => {
                            let mut tracked = Tracked::new(e.clone());
                            tracked.edit().value = value;
                            let seen = if merge {
                                Seen::of(&tracked.save_merging(conn).await, |outcome| {
                                    Seen::Merge(match outcome {
                                        SaveOutcome::Saved => Merge::Saved,
                                        SaveOutcome::Merged { .. } => Merge::Merged,
                                        SaveOutcome::Overlap(_) => Merge::Overlap,
                                    })
                                })
                            } else {
                                Seen::done(&TrackedDsl::save_checked(&mut tracked, conn).await)
                            };
                            *e = tracked.into_inner();
                            seen
                        }
                        Call::SaveAll | Call::Transaction(_) => {
                            unreachable!("not a call on one entity")
                        }
                    }
                })
            }
        }
    };
}

executor!(Counter, NewCounter, counters, version, i32);
executor!(Stamp, NewStamp, stamped_seconds, updated_at, NaiveDateTime);

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

/// The twins: writes without their check (`Clients::sabotage`). With the same seed and
/// operations (integer tokens: the same programs every run) the checked writes pass and
/// the blind ones fail, shrunk to a few steps that fail at a call of `call`. A retryable
/// conflict on a client's token (issue 37 point 6) is accepted: only the twin can fail.
#[flavour(blocking)]
fn assert_twin_caught(ops: &str, call: &str) {
    let open = |sabotage| Clients::open(module_path!(), sabotage);
    let (Some(plain), Some(twin)) = (open(false), open(true)) else {
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
    let Err(failure) = runner::check::<Counter, _>(twin, setup, run) else {
        panic!("the model did not catch {call} without its check");
    };
    let (reason, program, steps) = (&failure.reason, &failure.program, failure.steps);
    let path = module_path!();
    eprintln!(
        "{path}: the twin of {call} is caught; shortest program ({steps} steps):\n{program}  failed at {reason}"
    );
    let calls = reason.contains(call);
    assert!(calls, "the failing step calls {call}: {reason}");
    assert!(steps <= 4, "shrunk to a few steps: {program}");
}

#[flavour(blocking, test)]
fn the_model_catches_a_save_without_its_token_check() {
    assert_twin_caught("find,save,delete,update_by_key,insert", "save_checked");
}

#[flavour(blocking, test)]
fn the_model_catches_a_conditional_save_without_its_token_check() {
    assert_twin_caught("find,save_where,update_by_key", "save_checked_where");
}

#[flavour(blocking, test)]
fn the_model_catches_an_insert_from_a_form_that_overwrites_a_taken_key() {
    assert_twin_caught(
        "find,insert_from,delete,update_by_key",
        "insert_checked_from",
    );
}
