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

/// One step of a program: a call by one client on row `key`, writing `value`. `key`
/// names the entity the client holds for that key (its "slot"), or the row a new entity
/// is for; it is 0 for the calls on several rows (each of their rows is bound where it
/// is checked), and `value` is 0 for the calls that write none.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Op {
    pub(crate) client: usize,
    pub(crate) call: Call,
    pub(crate) key: Key,
    pub(crate) value: i32,
}

impl Op {
    fn new(client: usize, call: Call, key: Key, value: i32) -> Op {
        Op {
            client,
            call,
            key,
            value,
        }
    }
}

/// A call. "Edited": the held entity's value is set to `value` first.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Call {
    /// `find`: the client now holds the row as read.
    Find,
    /// `save_checked` of the edited entity.
    Save,
    /// `delete_checked` of the held entity.
    Delete,
    /// `update_by_key` with the held token (a client's If-Match); on `Ok` the client
    /// holds its value and the returned token.
    UpdateByKey,
    /// `delete_by_key` with the held token.
    DeleteByKey,
    /// `insert_checked` of a new entity; on `Ok` the client holds it.
    Insert,
    /// `insert_checked_from` of a form without the token column (a create request's
    /// body); on `Ok` the client holds the row it names, with the returned token.
    InsertFrom,
    /// `save_checked_where` of the edited entity under `value >= floor` (on the row).
    SaveWhere { floor: i32 },
    /// `upsert_checked(Some(its token))` of the edited entity.
    UpsertSome,
    /// `upsert_checked(None)` of a new entity; on `Ok` the client holds it.
    UpsertNone,
    /// `force_increment` of the held entity.
    ForceIncrement,
    /// `save_all_checked` of every held entity, edited (in key order): all or nothing.
    SaveAll,
    /// `bulk_update` of the rows with these keys: `value = value` and a fresh token each.
    BulkUpdate { keys: Vec<Key> },
    /// `soft_delete_checked` of the held entity, the marker `value = -1`.
    SoftDelete,
    /// `update_by_key` with the held token inside the retry helper: a conflict on a
    /// client's token comes back at once (contract 4).
    RetryByKey,
    /// The retry helper around `find(key)`, a new value and `save_checked`; on `Ok` the
    /// client holds what it saved.
    RetrySave,
    /// `transaction` with the held entity as its `&mut` entity.
    Transaction(Transaction),
    /// `Tracked::new(e)`, edited, then `save_checked` (writes what changed) or `save_merging`.
    TrackedSave { merge: bool },
}

/// A transaction's closure, on the held entity (`tracked`: as a `&mut Tracked<T>`, whose
/// saves write what changed): the steps, then the end.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Transaction {
    pub(crate) steps: Vec<Inner>,
    pub(crate) end: End,
    pub(crate) tracked: bool,
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
        let present = proptest::collection::btree_set(1..=setup.keys, 0..=setup.keys as usize);
        let model = present.prop_map(move |keys| Model::new(setup, &Vec::from_iter(keys)));
        model.boxed()
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
        self.used.insert(key);
        Ok(self.write(key, 0, value))
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

    /// Runs `op`: the state after it, with `expect` saying what it must return.
    pub(crate) fn apply(mut self, op: &Op) -> Result<Model, Invalid> {
        let (client, call, key, value) = (op.client, &op.call, op.key, op.value);
        if client >= self.setup.clients {
            return Err(Invalid);
        }
        let expect = match *call {
            // A read; `RetrySave` then writes its value.
            Call::Find | Call::RetrySave => match self.rows.get(&key).copied() {
                Some(row) => {
                    let (value, token) = match call {
                        Call::RetrySave => (value, self.write(key, row.token, value)),
                        _ => (row.value, row.token),
                    };
                    self.held[client].insert(key, Held { key, value, token });
                    Expect::Done
                }
                None => Expect::NotFound,
            },
            // A soft delete stores its marker, a forced increment the value as stored.
            Call::Save | Call::ForceIncrement | Call::SoftDelete => {
                let soft = *call == Call::SoftDelete;
                let edit = (*call == Call::Save).then_some(value);
                self.checked(client, key, edit, false, |model, held, row| {
                    let stored = if soft { -1 } else { edit.unwrap_or(row.value) };
                    held.token = model.write(key, held.token, stored);
                    Expect::Done
                })?
            }
            Call::SaveWhere { floor } => {
                self.checked(client, key, Some(value), false, |model, held, row| {
                    let expected = held.token;
                    if row.value < floor {
                        return Expect::Unmatched { expected };
                    }
                    held.token = model.write(key, held.token, value);
                    Expect::Done
                })?
            }
            Call::Delete | Call::DeleteByKey => {
                let client_token = *call == Call::DeleteByKey;
                self.checked(client, key, None, client_token, |model, _, _| {
                    model.rows.remove(&key);
                    Expect::Done
                })?
            }
            Call::UpdateByKey | Call::RetryByKey => {
                self.checked(client, key, None, true, |model, held, _| {
                    let token = model.write(key, held.token, value);
                    *held = Held { key, value, token };
                    Expect::Token { key, token }
                })?
            }
            // A new entity: refused on a taken key, else the client holds it.
            Call::Insert | Call::InsertFrom | Call::UpsertNone if self.rows.contains_key(&key) => {
                match call {
                    Call::UpsertNone => Expect::Conflict(self.conflict(key, None, true)),
                    _ => Expect::Taken,
                }
            }
            Call::Insert | Call::InsertFrom | Call::UpsertNone => {
                let token = self.insert(key, value)?;
                self.held[client].insert(key, Held { key, value, token });
                match call {
                    Call::UpsertNone => Expect::Upserted { new: true, token },
                    _ => Expect::Token { key, token },
                }
            }
            // Contract 3: a stated token never creates or re-creates a row.
            Call::UpsertSome => {
                self.checked(client, key, Some(value), true, |model, held, _| {
                    let token = model.write(key, held.token, value);
                    held.token = token;
                    Expect::Upserted { new: false, token }
                })?
            }
            Call::SaveAll => {
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
            Call::BulkUpdate { ref keys } => {
                let mut written = 0;
                for &key in keys {
                    if let Some(row) = self.rows.get(&key).copied() {
                        self.write(key, row.token, value);
                        written += 1;
                    }
                }
                Expect::Count(written)
            }
            Call::TrackedSave { merge } => {
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
            Call::Transaction(ref closure) => return self.transaction(client, key, closure),
        };
        self.expect = expect;
        Ok(self)
    }

    /// A transaction: the closure's steps on a copy, kept when it commits; on a
    /// rollback the model is as before and the entity as it was passed in, but for
    /// the edits of its value when it is still the same row (contract 1, 2 and 5).
    fn transaction(self, client: usize, key: Key, closure: &Transaction) -> Result<Model, Invalid> {
        let passed = self.held(client, key)?;
        let mut inside = self.clone();
        let mut entity = passed;
        // A tracked entity's value as read (or as last saved).
        let mut original = passed.value;
        let mut steps = Vec::new();
        // A statement error the database does not forgive (PostgreSQL).
        let mut doomed = false;
        let mut failed = false;
        for step in &closure.steps {
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
                            let kept = closure.tracked && value == original;
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
        let outcome = match (failed, closure.end) {
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
        // A call by a client on a row and the value it writes (0 when none), as drawn.
        let drawn = |targets: BoxedStrategy<(usize, Key)>, values, calls| {
            let op = |((client, key), value, call)| Op::new(client, call, key, value);
            (targets, values, calls).prop_map(op).boxed()
        };
        let (any_value, no_value) = (|| value.clone().boxed(), || Just(0).boxed());
        // A call by any client on a row, and one that also writes a value.
        let any_client = |keys| (0..clients, keys).boxed();
        let on_row = |keys, call: Call| drawn(any_client(keys), no_value(), Just(call).boxed());
        let on_row_value =
            |keys, call: Call| drawn(any_client(keys), any_value(), Just(call).boxed());
        let mut options = vec![(2, on_row((1..=keys).boxed(), Call::Find))];
        if !present.is_empty() {
            options.push((5, on_row(select(present).boxed(), Call::Find)));
        }
        let mut add = |name: &str, weight: u32, strategy: BoxedStrategy<Op>| {
            if ops.has(name) {
                options.push((weight, strategy));
            }
        };
        if !insertable.is_empty() {
            let pick = || select(insertable.clone()).boxed();
            add("insert", 3, on_row_value(pick(), Call::Insert));
            add("insert_from", 2, on_row_value(pick(), Call::InsertFrom));
            add("upsert_none", 2, on_row_value(pick(), Call::UpsertNone));
        }
        let all = subsequence((1..=keys).collect::<Vec<_>>(), 1..=keys as usize);
        let bulk = |(client, keys, value)| Op::new(client, Call::BulkUpdate { keys }, 0, value);
        let bulk = (0..clients, all, value.clone()).prop_map(bulk);
        add("bulk_update", 1, bulk.boxed());
        let retry_save = on_row_value((1..=keys).boxed(), Call::RetrySave);
        add("retry", 1, retry_save);
        if !slots.is_empty() {
            let slot = if stale.is_empty() {
                select(slots).boxed()
            } else {
                prop_oneof![select(slots), select(stale)].boxed()
            };
            // A call on a held entity.
            let on_held = |values, calls| drawn(slot.clone(), values, calls);
            let held = |call: Call| on_held(no_value(), Just(call).boxed());
            let held_value = |call: Call| on_held(any_value(), Just(call).boxed());
            add("save", 6, held_value(Call::Save));
            // Floors below most values, so that both outcomes are common.
            let floors = (0..500_i32).prop_map(|floor| Call::SaveWhere { floor });
            add("save_where", 3, on_held(any_value(), floors.boxed()));
            add("delete", 2, held(Call::Delete));
            add("update_by_key", 3, held_value(Call::UpdateByKey));
            add("delete_by_key", 2, held(Call::DeleteByKey));
            add("upsert_some", 3, held_value(Call::UpsertSome));
            add("force_increment", 1, held(Call::ForceIncrement));
            add("soft_delete", 1, held(Call::SoftDelete));
            add("retry", 1, held_value(Call::RetryByKey));
            let holders: Vec<usize> = (0..clients).filter(|&c| !self.held[c].is_empty()).collect();
            let save_all = (select(holders), value.clone())
                .prop_map(|(client, value)| Op::new(client, Call::SaveAll, 0, value));
            add("save_all", 2, save_all.boxed());
            let merges = any::<bool>().prop_map(|merge| Call::TrackedSave { merge });
            add("tracked", 3, on_held(any_value(), merges.boxed()));
            let tracked = if ops.has("tracked") {
                any::<bool>().boxed()
            } else {
                Just(false).boxed()
            };
            let closure = proptest::collection::vec(Inner::strategy(self), 0..=3);
            let end =
                prop_oneof![2 => Just(End::Commit), 2 => Just(End::Fail), 1 => Just(End::Panic)];
            let transactions = (closure, end, tracked).prop_map(|(steps, end, tracked)| {
                Call::Transaction(Transaction {
                    steps,
                    end,
                    tracked,
                })
            });
            add("transaction", 5, on_held(no_value(), transactions.boxed()));
        }
        Union::new_weighted(options).boxed()
    }
}

impl Inner {
    fn strategy(model: &Model) -> BoxedStrategy<Inner> {
        let (keys, value) = (model.setup.keys, 1..1000_i32);
        let save = value.clone().prop_map(|value| Inner::Save { value });
        let conflict = value.clone();
        let conflict = conflict.prop_map(|value| Inner::CatchConflict { value });
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
            let insert = new.clone();
            let insert = insert.prop_map(|(key, value)| Inner::Insert { key, value });
            options.push((1, insert.boxed()));
            let catch = new.prop_map(|(key, value)| Inner::CatchTaken { key, value });
            options.push((3, catch.boxed()));
        }
        Union::new_weighted(options).boxed()
    }
}

impl fmt::Display for Op {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let (k, v) = (self.key, self.value);
        let (held, edit) = (format!("e[k{k}]"), format!("e[k{k}].value = {v}; "));
        let by_key = format!("update_by_key(k{k}, {held}.token, value = {v})");
        let call = match &self.call {
            Call::Find => format!("find(k{k})"),
            Call::Save => format!("{edit}save_checked"),
            Call::Delete => format!("{held}.delete_checked"),
            Call::UpdateByKey => by_key,
            Call::DeleteByKey => format!("delete_by_key(k{k}, {held}.token)"),
            Call::Insert => format!("new(k{k}, {v}).insert_checked"),
            Call::InsertFrom => format!("insert_checked_from(form(k{k}, {v}))"),
            Call::SaveWhere { floor } => format!("{edit}save_checked_where(value >= {floor})"),
            Call::UpsertSome => format!("{edit}upsert_checked(Some({held}.token))"),
            Call::UpsertNone => format!("new(k{k}, {v}).upsert_checked(None)"),
            Call::ForceIncrement => format!("{held}.force_increment"),
            Call::TrackedSave { merge } => {
                let how = if *merge { "merging" } else { "checked" };
                format!("t = Tracked::new({held}); t.edit().value = {v}; t.save_{how}")
            }
            Call::SaveAll => format!("every e[..].value = {v}; save_all_checked"),
            Call::BulkUpdate { keys } => format!("bulk_update(id IN {keys:?}, value = {v})"),
            Call::SoftDelete => format!("{held}.soft_delete_checked(value = -1)"),
            Call::RetryByKey => format!("retry(|conn| {by_key})"),
            Call::RetrySave => {
                format!("retry(|conn| {{ e = find(k{k})?; e.value = {v}; e.save_checked }})")
            }
            Call::Transaction(closure) => {
                let passed = if closure.tracked {
                    format!("Tracked::new({held})")
                } else {
                    held
                };
                let steps = closure.steps.iter().map(|step| format!("{step}; "));
                let steps: String = steps.collect();
                let end = match closure.end {
                    End::Commit => "Ok(())",
                    End::Fail => "Err(..)",
                    End::Panic => "panic!()",
                };
                format!("transaction(&mut {passed}, |conn, e| {{ {steps}{end} }})")
            }
        };
        write!(f, "c{}: {call}", self.client)
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
