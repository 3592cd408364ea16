//! What the blocking and async executors share: the entity and executor traits, what a
//! call returned (`Seen`), the binding of model tokens to real ones, the checks after
//! every step, and the proptest run with its seed, cases and shrinking. Compiled once.

use std::collections::BTreeMap;
use std::fmt::Debug;
use std::panic::{self, AssertUnwindSafe};
use std::sync::Once;
use std::sync::atomic::{AtomicUsize, Ordering};

use diesel_occ::{ConcurrencyConflict, Error, Upserted, VersionToken};
use diesel_occ_tests::entities::Counter;
use proptest::test_runner::{Config, RngAlgorithm, TestCaseError, TestError, TestRng, TestRunner};
use proptest_state_machine::strategy::Sequential;

use super::model::{
    self, Call, Conflict, End, Expect, Inner, Key, Merge, Model, Op, Ops, Outcome, Row, Setup, Tok,
};

/// An entity of the model's table, as the executors handle it.
pub(crate) trait Entity: Clone + Debug + Send + Sync + 'static {
    type Token: VersionToken + Clone + Default + PartialEq + Debug + Send + Sync;
    /// Whether the model predicts its tokens exactly (integers).
    const EXACT: bool;

    /// The token an exact model token stands for; otherwise a token for the rows
    /// seeded before a program, what the column stores of the time now.
    fn real_token(token: Tok) -> Self::Token;
    fn with_token(key: Key, value: i32, token: Self::Token) -> Self;
    fn parts(&self) -> (Key, i32, &Self::Token);

    /// A new entity; its token is a placeholder the insert replaces.
    fn create(key: Key, value: i32) -> Self {
        Self::with_token(key, value, Self::Token::default())
    }

    fn set_value(&mut self, value: i32) {
        let (key, _, token) = self.parts();
        *self = Self::with_token(key, value, token.clone());
    }
}

/// The integer-token entity, the same type on every backend.
impl Entity for Counter {
    type Token = i32;
    const EXACT: bool = true;

    fn real_token(token: Tok) -> i32 {
        i32::try_from(token).expect("a small token")
    }

    fn with_token(id: Key, value: i32, version: i32) -> Self {
        Counter {
            id,
            value,
            label: None,
            version,
        }
    }

    fn parts(&self) -> (Key, i32, &i32) {
        (self.id, self.value, &self.version)
    }
}

/// A conflict's tokens and state, as a call returned it.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Clash<T> {
    expected: Option<T>,
    current: Option<T>,
    deleted: bool,
    retryable: bool,
}

impl<T> Clash<T> {
    /// The expected token of a conflict with no current token, on a row not deleted,
    /// and not retryable: a conditional write's condition did not match.
    fn unmatched(&self) -> Option<&T> {
        let matched = self.current.is_some() || self.deleted || self.retryable;
        self.expected.as_ref().filter(|_| !matched)
    }
}

/// What a call returned, its tokens the real ones: `Batch` has each conflicted entity's
/// position and conflict, `Exhausted` what the last attempt of a retry met.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum Seen<T> {
    Done,
    Token(T),
    /// Whether the upsert inserted, and the token.
    Upserted(bool, T),
    NotFound,
    Conflict(Clash<T>),
    Taken,
    Batch(Vec<(usize, Seen<T>)>),
    Count(usize),
    Merge(Merge),
    Exhausted(Box<Seen<T>>),
    Refused(String),
    Other(String),
    /// The closure's steps, and how the transaction ended.
    Transaction(Vec<Seen<T>>, Outcome),
}

impl<T: VersionToken + Clone> Seen<T> {
    /// A call's result.
    pub(crate) fn of<R>(result: &Result<R, Error>, ok: impl FnOnce(&R) -> Seen<T>) -> Seen<T> {
        result.as_ref().map_or_else(Seen::error, ok)
    }

    /// A call's error.
    pub(crate) fn error(error: &Error) -> Seen<T> {
        match error {
            Error::Conflict(conflict) => Seen::conflict(conflict),
            Error::NotFound(_) => Seen::NotFound,
            Error::Batch(batch) => {
                let conflicts = batch.conflicts().iter();
                Seen::Batch(conflicts.map(|(at, c)| (*at, Seen::conflict(c))).collect())
            }
            Error::RetriesExhausted(exhausted) => {
                Seen::Exhausted(Box::new(Seen::error(exhausted.last_error())))
            }
            Error::UniqueViolation(_) => Seen::Taken,
            Error::Database(error) => Seen::Refused(error.to_string()),
            other => Seen::Other(format!("{other:?}")),
        }
    }

    fn conflict(conflict: &ConcurrencyConflict) -> Seen<T> {
        Seen::Conflict(Clash {
            expected: conflict.expected::<T>(),
            current: conflict.current::<T>(),
            deleted: conflict.is_deleted(),
            retryable: conflict.is_retryable(),
        })
    }

    /// `Done` for any `Ok`.
    pub(crate) fn done<R>(result: &Result<R, Error>) -> Seen<T> {
        Seen::of(result, |_| Seen::Done)
    }

    /// `Token` for the token a write returned.
    pub(crate) fn token(result: &Result<T, Error>) -> Seen<T> {
        Seen::of(result, |token| Seen::Token(token.clone()))
    }

    pub(crate) fn upserted(result: &Result<Upserted<T>, Error>) -> Seen<T> {
        Seen::of(result, |upserted| match upserted {
            Upserted::Inserted(token) => Seen::Upserted(true, token.clone()),
            Upserted::Updated(token) => Seen::Upserted(false, token.clone()),
        })
    }

    /// What a read returned; on `Ok`, `entity` is the entity read.
    pub(crate) fn found<E: Entity<Token = T>>(entity: &mut E, result: Result<E, Error>) -> Seen<T> {
        let seen = Seen::done(&result);
        if let Ok(found) = result {
            *entity = found;
        }
        seen
    }
}

/// Which real token each model token stands for. An exact token must be the value the
/// model predicts; a serial is bound to the first value seen for it, and a row's
/// distinct tokens must be distinct values (a fresh token differs from every earlier
/// one of the row at the column's precision).
#[derive(Clone, Debug, Default)]
pub(crate) struct Tokens<T> {
    bound: BTreeMap<Tok, (Key, T)>,
}

impl<T: Clone + PartialEq + Debug> Tokens<T> {
    fn bind<E: Entity<Token = T>>(&mut self, key: Key, token: Tok, real: &T) -> Result<(), String> {
        if E::EXACT {
            let exact = E::real_token(token);
            let wrong = format!("token {real:?} where the model predicts {exact:?}");
            return if &exact == real { Ok(()) } else { Err(wrong) };
        }
        match self.bound.get(&token) {
            Some((_, bound)) if bound == real => Ok(()),
            Some((_, bound)) => Err(format!(
                "token {real:?} where the model's token was seen as {bound:?}"
            )),
            None => {
                let mut bound = self.bound.iter();
                let same = bound.find(|(_, (k, value))| *k == key && value == real);
                if let Some((other, _)) = same {
                    return Err(format!(
                        "k{key}: a fresh token {real:?} equal to an earlier token of the row (model #{other})"
                    ));
                }
                self.bound.insert(token, (key, real.clone()));
                Ok(())
            }
        }
    }
}

/// The clients' connections and the database, as a flavour drives them.
pub(crate) trait Executor<E: Entity> {
    /// Empties the table, then writes `rows` with plain Diesel inserts.
    fn reset(&mut self, rows: &[(Key, i32, E::Token)]);
    /// The table's rows.
    fn rows(&mut self) -> BTreeMap<Key, (i32, E::Token)>;
    /// Makes `op`'s call (not `SaveAll`) on its client's connection, on `entity`: the one
    /// the client holds, edited as the call says, a new one, or one a read replaces.
    /// Retries make 3 attempts without backoff; a planned panic of a transaction is caught.
    fn call(&mut self, op: &Op, entity: &mut E) -> Seen<E::Token>;
    /// `save_all_checked` of `batch`.
    fn save_all(&mut self, client: usize, batch: &mut [E]) -> Seen<E::Token>;
}

/// A panic the program asks for (`End::Panic`): not printed.
#[derive(Debug)]
pub(crate) struct PlannedPanic;

/// Whether a step of a transaction's closure catches `error` and carries on, as a
/// user's code would; any other error ends the closure (`?`).
pub(crate) fn caught(step: &Inner, error: &Error) -> bool {
    match step {
        Inner::CatchConflict { .. } => matches!(error, Error::Conflict(_)),
        Inner::CatchTaken { .. } => matches!(error, Error::UniqueViolation(_)),
        Inner::CatchRefused => true,
        _ => false,
    }
}

/// How a transaction's closure ends after its steps: `Ok`, an error that rolls back,
/// or a [`PlannedPanic`].
pub(crate) fn end(end: End) -> Result<(), Error> {
    match end {
        End::Commit => Ok(()),
        End::Fail => Err(Error::from(diesel::result::Error::RollbackTransaction)),
        End::Panic => panic::panic_any(PlannedPanic),
    }
}

/// Hides the default panic message of [`PlannedPanic`]s, and only theirs.
fn quiet_planned_panics() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        let previous = panic::take_hook();
        panic::set_hook(Box::new(move |info| {
            if info.payload().downcast_ref::<PlannedPanic>().is_none() {
                previous(info);
            }
        }));
    });
}

/// The outcome of a transaction call, and its panic caught.
pub(crate) fn outcome<T: VersionToken>(
    called: std::thread::Result<Result<(), Error>>,
    steps: Vec<Seen<T>>,
) -> Seen<T> {
    let outcome = match called {
        Ok(Ok(())) => Outcome::Committed,
        Ok(Err(_)) => Outcome::RolledBack,
        Err(panic) if panic.downcast_ref::<PlannedPanic>().is_some() => Outcome::Panicked,
        Err(panic) => panic::resume_unwind(panic),
    };
    Seen::Transaction(steps, outcome)
}

/// The system under test: the executor, the entities each client holds, and the
/// tokens seen.
struct System<E: Entity, X> {
    executor: X,
    held: Vec<BTreeMap<Key, E>>,
    tokens: Tokens<E::Token>,
    /// Whether a client-token conflict may be retryable (`OCC_MODEL_IGNORE`).
    retryable_client_tokens: bool,
    /// The keys of the last batch, by position.
    batch_keys: Vec<Key>,
}

impl<E: Entity, X: Executor<E>> System<E, X> {
    /// Makes `op`'s call; the client then holds what the model says it holds.
    fn call(&mut self, op: &Op) -> Result<Seen<E::Token>, String> {
        let (client, call, key, value) = (op.client, &op.call, op.key, op.value);
        let held = &mut self.held[client];
        if *call == Call::SaveAll {
            self.batch_keys = held.keys().copied().collect();
            let mut batch: Vec<E> = held.values().cloned().collect();
            batch.iter_mut().for_each(|entity| entity.set_value(value));
            let seen = self.executor.save_all(client, &mut batch);
            held.extend(self.batch_keys.iter().copied().zip(batch));
            return Ok(seen);
        }
        let new = matches!(call, Call::Insert | Call::UpsertNone | Call::InsertFrom);
        // Calls on the held entity: the client holds it as the call left it.
        let on_held = !new && !matches!(call, Call::Find | Call::RetrySave);
        let mut entity = match call {
            _ if new => E::create(key, value),
            Call::BulkUpdate { .. } => return Ok(self.executor.call(op, &mut E::create(key, 0))),
            _ if on_held => held.get(&key).cloned().expect("the model holds it too"),
            // A read replaces it.
            _ => E::create(key, 0),
        };
        if matches!(call, Call::Save | Call::SaveWhere { .. } | Call::UpsertSome) {
            entity.set_value(value);
        }
        let before = entity.clone();
        let seen = self.executor.call(op, &mut entity);
        let ok = matches!(seen, Seen::Done | Seen::Token(_) | Seen::Upserted(..));
        match (call, &seen) {
            (Call::UpdateByKey | Call::RetryByKey | Call::InsertFrom, Seen::Token(token)) => {
                held.insert(key, E::with_token(key, value, token.clone()));
            }
            (Call::SaveWhere { .. } | Call::Insert, _)
                if !ok && entity.parts() != before.parts() =>
            {
                return Err(format!("a failed write changed its entity: {entity:?}"));
            }
            (Call::Transaction(_), Seen::Transaction(_, outcome)) => {
                // Rolled back, it is compared in the slot it was passed from.
                let committed = *outcome == Outcome::Committed;
                held.remove(&key);
                held.insert(if committed { entity.parts().0 } else { key }, entity);
            }
            _ if ok || on_held => {
                held.insert(key, entity);
            }
            _ => {}
        }
        Ok(seen)
    }

    /// Runs `op` as the model just did (`model.expect` says what it must return).
    fn apply(&mut self, model: &Model, op: &Op) -> Result<(), String> {
        let seen = self.call(op)?;
        // What a transaction that rolled back wrote was never stored: its tokens bind
        // nothing (a later fresh token may take the same value).
        let committed = self.tokens.clone();
        let compared = self.compare(op.key, &model.expect, &seen);
        if let Expect::Transaction { outcome, .. } = model.expect
            && outcome != Outcome::Committed
        {
            self.tokens = committed;
        }
        compared.map_err(|reason| {
            format!(
                "{reason}\n      model    {:?}\n      got      {seen:?}",
                model.expect
            )
        })
    }

    /// Whether `seen` is what the model expects, binding the tokens it carries.
    fn compare(&mut self, key: Key, expect: &Expect, seen: &Seen<E::Token>) -> Result<(), String> {
        match (expect, seen) {
            (Expect::Done, Seen::Done)
            | (Expect::NotFound, Seen::NotFound)
            | (Expect::Taken, Seen::Taken)
            | (Expect::Refused, Seen::Refused(_)) => Ok(()),
            (Expect::Count(count), Seen::Count(real)) if count == real => Ok(()),
            (Expect::Merge(merge), Seen::Merge(real)) if merge == real => Ok(()),
            (Expect::Batch(conflicts), Seen::Batch(real)) => {
                let positions = conflicts.iter().map(|(index, _)| index);
                if positions.ne(real.iter().map(|(index, _)| index)) {
                    return Err("the batch's conflicted positions are not the model's".into());
                }
                for ((index, conflict), (_, seen)) in conflicts.iter().zip(real) {
                    // The conflict's own row, which the batch error names by position.
                    let key = self.batch_keys.get(*index).copied().unwrap_or(key);
                    self.compare(key, &Expect::Conflict(*conflict), seen)
                        .map_err(|reason| format!("batch position {index}: {reason}"))?;
                }
                Ok(())
            }
            (Expect::Unmatched { expected }, Seen::Conflict(clash))
                if let Some(real) = clash.unmatched() =>
            {
                self.tokens.bind::<E>(key, *expected, real)
            }
            (expect, Seen::Exhausted(last)) if self.retryable_client_tokens => {
                // Point 6 looked past: the retried conflict as if returned at once.
                self.compare(key, expect, last)
            }
            (Expect::Token { key, token }, Seen::Token(real)) => {
                self.tokens.bind::<E>(*key, *token, real)
            }
            (Expect::Upserted { new, token }, Seen::Upserted(was, real)) if new == was => {
                self.tokens.bind::<E>(key, *token, real)
            }
            (Expect::Conflict(conflict), Seen::Conflict(clash)) => {
                let Conflict { client_token, .. } = *conflict;
                if clash.deleted != conflict.current.is_none() {
                    return Err("the conflict's state (stale or deleted) is not the model's".into());
                }
                // OCC_MODEL_IGNORE accepts a retryable conflict on a client's token.
                let ignored = client_token && self.retryable_client_tokens;
                if clash.retryable == client_token && !ignored {
                    return Err(if client_token {
                        "a conflict on a client's token is retryable (contract 4)".into()
                    } else {
                        "a conflict of a checked write is not retryable".into()
                    });
                }
                if let (Some(token), Some(real)) = (conflict.expected, &clash.expected) {
                    self.tokens.bind::<E>(key, token, real)?;
                }
                match (conflict.current, &clash.current) {
                    (Some(token), Some(real)) => self.tokens.bind::<E>(key, token, real),
                    (None, None) => Ok(()),
                    _ => Err("the conflict's current token".into()),
                }
            }
            (Expect::Transaction { steps, outcome }, Seen::Transaction(real_steps, real)) => {
                let (ran, modelled) = (real_steps.len(), steps.len());
                if ran != modelled {
                    return Err(format!("the closure ran {ran} steps, the model {modelled}"));
                }
                for (index, (expect, seen)) in steps.iter().zip(real_steps).enumerate() {
                    self.compare(key, expect, seen)
                        .map_err(|reason| format!("closure step {}: {reason}", index + 1))?;
                }
                let ended = format!("the transaction ended {real:?}, the model {outcome:?}");
                if outcome != real { Err(ended) } else { Ok(()) }
            }
            _ => Err("another outcome".into()),
        }
    }

    /// The checks after every step: the rows are the model's (values and tokens), and
    /// every entity a client holds is the model's (row, value, token), so each holds
    /// the row's token or its next checked write is a conflict.
    fn check(&mut self, model: &Model) -> Result<(), String> {
        let rows = self.executor.rows();
        let keys: Vec<Key> = rows.keys().chain(model.rows.keys()).copied().collect();
        for key in keys {
            let wrong = match (model.rows.get(&key), rows.get(&key)) {
                (Some(Row { value: want, .. }), Some((value, _))) if want != value => {
                    format!("row k{key} holds value {value}, the model {want}")
                }
                (Some(row), Some((_, token))) => {
                    let bound = self.tokens.bind::<E>(key, row.token, token);
                    bound.map_err(|reason| format!("row k{key}: {reason}"))?;
                    continue;
                }
                (Some(row), None) => format!("row k{key} is gone, the model holds {row:?}"),
                (None, Some(row)) => format!("row k{key} exists ({row:?}), the model has none"),
                (None, None) => continue,
            };
            return Err(wrong);
        }
        for (client, held) in model.held.iter().enumerate() {
            for (slot, expect) in held {
                let Some(entity) = self.held[client].get(slot) else {
                    return Err(format!("c{client} holds no entity for k{slot}"));
                };
                let (key, value, token) = entity.parts();
                let (model_key, model_value) = (expect.key, expect.value);
                if (key, value) != (model_key, model_value) {
                    return Err(format!(
                        "c{client}'s entity e[k{slot}] is row k{key} value {value}, the model's row k{model_key} value {model_value}"
                    ));
                }
                let bound = self.tokens.bind::<E>(key, expect.token, token);
                bound.map_err(|reason| format!("c{client}'s entity e[k{slot}]: {reason}"))?;
            }
        }
        Ok(())
    }
}

/// How long and from where a run goes: `OCC_MODEL_CASES` (programs per test, 64),
/// `OCC_MODEL_STEPS` (the longest program, 16), `OCC_MODEL_SEED` (the generator's
/// seed, 37), `OCC_MODEL_OPS` (a comma list of operations, all by default) and
/// `OCC_MODEL_IGNORE=client_token_retry`, which accepts a retryable conflict of a
/// write that took the client's token (issue 37 point 6), to look past it at others.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Run {
    pub(crate) cases: u32,
    pub(crate) steps: usize,
    pub(crate) seed: u64,
    pub(crate) ops: Ops,
    pub(crate) retryable_client_tokens: bool,
}

impl Run {
    pub(crate) fn from_env() -> Run {
        fn var<T: std::str::FromStr>(name: &str, default: T) -> T {
            std::env::var(name).map_or(default, |text| {
                let parsed = text.trim().parse();
                parsed.unwrap_or_else(|_| panic!("{name}: cannot read {text:?}"))
            })
        }
        Run {
            cases: var("OCC_MODEL_CASES", 64),
            steps: var("OCC_MODEL_STEPS", 16),
            seed: var("OCC_MODEL_SEED", 37),
            ops: std::env::var("OCC_MODEL_OPS").map_or(Ops::all(), |list| Ops::parse(&list)),
            retryable_client_tokens: match std::env::var("OCC_MODEL_IGNORE").as_deref() {
                Err(_) | Ok("") => false,
                Ok("client_token_retry") => true,
                Ok(other) => {
                    panic!("OCC_MODEL_IGNORE: unknown {other:?}, expected client_token_retry")
                }
            },
        }
    }
}

/// A failed run: why, and the shrunk program.
#[derive(Debug)]
pub(crate) struct Failure {
    pub(crate) reason: String,
    pub(crate) program: String,
    pub(crate) steps: usize,
}

/// Runs `run.cases` programs on `executor` from `run.seed`, each step checked against
/// the model; on a failure, proptest shrinks the program and this returns the
/// shortest it found.
pub(crate) fn check<E: Entity, X: Executor<E>>(
    executor: X,
    setup: Setup,
    run: Run,
) -> Result<(), Failure> {
    quiet_planned_panics();
    let mut seed = [0_u8; 32];
    seed[..8].copy_from_slice(&run.seed.to_le_bytes());
    let config = Config {
        cases: run.cases,
        failure_persistence: None,
        // Shrinking re-runs programs; each is short, so let it go to the end.
        max_shrink_iters: 4096,
        ..Config::default()
    };
    let mut runner =
        TestRunner::new_with_rng(config, TestRng::from_seed(RngAlgorithm::ChaCha, &seed));
    let strategy = Sequential::new(
        (1..=run.steps).into(),
        move || Model::strategy(setup),
        |model: &Model, op: &Op| model.clone().apply(op).is_ok(),
        Model::transitions,
        |model: Model, op: &Op| model.apply(op).expect("generated transitions are valid"),
    );
    let system = std::cell::RefCell::new(System {
        executor,
        held: vec![BTreeMap::new(); setup.clients],
        tokens: Tokens::default(),
        retryable_client_tokens: run.retryable_client_tokens,
        batch_keys: Vec::new(),
    });
    let result = runner.run(&strategy, |(initial, ops, seen)| {
        match execute(&mut system.borrow_mut(), &initial, &ops, seen.as_deref()) {
            Ok(()) => Ok(()),
            Err(Verdict::Invalid) => Err(TestCaseError::reject("not runnable")),
            Err(Verdict::Failed(reason)) => Err(TestCaseError::fail(reason)),
        }
    });
    match result {
        Ok(()) => Ok(()),
        Err(TestError::Fail(reason, (initial, ops, _))) => {
            let reason = reason.message().to_owned();
            let (initial, ops, reason) = minimize(&mut system.borrow_mut(), initial, ops, reason);
            let program = model::program(&initial, &ops);
            Err(Failure {
                reason,
                program,
                steps: ops.len(),
            })
        }
        Err(TestError::Abort(reason)) => panic!("the model-based run aborted: {reason}"),
    }
}

/// Why a program did not pass.
enum Verdict {
    /// The model cannot run it (a shrunk program that lost the step an entity came from).
    Invalid,
    Failed(String),
}

/// Runs one program from its initial rows, checking every step.
fn execute<E: Entity, X: Executor<E>>(
    system: &mut System<E, X>,
    initial: &Model,
    ops: &[Op],
    seen: Option<&AtomicUsize>,
) -> Result<(), Verdict> {
    let real = |(&key, row): (&Key, &Row)| (key, row.value, E::real_token(row.token));
    let rows: Vec<(Key, i32, E::Token)> = initial.rows.iter().map(real).collect();
    system.executor.reset(&rows);
    system.held = vec![BTreeMap::new(); initial.setup.clients];
    system.tokens = Tokens::default();
    for ((key, _, token), row) in rows.iter().zip(initial.rows.values()) {
        let bound = system.tokens.bind::<E>(*key, row.token, token);
        bound.map_err(Verdict::Failed)?;
    }
    if std::env::var_os("OCC_MODEL_VERBOSE").is_some() {
        eprintln!("program:\n{}", model::program(initial, ops));
    }
    let mut model = initial.clone();
    for (index, op) in ops.iter().enumerate() {
        if let Some(seen) = seen {
            seen.fetch_add(1, Ordering::SeqCst);
        }
        model = model.apply(op).map_err(|_| Verdict::Invalid)?;
        let step = panic::catch_unwind(AssertUnwindSafe(|| {
            system.apply(&model, op).and_then(|()| system.check(&model))
        }))
        .unwrap_or_else(|panic| {
            let text = panic.downcast_ref::<String>().cloned();
            let text = text.or_else(|| panic.downcast_ref::<&str>().map(|text| (*text).to_owned()));
            Err(format!("panicked: {}", text.unwrap_or_default()))
        });
        let failed = |reason| Verdict::Failed(format!("step {}: {op}\n      {reason}", index + 1));
        step.map_err(failed)?;
    }
    Ok(())
}

/// Shrinks proptest's shortest program further, as long as it still fails: drops whole
/// steps, steps of a transaction's closure and rows it starts from (proptest shrinks a
/// step as one value and keeps a closure's steps that a smaller closure does without).
fn minimize<E: Entity, X: Executor<E>>(
    system: &mut System<E, X>,
    mut initial: Model,
    mut ops: Vec<Op>,
    mut reason: String,
) -> (Model, Vec<Op>, String) {
    loop {
        let mut candidates: Vec<(Model, Vec<Op>)> = Vec::new();
        for index in 0..ops.len() {
            let mut fewer = ops.clone();
            fewer.remove(index);
            candidates.push((initial.clone(), fewer));
        }
        for (index, op) in ops.iter().enumerate() {
            if let Call::Transaction(closure) = &op.call {
                for inner in 0..closure.steps.len() {
                    let mut fewer = ops.clone();
                    if let Call::Transaction(closure) = &mut fewer[index].call {
                        closure.steps.remove(inner);
                    }
                    candidates.push((initial.clone(), fewer));
                }
            }
        }
        for &key in initial.rows.keys() {
            let present: Vec<Key> = initial.rows.keys().copied().filter(|&k| k != key).collect();
            candidates.push((Model::new(initial.setup, &present), ops.clone()));
        }
        let smaller = candidates.into_iter().find_map(|(start, program)| {
            match execute(system, &start, &program, None) {
                Err(Verdict::Failed(why)) => Some((start, program, why)),
                _ => None,
            }
        });
        let Some(smaller) = smaller else {
            return (initial, ops, reason);
        };
        (initial, ops, reason) = smaller;
    }
}

/// [`check`], failing the test with the shrunk program.
pub(crate) fn assert_model<E: Entity, X: Executor<E>>(
    name: &str,
    executor: X,
    setup: Setup,
    run: Run,
) {
    if let Err(failure) = check(executor, setup, run) {
        panic!(
            "{name}: the write API parted from the model (OCC_MODEL_SEED={} OCC_MODEL_CASES={}).\n\
             Shortest failing program ({} steps):\n{}  failed at {}",
            run.seed, run.cases, failure.steps, failure.program, failure.reason
        );
    }
}
