//! The reference model: what the table must hold, what each client's entities hold,
//! and what each call of a generated program must return, per the write API's contract
//! (DESIGN.md, "Testing sequences"; issue 37). Pure: no database, compiled once.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;

use proptest::prelude::*;
use proptest::sample::{select, subsequence};
use proptest::strategy::{BoxedStrategy, Union};

/// A row's key.
pub(crate) type Key = i32;

/// A token as the model knows it. Integer tokens are predicted exactly (the initial
/// token is 1, a write adds 1); a timestamp's value depends on the clock, so each fresh
/// timestamp token is a serial of its own and the executor binds it to the value it
/// sees (`runner::Tokens`).
pub(crate) type Tok = i64;

/// What a run models: the token kind, the backend's transaction semantics, the sizes.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Setup {
    /// Integer tokens, predicted exactly; otherwise serials.
    pub(crate) exact: bool,
    /// Whether a deleted key may be inserted again. Off for timestamp tokens: a row
    /// inserted again in the same second as an earlier life of the key may get one of
    /// that life's tokens, a coincidence of the clock no serial can predict.
    pub(crate) reinsert: bool,
    /// A statement error aborts the transaction around it (PostgreSQL).
    pub(crate) dooms: bool,
    /// Keys are `1..=keys`.
    pub(crate) keys: Key,
    /// Clients, each on a connection of its own.
    pub(crate) clients: usize,
    pub(crate) ops: Ops,
}

/// A set of operation kinds (`OCC_MODEL_OPS`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Ops(u32);

impl Ops {
    /// The names `OCC_MODEL_OPS` takes, in bit order.
    const NAMES: &'static str = "find save delete update_by_key delete_by_key insert upsert_some \
        upsert_none force_increment transaction save_all bulk_update soft_delete retry tracked \
        insert_from save_where";

    pub(crate) fn all() -> Ops {
        Ops((1 << Self::NAMES.split(' ').count()) - 1)
    }

    /// A comma list of names; `find` is always in (nothing else can be held without it
    /// or an insert).
    pub(crate) fn parse(list: &str) -> Ops {
        let names = list.split(',').map(str::trim).filter(|n| !n.is_empty());
        Ops(names.fold(1, |bits, name| bits | 1 << Self::bit(name)))
    }

    fn bit(name: &str) -> usize {
        let known = Self::NAMES.split(' ').position(|known| known == name);
        known.unwrap_or_else(|| panic!("OCC_MODEL_OPS: {name:?} is none of {}", Self::NAMES))
    }

    fn has(self, name: &str) -> bool {
        self.0 & (1 << Self::bit(name)) != 0
    }
}

/// A row as the model knows it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Row {
    pub(crate) value: i32,
    pub(crate) token: Tok,
}

/// An entity a client holds: the row it was read from, its (maybe edited) value and
/// the token it holds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Held {
    pub(crate) key: Key,
    pub(crate) value: i32,
    pub(crate) token: Tok,
}

/// One step of a program: a call by one client.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Op {
    pub(crate) client: usize,
    pub(crate) call: Call,
}

impl Op {
    fn new(client: usize, call: Call) -> Op {
        Op { client, call }
    }
}

/// A call. `key` names the entity the client holds for that key (its "slot"), or the
/// row a new entity is for; `value` is the value it writes. "Edited": the held entity's
/// value is set first.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Call {
    /// `find`: the client now holds the row as read.
    Find { key: Key },
    /// `save_checked` of the edited entity.
    Save { key: Key, value: i32 },
    /// `delete_checked` of the held entity.
    Delete { key: Key },
    /// `update_by_key` with the held token (a client's If-Match); on `Ok` the client
    /// holds its value and the returned token.
    UpdateByKey { key: Key, value: i32 },
    /// `delete_by_key` with the held token.
    DeleteByKey { key: Key },
    /// `insert_checked` of a new entity; on `Ok` the client holds it.
    Insert { key: Key, value: i32 },
    /// `insert_checked_from` of a form without the token column (a create request's
    /// body); on `Ok` the client holds the row it names, with the returned token.
    InsertFrom { key: Key, value: i32 },
    /// `save_checked_where` of the edited entity under `value >= floor` (on the row).
    SaveWhere { key: Key, value: i32, floor: i32 },
    /// `upsert_checked(Some(its token))` of the edited entity.
    UpsertSome { key: Key, value: i32 },
    /// `upsert_checked(None)` of a new entity; on `Ok` the client holds it.
    UpsertNone { key: Key, value: i32 },
    /// `force_increment` of the held entity.
    ForceIncrement { key: Key },
    /// `save_all_checked` of every held entity, edited (in key order): all or nothing.
    SaveAll { value: i32 },
    /// `bulk_update` of the rows with these keys: `value = value` and a fresh token each.
    BulkUpdate { keys: Vec<Key>, value: i32 },
    /// `soft_delete_checked` of the held entity, the marker `value = -1`.
    SoftDelete { key: Key },
    /// `update_by_key` with the held token inside the retry helper: a conflict on a
    /// client's token comes back at once (contract 4).
    RetryByKey { key: Key, value: i32 },
    /// The retry helper around `find(key)`, a new value and `save_checked`; on `Ok` the
    /// client holds what it saved.
    RetrySave { key: Key, value: i32 },
    /// `transaction` with the held entity as its `&mut` entity (`tracked`: as a
    /// `&mut Tracked<T>`, whose saves write what changed): the steps, then the end.
    Transaction {
        key: Key,
        steps: Vec<Inner>,
        end: End,
        tracked: bool,
    },
    /// `Tracked::new(e)`, edited, then `save_checked` (writes what changed) or `save_merging`.
    TrackedSave { key: Key, value: i32, merge: bool },
}

impl Call {
    /// The row the call is on; 0 for the calls on several rows (each of their rows is
    /// bound where it is checked).
    pub(crate) fn key(&self) -> Key {
        match *self {
            Call::SaveAll { .. } | Call::BulkUpdate { .. } => 0,
            Call::Find { key }
            | Call::Save { key, .. }
            | Call::Delete { key }
            | Call::UpdateByKey { key, .. }
            | Call::DeleteByKey { key }
            | Call::Insert { key, .. }
            | Call::InsertFrom { key, .. }
            | Call::SaveWhere { key, .. }
            | Call::UpsertSome { key, .. }
            | Call::UpsertNone { key, .. }
            | Call::ForceIncrement { key }
            | Call::SoftDelete { key }
            | Call::RetryByKey { key, .. }
            | Call::RetrySave { key, .. }
            | Call::Transaction { key, .. }
            | Call::TrackedSave { key, .. } => key,
        }
    }
}

/// What `save_merging` returned.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Merge {
    Saved,
    Merged,
    Overlap,
}

/// A step inside a transaction's closure, on the entity passed in. A step that fails
/// ends the closure with that error (`?`) unless it says it catches it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Inner {
    /// Sets the entity's value, then `save_checked`.
    Save { value: i32 },
    /// The same, but a conflict is caught and the closure carries on.
    CatchConflict { value: i32 },
    /// `delete_checked` of the entity.
    Delete,
    /// `insert_checked` of a new entity (dropped when the closure ends).
    Insert { key: Key, value: i32 },
    /// The same, but `Error::UniqueViolation` is caught: "insert, or carry on if the
    /// key is taken".
    CatchTaken { key: Key, value: i32 },
    /// Replaces the entity with the row `key` as found (`*entity = find(key)?`).
    Replace { key: Key },
    /// A statement the database refuses (a missing table), its error caught.
    CatchRefused,
}

/// How a transaction's closure ends when no step failed: `Ok`, an error, a panic.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum End {
    Commit,
    Fail,
    Panic,
}

/// What a conflict must say.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Conflict {
    /// The token the write expected (`None` for an upsert that expected no row).
    pub(crate) expected: Option<Tok>,
    /// The row's token now; `None` when the row is gone.
    pub(crate) current: Option<Tok>,
    /// The write took the token as an argument: not retryable (contract 4).
    pub(crate) client_token: bool,
}

/// What a call must return (`Nothing` before the first step). `Done`: `Ok` without a
/// token to check; `Token`: `Ok` with this token for row `key`; `Batch`: `Error::Batch`
/// with these entities' conflicts, by position; `Count`: the rows a bulk update wrote;
/// `Unmatched`: a checked write whose token matched but whose condition did not
/// (`ConflictState::Unmatched`, never retried); `Refused`: some database error (also
/// any statement after one in a transaction the database aborted); `Transaction`: each
/// step's outcome, in order, and how it ended.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Expect {
    Nothing,
    Done,
    Token { key: Key, token: Tok },
    Upserted { new: bool, token: Tok },
    NotFound,
    Batch(Vec<(usize, Conflict)>),
    Count(usize),
    Merge(Merge),
    Conflict(Conflict),
    Unmatched { expected: Tok },
    Taken,
    Refused,
    Transaction { steps: Vec<Self>, outcome: Outcome },
}

/// How a transaction ends, as its caller sees it: `Ok`, `Err`, or the closure's panic
/// resumed in the caller after the rollback.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Outcome {
    Committed,
    RolledBack,
    Panicked,
}

/// The model's state.
#[derive(Clone, Debug)]
pub(crate) struct Model {
    pub(crate) setup: Setup,
    pub(crate) rows: BTreeMap<Key, Row>,
    /// Keys ever inserted (for `Setup::reinsert`).
    pub(crate) used: BTreeSet<Key>,
    /// Each client's entities, by the key of their slot.
    pub(crate) held: Vec<BTreeMap<Key, Held>>,
    /// The last serial token handed out (timestamp tokens).
    pub(crate) serial: Tok,
    /// What the last step must have returned.
    pub(crate) expect: Expect,
}

/// A program the model cannot run: generated programs never are, shrunk ones may be.
#[derive(Debug)]
pub(crate) struct Invalid;

impl Model {
    /// The initial state: `rows` seeded with value `key * 100`, nothing held.
    pub(crate) fn new(setup: Setup, present: &[Key]) -> Model {
        let mut model = Model {
            setup,
            rows: BTreeMap::new(),
            used: BTreeSet::new(),
            held: vec![BTreeMap::new(); setup.clients],
            serial: 0,
            expect: Expect::Nothing,
        };
        for &key in present {
            model.insert(key, key * 100).expect("a free key");
        }
        model
    }

    /// The initial state: a random subset of the keys present.
    pub(crate) fn strategy(setup: Setup) -> BoxedStrategy<Model> {
        proptest::collection::btree_set(1..=setup.keys, 0..=setup.keys as usize)
            .prop_map(move |present| Model::new(setup, &present.into_iter().collect::<Vec<_>>()))
            .boxed()
    }

    fn next(&mut self, token: Tok) -> Tok {
        if self.setup.exact {
            token + 1
        } else {
            self.serial += 1;
            self.serial
        }
    }

    /// Writes `value` to row `key` at the token after `token`, and returns it.
    fn write(&mut self, key: Key, token: Tok, value: i32) -> Tok {
        let token = self.next(token);
        self.rows.insert(key, Row { value, token });
        token
    }

    /// Whether a new row may take `key` (`Setup::reinsert`).
    fn insertable(&self, key: Key) -> bool {
        self.setup.reinsert || self.rows.contains_key(&key) || !self.used.contains(&key)
    }

    /// The conflict of a write that expected `expected` on row `key`.
    fn conflict(&self, key: Key, expected: Option<Tok>, client_token: bool) -> Conflict {
        let current = self.rows.get(&key).map(|row| row.token);
        Conflict {
            expected,
            current,
            client_token,
        }
    }

    /// A checked write of an entity holding `token` on row `key`: whether it matches.
    fn matches(&self, key: Key, token: Tok) -> bool {
        self.rows.get(&key).is_some_and(|row| row.token == token)
    }

    /// Inserts a new row (callers check that the key is free).
    fn insert(&mut self, key: Key, value: i32) -> Result<Tok, Invalid> {
        if self.rows.contains_key(&key) || !self.insertable(key) {
            return Err(Invalid);
        }
        let token = self.next(0);
        self.rows.insert(key, Row { value, token });
        self.used.insert(key);
        Ok(token)
    }

    fn held(&self, client: usize, key: Key) -> Result<Held, Invalid> {
        self.held[client].get(&key).copied().ok_or(Invalid)
    }

    /// A checked write of the entity `client` holds for `key`, its value set to `edit`
    /// first: `write` when it holds the row's token (it writes and says what the call
    /// returns), else a conflict. The client holds the entity as edited and written.
    fn checked(
        &mut self,
        client: usize,
        key: Key,
        edit: Option<i32>,
        client_token: bool,
        write: impl FnOnce(&mut Model, &mut Held, Row) -> Expect,
    ) -> Result<Expect, Invalid> {
        let mut held = self.held(client, key)?;
        held.value = edit.unwrap_or(held.value);
        let expect = match self.rows.get(&key).copied() {
            Some(row) if row.token == held.token => write(self, &mut held, row),
            _ => Expect::Conflict(self.conflict(key, Some(held.token), client_token)),
        };
        self.held[client].insert(key, held);
        Ok(expect)
    }

    /// An insert of a new entity: `taken` when the key is, else the client holds it and
    /// the call returns `inserted(its token)`.
    fn create(
        &mut self,
        client: usize,
        key: Key,
        value: i32,
        taken: Expect,
        inserted: impl FnOnce(Tok) -> Expect,
    ) -> Result<Expect, Invalid> {
        if self.rows.contains_key(&key) {
            return Ok(taken);
        }
        let token = self.insert(key, value)?;
        self.held[client].insert(key, Held { key, value, token });
        Ok(inserted(token))
    }

    /// Runs `op`: the state after it, with `expect` saying what it must return.
    pub(crate) fn apply(mut self, op: &Op) -> Result<Model, Invalid> {
        let client = op.client;
        if client >= self.setup.clients {
            return Err(Invalid);
        }
        let expect = match op.call {
            // A read; `RetrySave` then writes its value.
            Call::Find { key } | Call::RetrySave { key, .. } => {
                match self.rows.get(&key).copied() {
                    Some(Row { value, token }) => {
                        let (value, token) = match op.call {
                            Call::RetrySave { value, .. } => (value, self.write(key, token, value)),
                            _ => (value, token),
                        };
                        self.held[client].insert(key, Held { key, value, token });
                        Expect::Done
                    }
                    None => Expect::NotFound,
                }
            }
            // A soft delete stores its marker, a forced increment the value as stored.
            Call::Save { key, .. } | Call::ForceIncrement { key } | Call::SoftDelete { key } => {
                let soft = matches!(op.call, Call::SoftDelete { .. });
                let edit = match op.call {
                    Call::Save { value, .. } => Some(value),
                    _ => None,
                };
                self.checked(client, key, edit, false, |model, held, row| {
                    let stored = if soft { -1 } else { edit.unwrap_or(row.value) };
                    held.token = model.write(key, held.token, stored);
                    Expect::Done
                })?
            }
            Call::SaveWhere { key, value, floor } => {
                self.checked(client, key, Some(value), false, |model, held, row| {
                    let expected = held.token;
                    if row.value < floor {
                        return Expect::Unmatched { expected };
                    }
                    held.token = model.write(key, held.token, value);
                    Expect::Done
                })?
            }
            Call::Delete { key } | Call::DeleteByKey { key } => {
                let client_token = matches!(op.call, Call::DeleteByKey { .. });
                self.checked(client, key, None, client_token, |model, _, _| {
                    model.rows.remove(&key);
                    Expect::Done
                })?
            }
            Call::UpdateByKey { key, value } | Call::RetryByKey { key, value } => {
                self.checked(client, key, None, true, |model, held, _| {
                    let token = model.write(key, held.token, value);
                    *held = Held { key, value, token };
                    Expect::Token { key, token }
                })?
            }
            Call::Insert { key, value } | Call::InsertFrom { key, value } => {
                let inserted = |token| Expect::Token { key, token };
                self.create(client, key, value, Expect::Taken, inserted)?
            }
            // Contract 3: a stated token never creates or re-creates a row.
            Call::UpsertSome { key, value } => {
                self.checked(client, key, Some(value), true, |model, held, _| {
                    let token = model.write(key, held.token, value);
                    held.token = token;
                    Expect::Upserted { new: false, token }
                })?
            }
            Call::UpsertNone { key, value } => {
                let taken = Expect::Conflict(self.conflict(key, None, true));
                let inserted = |token| Expect::Upserted { new: true, token };
                self.create(client, key, value, taken, inserted)?
            }
            Call::SaveAll { value } => {
                let held = self.held[client].clone();
                if held.is_empty() {
                    return Err(Invalid);
                }
                let stale = |(index, e): (usize, &Held)| {
                    let conflict = self.conflict(e.key, Some(e.token), false);
                    (!self.matches(e.key, e.token)).then_some((index, conflict))
                };
                let conflicts: Vec<(usize, Conflict)> =
                    held.values().enumerate().filter_map(stale).collect();
                for (slot, mut entity) in held {
                    entity.value = value;
                    if conflicts.is_empty() {
                        entity.token = self.write(entity.key, entity.token, value);
                    }
                    self.held[client].insert(slot, entity);
                }
                if conflicts.is_empty() {
                    Expect::Done
                } else {
                    Expect::Batch(conflicts)
                }
            }
            Call::BulkUpdate { ref keys, value } => {
                let mut written = 0;
                for &key in keys {
                    if let Some(row) = self.rows.get(&key).copied() {
                        self.write(key, row.token, value);
                        written += 1;
                    }
                }
                Expect::Count(written)
            }
            Call::TrackedSave { key, value, merge } => {
                let mut held = self.held(client, key)?;
                // The value as read: a tracked save writes it only if edited.
                let original = held.value;
                let mine = value != original;
                held.value = value;
                let expect = match self.rows.get(&key).copied() {
                    Some(row) if row.token == held.token => {
                        let stored = if mine { value } else { row.value };
                        held.token = self.write(key, held.token, stored);
                        if merge {
                            Expect::Merge(Merge::Saved)
                        } else {
                            Expect::Done
                        }
                    }
                    Some(row) if merge && mine && row.value != original && row.value != value => {
                        Expect::Merge(Merge::Overlap)
                    }
                    Some(row) if merge => {
                        // Rebased on their row; what differs from it is written.
                        held.value = if mine { value } else { row.value };
                        held.token = self.write(key, row.token, held.value);
                        Expect::Merge(Merge::Merged)
                    }
                    _ => Expect::Conflict(self.conflict(key, Some(held.token), false)),
                };
                self.held[client].insert(key, held);
                expect
            }
            Call::Transaction {
                key,
                ref steps,
                end,
                tracked,
            } => return self.transaction(client, key, steps, end, tracked),
        };
        self.expect = expect;
        Ok(self)
    }

    /// A transaction: the closure's steps on a copy, kept when it commits; on a
    /// rollback the model is as before and the entity as it was passed in, but for
    /// the edits of its value when it is still the same row (contract 1, 2 and 5).
    fn transaction(
        self,
        client: usize,
        key: Key,
        closure: &[Inner],
        end: End,
        tracked: bool,
    ) -> Result<Model, Invalid> {
        let passed = self.held(client, key)?;
        let mut inside = self.clone();
        let mut entity = passed;
        // A tracked entity's value as read (or as last saved).
        let mut original = passed.value;
        let mut steps = Vec::new();
        // A statement error the database does not forgive (PostgreSQL).
        let mut doomed = false;
        let mut failed = false;
        for step in closure {
            if let Inner::Save { value } | Inner::CatchConflict { value } = *step {
                entity.value = value;
            }
            let catches = matches!(step, Inner::CatchConflict { .. } | Inner::CatchTaken { .. });
            let stale = Expect::Conflict(inside.conflict(entity.key, Some(entity.token), false));
            let (expect, carry_on) = match *step {
                // Any statement in an aborted transaction fails, and nothing catches it.
                _ if doomed && *step != Inner::CatchRefused => (Expect::Refused, false),
                Inner::Save { value } | Inner::CatchConflict { value } => {
                    match inside.rows.get(&entity.key).copied() {
                        Some(row) if row.token == entity.token => {
                            let kept = tracked && value == original;
                            let stored = if kept { row.value } else { value };
                            entity.token = inside.write(entity.key, entity.token, stored);
                            original = value;
                            (Expect::Done, true)
                        }
                        _ => (stale, catches),
                    }
                }
                Inner::Delete if inside.matches(entity.key, entity.token) => {
                    inside.rows.remove(&entity.key);
                    (Expect::Done, true)
                }
                Inner::Delete => (stale, false),
                // Contract 2: a taken key leaves the transaction usable.
                Inner::Insert { key, .. } | Inner::CatchTaken { key, .. }
                    if inside.rows.contains_key(&key) =>
                {
                    (Expect::Taken, catches)
                }
                Inner::Insert { key, value } | Inner::CatchTaken { key, value } => {
                    let token = inside.insert(key, value)?;
                    (Expect::Token { key, token }, true)
                }
                Inner::Replace { key } => match inside.rows.get(&key).copied() {
                    Some(Row { value, token }) => {
                        entity = Held { key, value, token };
                        original = value;
                        (Expect::Done, true)
                    }
                    None => (Expect::NotFound, false),
                },
                Inner::CatchRefused => {
                    doomed = inside.setup.dooms;
                    (Expect::Refused, true)
                }
            };
            steps.push(expect);
            if !carry_on {
                failed = true;
                break;
            }
        }
        let outcome = match (failed, end) {
            (true, _) | (false, End::Fail) => Outcome::RolledBack,
            (false, End::Panic) => Outcome::Panicked,
            // Contract 1: never Ok for a transaction the database rolled back.
            (false, End::Commit) if doomed => Outcome::RolledBack,
            (false, End::Commit) => Outcome::Committed,
        };
        let mut after = if outcome == Outcome::Committed {
            inside.held[client].remove(&key);
            inside.held[client].insert(entity.key, entity);
            inside
        } else {
            // Serials once handed out stay taken: a later fresh token is another one.
            let mut after = self;
            after.serial = inside.serial;
            if entity.key == passed.key {
                let token = passed.token;
                after.held[client].insert(key, Held { token, ..entity });
            }
            after
        };
        after.expect = Expect::Transaction { steps, outcome };
        Ok(after)
    }

    /// The transitions from this state: every operation on what the clients hold,
    /// weighted so that stale entities, deleted rows and taken keys come up often.
    pub(crate) fn transitions(&self) -> BoxedStrategy<Op> {
        let (ops, clients, keys) = (self.setup.ops, self.setup.clients, self.setup.keys);
        let value = 1..1000_i32;
        let mut slots: Vec<(usize, Key)> = Vec::new();
        for (client, held) in self.held.iter().enumerate() {
            slots.extend(held.keys().map(|&key| (client, key)));
        }
        // Stale entities (their row was written or deleted since) are picked as often
        // as all the others together: they are where a missing check shows.
        let stale = |&(c, key): &(usize, Key)| !self.matches(key, self.held[c][&key].token);
        let stale: Vec<(usize, Key)> = slots.iter().copied().filter(stale).collect();
        let insertable: Vec<Key> = (1..=keys).filter(|&key| self.insertable(key)).collect();
        let present: Vec<Key> = self.rows.keys().copied().collect();
        // A call by any client on a row, and one that also writes a value.
        let on_row = |keys: BoxedStrategy<Key>, call: fn(Key) -> Call| {
            (0..clients, keys)
                .prop_map(move |(client, key)| Op::new(client, call(key)))
                .boxed()
        };
        let on_row_value = |keys: BoxedStrategy<Key>, call: fn(Key, i32) -> Call| {
            (0..clients, keys, value.clone())
                .prop_map(move |(client, key, value)| Op::new(client, call(key, value)))
                .boxed()
        };

        // `|fields| Call::$variant { fields }`, as a `fn`.
        macro_rules! call {
            ($variant:ident $($field:ident)*) => { |$($field),*| Call::$variant { $($field),* } };
        }
        let mut options = vec![(2, on_row((1..=keys).boxed(), call!(Find key)))];
        if !present.is_empty() {
            options.push((5, on_row(select(present).boxed(), call!(Find key))));
        }
        let mut add = |name: &str, weight: u32, strategy: BoxedStrategy<Op>| {
            if ops.has(name) {
                options.push((weight, strategy));
            }
        };
        if !insertable.is_empty() {
            let pick = || select(insertable.clone()).boxed();
            add("insert", 3, on_row_value(pick(), call!(Insert key value)));
            add(
                "insert_from",
                2,
                on_row_value(pick(), call!(InsertFrom key value)),
            );
            add(
                "upsert_none",
                2,
                on_row_value(pick(), call!(UpsertNone key value)),
            );
        }
        let all = subsequence((1..=keys).collect::<Vec<_>>(), 1..=keys as usize);
        let bulk = (0..clients, all, value.clone());
        let bulk = bulk
            .prop_map(|(client, keys, value)| Op::new(client, Call::BulkUpdate { keys, value }));
        add("bulk_update", 1, bulk.boxed());
        add(
            "retry",
            1,
            on_row_value((1..=keys).boxed(), call!(RetrySave key value)),
        );
        if !slots.is_empty() {
            let slot = if stale.is_empty() {
                select(slots).boxed()
            } else {
                prop_oneof![select(slots), select(stale)].boxed()
            };
            // A call on a held entity, and one that also writes a value.
            let held = |call: fn(Key) -> Call| {
                let slot = slot.clone();
                slot.prop_map(move |(client, key)| Op::new(client, call(key)))
                    .boxed()
            };
            let held_value = |call: fn(Key, i32) -> Call| {
                (slot.clone(), value.clone())
                    .prop_map(move |((client, key), value)| Op::new(client, call(key, value)))
                    .boxed()
            };
            add("save", 6, held_value(call!(Save key value)));
            // Floors below most values, so that both outcomes are common.
            let save_where = call!(SaveWhere key value floor);
            let save_where = (slot.clone(), value.clone(), 0..500_i32).prop_map(
                move |((client, key), value, floor)| Op::new(client, save_where(key, value, floor)),
            );
            add("save_where", 3, save_where.boxed());
            add("delete", 2, held(call!(Delete key)));
            add("update_by_key", 3, held_value(call!(UpdateByKey key value)));
            add("delete_by_key", 2, held(call!(DeleteByKey key)));
            add("upsert_some", 3, held_value(call!(UpsertSome key value)));
            add("force_increment", 1, held(call!(ForceIncrement key)));
            add("soft_delete", 1, held(call!(SoftDelete key)));
            add("retry", 1, held_value(call!(RetryByKey key value)));
            let holders: Vec<usize> = (0..clients).filter(|&c| !self.held[c].is_empty()).collect();
            let save_all = (select(holders), value.clone())
                .prop_map(|(client, value)| Op::new(client, Call::SaveAll { value }));
            add("save_all", 2, save_all.boxed());
            let tracked_save = call!(TrackedSave key value merge);
            let tracked_save = (slot.clone(), value.clone(), any::<bool>()).prop_map(
                move |((client, key), value, merge)| {
                    Op::new(client, tracked_save(key, value, merge))
                },
            );
            add("tracked", 3, tracked_save.boxed());
            let tracked = if ops.has("tracked") {
                any::<bool>().boxed()
            } else {
                Just(false).boxed()
            };
            let closure = proptest::collection::vec(Inner::strategy(self), 0..=3);
            let end =
                prop_oneof![2 => Just(End::Commit), 2 => Just(End::Fail), 1 => Just(End::Panic)];
            let transaction = call!(Transaction key steps end tracked);
            let transaction = (slot, closure, end, tracked).prop_map(
                move |((client, key), steps, end, tracked)| {
                    Op::new(client, transaction(key, steps, end, tracked))
                },
            );
            add("transaction", 5, transaction.boxed());
        }
        Union::new_weighted(options).boxed()
    }
}

impl Inner {
    fn strategy(model: &Model) -> BoxedStrategy<Inner> {
        let (keys, value) = (model.setup.keys, 1..1000_i32);
        let save = value.clone().prop_map(|value| Inner::Save { value });
        let conflict = value
            .clone()
            .prop_map(|value| Inner::CatchConflict { value });
        let replace = (1..=keys).prop_map(|key| Inner::Replace { key });
        let mut options: Vec<(u32, BoxedStrategy<Inner>)> = vec![
            (4, save.boxed()),
            (2, conflict.boxed()),
            (1, Just(Inner::Delete).boxed()),
            (1, replace.boxed()),
            (1, Just(Inner::CatchRefused).boxed()),
        ];
        if !model.rows.is_empty() {
            // Another row that exists: the entity then holds a row it was not read as.
            let present: Vec<Key> = model.rows.keys().copied().collect();
            let replace = select(present).prop_map(|key| Inner::Replace { key });
            options.push((3, replace.boxed()));
        }
        // Inserts only where the model allows a new row: a free key never used, or a
        // taken one (a unique violation).
        let insertable: Vec<Key> = (1..=keys).filter(|&key| model.insertable(key)).collect();
        if !insertable.is_empty() {
            let new = (select(insertable), value);
            let insert = new
                .clone()
                .prop_map(|(key, value)| Inner::Insert { key, value });
            options.push((1, insert.boxed()));
            let catch = new.prop_map(|(key, value)| Inner::CatchTaken { key, value });
            options.push((3, catch.boxed()));
        }
        Union::new_weighted(options).boxed()
    }
}

impl fmt::Display for Op {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "c{}: ", self.client)?;
        match &self.call {
            Call::Find { key } => write!(f, "find(k{key})"),
            Call::Save { key, value } => write!(f, "e[k{key}].value = {value}; save_checked"),
            Call::Delete { key } => write!(f, "e[k{key}].delete_checked"),
            Call::UpdateByKey { key, value } => {
                write!(f, "update_by_key(k{key}, e[k{key}].token, value = {value})")
            }
            Call::DeleteByKey { key } => write!(f, "delete_by_key(k{key}, e[k{key}].token)"),
            Call::Insert { key, value } => write!(f, "new(k{key}, {value}).insert_checked"),
            Call::InsertFrom { key, value } => {
                write!(f, "insert_checked_from(form(k{key}, {value}))")
            }
            Call::SaveWhere { key, value, floor } => write!(
                f,
                "e[k{key}].value = {value}; save_checked_where(value >= {floor})"
            ),
            Call::UpsertSome { key, value } => write!(
                f,
                "e[k{key}].value = {value}; upsert_checked(Some(e[k{key}].token))"
            ),
            Call::UpsertNone { key, value } => {
                write!(f, "new(k{key}, {value}).upsert_checked(None)")
            }
            Call::ForceIncrement { key } => write!(f, "e[k{key}].force_increment"),
            Call::TrackedSave { key, value, merge } => {
                let how = if *merge { "merging" } else { "checked" };
                let tracked = format!("t = Tracked::new(e[k{key}]); t.edit().value = {value}");
                write!(f, "{tracked}; t.save_{how}")
            }
            Call::SaveAll { value } => write!(f, "every e[..].value = {value}; save_all_checked"),
            Call::BulkUpdate { keys, value } => {
                write!(f, "bulk_update(id IN {keys:?}, value = {value})")
            }
            Call::SoftDelete { key } => write!(f, "e[k{key}].soft_delete_checked(value = -1)"),
            Call::RetryByKey { key, value } => write!(
                f,
                "retry(|conn| update_by_key(k{key}, e[k{key}].token, value = {value}))"
            ),
            Call::RetrySave { key, value } => write!(
                f,
                "retry(|conn| {{ e = find(k{key})?; e.value = {value}; e.save_checked }})"
            ),
            Call::Transaction {
                key,
                steps,
                end,
                tracked,
            } => {
                let passed = if *tracked {
                    format!("&mut Tracked::new(e[k{key}])")
                } else {
                    format!("&mut e[k{key}]")
                };
                write!(f, "transaction({passed}, |conn, e| {{ ")?;
                for step in steps {
                    write!(f, "{step}; ")?;
                }
                match end {
                    End::Commit => write!(f, "Ok(()) }})"),
                    End::Fail => write!(f, "Err(..) }})"),
                    End::Panic => write!(f, "panic!() }})"),
                }
            }
        }
    }
}

impl fmt::Display for Inner {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Inner::Save { value } => write!(f, "e.value = {value}; e.save_checked(conn)?"),
            Inner::CatchConflict { value } => write!(
                f,
                "e.value = {value}; e.save_checked(conn) (conflict caught)"
            ),
            Inner::Delete => write!(f, "e.delete_checked(conn)?"),
            Inner::Insert { key, value } => write!(f, "new(k{key}, {value}).insert_checked(conn)?"),
            Inner::CatchTaken { key, value } => write!(
                f,
                "new(k{key}, {value}).insert_checked(conn) (UniqueViolation caught)"
            ),
            Inner::Replace { key } => write!(f, "*e = find(conn, k{key})?"),
            Inner::CatchRefused => write!(f, "a refused statement (error caught)"),
        }
    }
}

/// The program as a list, one numbered step a line, after the rows it starts from.
pub(crate) fn program(initial: &Model, ops: &[Op]) -> String {
    let mut text = String::from("  rows at start:");
    if initial.rows.is_empty() {
        text.push_str(" none");
    }
    for (key, row) in &initial.rows {
        text.push_str(&format!(" k{key}={}", row.value));
    }
    text.push('\n');
    for (index, op) in ops.iter().enumerate() {
        text.push_str(&format!("  {:>2}. {op}\n", index + 1));
    }
    text
}
