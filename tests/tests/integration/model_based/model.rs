//! The reference model: what the table must hold, what each client's entities hold,
//! and what each call of a generated program must return, per the write API's contract
//! (DESIGN.md, "Testing sequences"; issue 37). Pure: no database, compiled once.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;

use proptest::prelude::*;
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
    /// The operations generated.
    pub(crate) ops: Ops,
}

/// A set of operation kinds (`OCC_MODEL_OPS`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Ops(u32);

impl Ops {
    /// The names `OCC_MODEL_OPS` takes, in bit order.
    pub(crate) const NAMES: [&'static str; 17] = [
        "find",
        "save",
        "delete",
        "update_by_key",
        "delete_by_key",
        "insert",
        "upsert_some",
        "upsert_none",
        "force_increment",
        "transaction",
        "save_all",
        "bulk_update",
        "soft_delete",
        "retry",
        "tracked",
        "insert_from",
        "save_where",
    ];

    pub(crate) fn all() -> Ops {
        Ops((1 << Self::NAMES.len()) - 1)
    }

    /// A comma list of names; `find` is always in (nothing else can be held without it
    /// or an insert).
    pub(crate) fn parse(list: &str) -> Ops {
        let mut bits = 1;
        for name in list
            .split(',')
            .map(str::trim)
            .filter(|name| !name.is_empty())
        {
            let index = Self::NAMES
                .iter()
                .position(|known| *known == name)
                .unwrap_or_else(|| {
                    panic!(
                        "OCC_MODEL_OPS: unknown {name:?}, expected one of {:?}",
                        Self::NAMES
                    )
                });
            bits |= 1 << index;
        }
        Ops(bits)
    }

    fn has(self, name: &str) -> bool {
        let index = Self::NAMES
            .iter()
            .position(|known| *known == name)
            .expect("a known name");
        self.0 & (1 << index) != 0
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

/// One step of a program, by one client. `key` names the entity the client holds for
/// that key (its "slot"), or the row a new entity is for.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Op {
    /// `find`: the client now holds the row as read.
    Find { client: usize, key: Key },
    /// Sets the held entity's value, then `save_checked`.
    Save { client: usize, key: Key, value: i32 },
    /// `delete_checked` of the held entity.
    Delete { client: usize, key: Key },
    /// `update_by_key` with the held token (a client's If-Match); on `Ok` the client
    /// holds its value and the returned token.
    UpdateByKey { client: usize, key: Key, value: i32 },
    /// `delete_by_key` with the held token.
    DeleteByKey { client: usize, key: Key },
    /// `insert_checked` of a new entity; on `Ok` the client holds it.
    Insert { client: usize, key: Key, value: i32 },
    /// `insert_checked_from` of a form without the token column (a create request's
    /// body, written by `InsertableForm::insert_with_token`); on `Ok` the client holds
    /// the row it names, with the returned token.
    InsertFrom { client: usize, key: Key, value: i32 },
    /// Sets the held entity's value, then `save_checked_where` under the condition
    /// `value >= floor` on the row as it is in the database.
    SaveWhere {
        client: usize,
        key: Key,
        value: i32,
        floor: i32,
    },
    /// Sets the held entity's value, then `upsert_checked(Some(its token))`.
    UpsertSome { client: usize, key: Key, value: i32 },
    /// `upsert_checked(None)` of a new entity; on `Ok` the client holds it.
    UpsertNone { client: usize, key: Key, value: i32 },
    /// `force_increment` of the held entity.
    ForceIncrement { client: usize, key: Key },
    /// Sets the value of every entity the client holds, then `save_all_checked` of
    /// them (in key order): all or nothing.
    SaveAll { client: usize, value: i32 },
    /// `bulk_update` of the rows with these keys: `value = value` and a fresh token each.
    BulkUpdate {
        client: usize,
        keys: Vec<Key>,
        value: i32,
    },
    /// `soft_delete_checked` of the held entity, the marker `value = -1`.
    SoftDelete { client: usize, key: Key },
    /// `update_by_key` with the held token inside the retry helper: a conflict on a
    /// client's token comes back at once (contract 4).
    RetryByKey { client: usize, key: Key, value: i32 },
    /// The retry helper around a fresh read of row `key`, a new value and its
    /// `save_checked`; on `Ok` the client holds what it saved.
    RetrySave { client: usize, key: Key, value: i32 },
    /// `diesel_occ::transaction` (or the async twin) with the held entity as its single
    /// `&mut` entity: the steps, then the end.
    Transaction {
        client: usize,
        key: Key,
        steps: Vec<Inner>,
        end: End,
        /// The entity is passed as a `&mut Tracked<T>` (saves write what changed).
        tracked: bool,
    },
    /// `Tracked::new(e)`, its value edited, then the tracked `save_checked` (which
    /// writes only what changed) or `save_merging`.
    TrackedSave {
        client: usize,
        key: Key,
        value: i32,
        merging: bool,
    },
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

/// How a transaction's closure ends when no step failed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum End {
    /// Returns `Ok`.
    Commit,
    /// Returns an error.
    Fail,
    /// Panics.
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

/// What a call must return.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Expect {
    /// Before the first step.
    Nothing,
    /// `Ok` without a token to check (a find, a save, a delete).
    Done,
    /// `Ok` with this token for row `key` (an insert, `update_by_key`).
    Token { key: Key, token: Tok },
    /// `Ok(Upserted::Inserted(t))` or `Ok(Upserted::Updated(t))`.
    Upserted { inserted: bool, token: Tok },
    /// `Err(Error::NotFound)`.
    NotFound,
    /// `Err(Error::Batch)` with these entities' conflicts, by position.
    Batch(Vec<(usize, Conflict)>),
    /// `Ok(n)`: rows written by a bulk update.
    Count(usize),
    /// `Ok` of `save_merging`.
    Merge(Merge),
    /// `Err(Error::Conflict)`.
    Conflict(Conflict),
    /// `Err(Error::Conflict)` of a checked write whose token matched but whose
    /// condition did not (`ConflictState::Unmatched`): it expected this token, and no
    /// retry repeats it.
    Unmatched { expected: Tok },
    /// `Err(Error::UniqueViolation)`.
    Taken,
    /// Some database error (a refused statement, or any statement after it in a
    /// transaction the database aborted).
    Refused,
    /// A transaction: each step's outcome, in order, and how it ended.
    Transaction {
        steps: Vec<Expect>,
        outcome: Outcome,
    },
}

/// How a transaction ends, as its caller sees it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Outcome {
    /// `Ok`: it committed.
    Committed,
    /// `Err`: it rolled back.
    RolledBack,
    /// The closure's panic, resumed in the caller after the rollback.
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
            let token = model.initial();
            model.rows.insert(
                key,
                Row {
                    value: key * 100,
                    token,
                },
            );
            model.used.insert(key);
        }
        model
    }

    /// The initial state: a random subset of the keys present.
    pub(crate) fn strategy(setup: Setup) -> BoxedStrategy<Model> {
        proptest::collection::btree_set(1..=setup.keys, 0..=setup.keys as usize)
            .prop_map(move |present| Model::new(setup, &present.into_iter().collect::<Vec<_>>()))
            .boxed()
    }

    fn initial(&mut self) -> Tok {
        if self.setup.exact {
            1
        } else {
            self.serial += 1;
            self.serial
        }
    }

    fn next(&mut self, token: Tok) -> Tok {
        if self.setup.exact {
            token + 1
        } else {
            self.serial += 1;
            self.serial
        }
    }

    /// Whether a new row may take `key` (`Setup::reinsert`).
    fn insertable(&self, key: Key) -> bool {
        self.setup.reinsert || self.rows.contains_key(&key) || !self.used.contains(&key)
    }

    /// The conflict of a write that expected `expected` on row `key`.
    fn conflict(&self, key: Key, expected: Option<Tok>, client_token: bool) -> Expect {
        Expect::Conflict(Conflict {
            expected,
            current: self.rows.get(&key).map(|row| row.token),
            client_token,
        })
    }

    /// A checked write of an entity holding `token` on row `key`: whether it matches.
    fn matches(&self, key: Key, token: Tok) -> bool {
        self.rows.get(&key).is_some_and(|row| row.token == token)
    }

    /// Inserts a new row, or says the key is taken.
    fn insert(&mut self, key: Key, value: i32) -> Result<Tok, Invalid> {
        if self.rows.contains_key(&key) {
            return Err(Invalid); // callers check first
        }
        if !self.insertable(key) {
            return Err(Invalid);
        }
        let token = self.initial();
        self.rows.insert(key, Row { value, token });
        self.used.insert(key);
        Ok(token)
    }

    fn held(&self, client: usize, key: Key) -> Result<Held, Invalid> {
        self.held
            .get(client)
            .and_then(|held| held.get(&key))
            .copied()
            .ok_or(Invalid)
    }

    /// Runs `op`: the state after it, with `expect` saying what it must return.
    pub(crate) fn apply(mut self, op: &Op) -> Result<Model, Invalid> {
        let expect = match *op {
            Op::Find { client, key } => match self.rows.get(&key).copied() {
                Some(row) => {
                    let held = Held {
                        key,
                        value: row.value,
                        token: row.token,
                    };
                    self.held.get_mut(client).ok_or(Invalid)?.insert(key, held);
                    Expect::Done
                }
                None => Expect::NotFound,
            },
            Op::Save { client, key, value } => {
                let mut held = self.held(client, key)?;
                held.value = value;
                let expect = if self.matches(held.key, held.token) {
                    let token = self.next(held.token);
                    self.rows.insert(held.key, Row { value, token });
                    held.token = token;
                    Expect::Done
                } else {
                    self.conflict(held.key, Some(held.token), false)
                };
                self.held[client].insert(key, held);
                expect
            }
            Op::SaveWhere {
                client,
                key,
                value,
                floor,
            } => {
                let mut held = self.held(client, key)?;
                held.value = value;
                let expect = match self.rows.get(&held.key).copied() {
                    Some(row) if row.token == held.token && row.value < floor => {
                        Expect::Unmatched {
                            expected: held.token,
                        }
                    }
                    Some(row) if row.token == held.token => {
                        let token = self.next(held.token);
                        self.rows.insert(held.key, Row { value, token });
                        held.token = token;
                        Expect::Done
                    }
                    _ => self.conflict(held.key, Some(held.token), false),
                };
                self.held[client].insert(key, held);
                expect
            }
            Op::Delete { client, key } => {
                let held = self.held(client, key)?;
                if self.matches(held.key, held.token) {
                    self.rows.remove(&held.key);
                    Expect::Done
                } else {
                    self.conflict(held.key, Some(held.token), false)
                }
            }
            Op::UpdateByKey { client, key, value } => {
                let mut held = self.held(client, key)?;
                if self.matches(key, held.token) {
                    let token = self.next(held.token);
                    self.rows.insert(key, Row { value, token });
                    held.value = value;
                    held.token = token;
                    self.held[client].insert(key, held);
                    Expect::Token { key, token }
                } else {
                    self.conflict(key, Some(held.token), true)
                }
            }
            Op::DeleteByKey { client, key } => {
                let held = self.held(client, key)?;
                if self.matches(key, held.token) {
                    self.rows.remove(&key);
                    Expect::Done
                } else {
                    self.conflict(key, Some(held.token), true)
                }
            }
            Op::Insert { client, key, value } | Op::InsertFrom { client, key, value } => {
                if client >= self.setup.clients {
                    return Err(Invalid);
                }
                if self.rows.contains_key(&key) {
                    Expect::Taken
                } else {
                    let token = self.insert(key, value)?;
                    self.held[client].insert(key, Held { key, value, token });
                    Expect::Token { key, token }
                }
            }
            Op::UpsertSome { client, key, value } => {
                let mut held = self.held(client, key)?;
                held.value = value;
                // Contract 3: a stated token never creates or re-creates a row.
                let expect = if self.matches(key, held.token) {
                    let token = self.next(held.token);
                    self.rows.insert(key, Row { value, token });
                    held.token = token;
                    Expect::Upserted {
                        inserted: false,
                        token,
                    }
                } else {
                    self.conflict(key, Some(held.token), true)
                };
                self.held[client].insert(key, held);
                expect
            }
            Op::UpsertNone { client, key, value } => {
                if client >= self.setup.clients {
                    return Err(Invalid);
                }
                if self.rows.contains_key(&key) {
                    self.conflict(key, None, true)
                } else {
                    let token = self.insert(key, value)?;
                    self.held[client].insert(key, Held { key, value, token });
                    Expect::Upserted {
                        inserted: true,
                        token,
                    }
                }
            }
            Op::ForceIncrement { client, key } => {
                let mut held = self.held(client, key)?;
                if self.matches(key, held.token) {
                    let token = self.next(held.token);
                    self.rows.get_mut(&key).expect("matched").token = token;
                    held.token = token;
                    self.held[client].insert(key, held);
                    Expect::Done
                } else {
                    self.conflict(key, Some(held.token), false)
                }
            }
            Op::SaveAll { client, value } => {
                let held = self.held.get(client).ok_or(Invalid)?.clone();
                if held.is_empty() {
                    return Err(Invalid);
                }
                let mut conflicts = Vec::new();
                for (index, entity) in held.values().enumerate() {
                    if !self.matches(entity.key, entity.token) {
                        conflicts.push((index, entity));
                    }
                }
                let conflicts: Vec<(usize, Conflict)> = conflicts
                    .into_iter()
                    .map(|(index, entity)| {
                        let Expect::Conflict(conflict) =
                            self.conflict(entity.key, Some(entity.token), false)
                        else {
                            unreachable!()
                        };
                        (index, conflict)
                    })
                    .collect();
                let all = conflicts.is_empty();
                for (slot, mut entity) in held {
                    entity.value = value;
                    if all {
                        entity.token = self.next(entity.token);
                        self.rows.insert(
                            entity.key,
                            Row {
                                value,
                                token: entity.token,
                            },
                        );
                    }
                    self.held[client].insert(slot, entity);
                }
                if all {
                    Expect::Done
                } else {
                    Expect::Batch(conflicts)
                }
            }
            Op::BulkUpdate {
                client,
                ref keys,
                value,
            } => {
                if client >= self.setup.clients {
                    return Err(Invalid);
                }
                let mut written = 0;
                for key in keys {
                    if let Some(row) = self.rows.get(key).copied() {
                        let token = self.next(row.token);
                        self.rows.insert(*key, Row { value, token });
                        written += 1;
                    }
                }
                Expect::Count(written)
            }
            Op::SoftDelete { client, key } => {
                let mut held = self.held(client, key)?;
                if self.matches(key, held.token) {
                    let token = self.next(held.token);
                    self.rows.insert(key, Row { value: -1, token });
                    held.token = token;
                    self.held[client].insert(key, held);
                    Expect::Done
                } else {
                    self.conflict(key, Some(held.token), false)
                }
            }
            Op::RetryByKey { client, key, value } => {
                return self.apply(&Op::UpdateByKey { client, key, value });
            }
            Op::RetrySave { client, key, value } => {
                if client >= self.setup.clients {
                    return Err(Invalid);
                }
                match self.rows.get(&key).copied() {
                    Some(row) => {
                        let token = self.next(row.token);
                        self.rows.insert(key, Row { value, token });
                        self.held[client].insert(key, Held { key, value, token });
                        Expect::Done
                    }
                    None => Expect::NotFound,
                }
            }
            Op::TrackedSave {
                client,
                key,
                value,
                merging,
            } => {
                let mut held = self.held(client, key)?;
                // The values as read: the entity as held.
                let original = held.value;
                held.value = value;
                let expect = match self.rows.get(&key).copied() {
                    Some(row) if row.token == held.token => {
                        held.token = self.next(held.token);
                        let value = if value != original { value } else { row.value };
                        self.rows.insert(
                            key,
                            Row {
                                value,
                                token: held.token,
                            },
                        );
                        if merging {
                            Expect::Merge(Merge::Saved)
                        } else {
                            Expect::Done
                        }
                    }
                    Some(row) if merging => {
                        let theirs = row.value != original;
                        let mine = value != original;
                        if theirs && mine && row.value != value {
                            Expect::Merge(Merge::Overlap)
                        } else {
                            // Rebased on their row; what differs from it is written.
                            held.value = if mine { value } else { row.value };
                            held.token = self.next(row.token);
                            self.rows.insert(
                                key,
                                Row {
                                    value: held.value,
                                    token: held.token,
                                },
                            );
                            Expect::Merge(Merge::Merged)
                        }
                    }
                    _ => self.conflict(key, Some(held.token), false),
                };
                self.held[client].insert(key, held);
                expect
            }
            Op::Transaction {
                client,
                key,
                ref steps,
                end,
                tracked,
            } => {
                return self.transaction(client, key, steps, end, tracked);
            }
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
        steps: &[Inner],
        end: End,
        tracked: bool,
    ) -> Result<Model, Invalid> {
        let passed = self.held(client, key)?;
        let mut inside = self.clone();
        let mut entity = passed;
        // A tracked entity's values as read (or as last saved).
        let mut original = passed.value;
        let mut seen = Vec::new();
        // A statement error the database does not forgive (PostgreSQL).
        let mut doomed = false;
        let mut failed = false;
        for step in steps {
            if doomed && !matches!(step, Inner::CatchRefused) {
                // Any statement in an aborted transaction fails, and nothing catches it.
                if let Inner::Save { value } | Inner::CatchConflict { value } = *step {
                    entity.value = value;
                }
                seen.push(Expect::Refused);
                failed = true;
                break;
            }
            let result = match *step {
                Inner::Save { value } | Inner::CatchConflict { value } => {
                    entity.value = value;
                    if inside.matches(entity.key, entity.token) {
                        let token = inside.next(entity.token);
                        let row = inside.rows[&entity.key];
                        let stored = if !tracked || value != original {
                            value
                        } else {
                            row.value
                        };
                        inside.rows.insert(
                            entity.key,
                            Row {
                                value: stored,
                                token,
                            },
                        );
                        entity.token = token;
                        original = value;
                        Ok(Expect::Done)
                    } else {
                        let conflict = inside.conflict(entity.key, Some(entity.token), false);
                        if matches!(step, Inner::CatchConflict { .. }) {
                            Ok(conflict)
                        } else {
                            Err(conflict)
                        }
                    }
                }
                Inner::Delete => {
                    if inside.matches(entity.key, entity.token) {
                        inside.rows.remove(&entity.key);
                        Ok(Expect::Done)
                    } else {
                        Err(inside.conflict(entity.key, Some(entity.token), false))
                    }
                }
                Inner::Insert { key, value } | Inner::CatchTaken { key, value } => {
                    if inside.rows.contains_key(&key) {
                        // Contract 2: a taken key leaves the transaction usable.
                        if matches!(step, Inner::CatchTaken { .. }) {
                            Ok(Expect::Taken)
                        } else {
                            Err(Expect::Taken)
                        }
                    } else {
                        Ok(Expect::Token {
                            key,
                            token: inside.insert(key, value)?,
                        })
                    }
                }
                Inner::Replace { key } => match inside.rows.get(&key).copied() {
                    Some(row) => {
                        entity = Held {
                            key,
                            value: row.value,
                            token: row.token,
                        };
                        original = row.value;
                        Ok(Expect::Done)
                    }
                    None => Err(Expect::NotFound),
                },
                Inner::CatchRefused => {
                    doomed = inside.setup.dooms;
                    Ok(Expect::Refused)
                }
            };
            match result {
                Ok(expect) => seen.push(expect),
                Err(expect) => {
                    seen.push(expect);
                    failed = true;
                    break;
                }
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
            let mut after = inside;
            after.held[client].remove(&key);
            after.held[client].insert(entity.key, entity);
            after
        } else {
            let mut after = self;
            // Serials once handed out stay taken: a later fresh token is another one.
            after.serial = inside.serial;
            if entity.key == passed.key {
                after.held[client].insert(
                    key,
                    Held {
                        token: passed.token,
                        ..entity
                    },
                );
            }
            after
        };
        after.expect = Expect::Transaction {
            steps: seen,
            outcome,
        };
        Ok(after)
    }

    /// The transitions from this state: every operation on what the clients hold,
    /// weighted so that stale entities, deleted rows and taken keys come up often.
    pub(crate) fn transitions(&self) -> BoxedStrategy<Op> {
        let setup = self.setup;
        let ops = setup.ops;
        let clients = setup.clients;
        let keys = 1..=setup.keys;
        let value = 1..1000_i32;
        let slots: Vec<(usize, Key)> = self
            .held
            .iter()
            .enumerate()
            .flat_map(|(client, held)| held.keys().map(move |&key| (client, key)))
            .collect();
        // Stale entities (their row was written or deleted since) are picked as often
        // as all the others together: they are where a missing check shows.
        let stale: Vec<(usize, Key)> = slots
            .iter()
            .copied()
            .filter(|&(client, key)| {
                let held = self.held[client][&key];
                !self.matches(held.key, held.token)
            })
            .collect();
        let insertable: Vec<Key> = (1..=setup.keys)
            .filter(|&key| self.insertable(key))
            .collect();
        let present: Vec<Key> = self.rows.keys().copied().collect();

        let mut options: Vec<(u32, BoxedStrategy<Op>)> = Vec::new();
        options.push((
            2,
            (0..clients, keys.clone())
                .prop_map(|(client, key)| Op::Find { client, key })
                .boxed(),
        ));
        if !present.is_empty() {
            options.push((
                5,
                (0..clients, proptest::sample::select(present))
                    .prop_map(|(client, key)| Op::Find { client, key })
                    .boxed(),
            ));
        }
        let mut add = |name: &str, weight: u32, strategy: BoxedStrategy<Op>| {
            if ops.has(name) {
                options.push((weight, strategy));
            }
        };
        if !insertable.is_empty() {
            let pick = proptest::sample::select(insertable);
            let new_row = |op: fn(usize, Key, i32) -> Op| {
                (0..clients, pick.clone(), value.clone())
                    .prop_map(move |(client, key, value)| op(client, key, value))
                    .boxed()
            };
            add(
                "insert",
                3,
                new_row(|client, key, value| Op::Insert { client, key, value }),
            );
            add(
                "insert_from",
                2,
                new_row(|client, key, value| Op::InsertFrom { client, key, value }),
            );
            add(
                "upsert_none",
                2,
                new_row(|client, key, value| Op::UpsertNone { client, key, value }),
            );
        }
        let all: Vec<Key> = (1..=setup.keys).collect();
        add(
            "bulk_update",
            1,
            (
                0..clients,
                proptest::sample::subsequence(all, 1..=setup.keys as usize),
                value.clone(),
            )
                .prop_map(|(client, keys, value)| Op::BulkUpdate {
                    client,
                    keys,
                    value,
                })
                .boxed(),
        );
        add(
            "retry",
            1,
            (0..clients, keys.clone(), value.clone())
                .prop_map(|(client, key, value)| Op::RetrySave { client, key, value })
                .boxed(),
        );
        if !slots.is_empty() {
            let slot = if stale.is_empty() {
                proptest::sample::select(slots).boxed()
            } else {
                prop_oneof![
                    proptest::sample::select(slots),
                    proptest::sample::select(stale)
                ]
                .boxed()
            };
            // An operation on a held entity, and one that also writes a value.
            let held = |op: fn(usize, Key) -> Op| {
                slot.clone()
                    .prop_map(move |(client, key)| op(client, key))
                    .boxed()
            };
            let held_value = |op: fn(usize, Key, i32) -> Op| {
                (slot.clone(), value.clone())
                    .prop_map(move |((client, key), value)| op(client, key, value))
                    .boxed()
            };
            add(
                "save",
                6,
                held_value(|client, key, value| Op::Save { client, key, value }),
            );
            add(
                "save_where",
                3,
                // Floors below most values, so that both outcomes are common.
                (slot.clone(), value.clone(), 0..500_i32)
                    .prop_map(|((client, key), value, floor)| Op::SaveWhere {
                        client,
                        key,
                        value,
                        floor,
                    })
                    .boxed(),
            );
            add("delete", 2, held(|client, key| Op::Delete { client, key }));
            add(
                "update_by_key",
                3,
                held_value(|client, key, value| Op::UpdateByKey { client, key, value }),
            );
            add(
                "delete_by_key",
                2,
                held(|client, key| Op::DeleteByKey { client, key }),
            );
            add(
                "upsert_some",
                3,
                held_value(|client, key, value| Op::UpsertSome { client, key, value }),
            );
            add(
                "force_increment",
                1,
                held(|client, key| Op::ForceIncrement { client, key }),
            );
            add(
                "soft_delete",
                1,
                held(|client, key| Op::SoftDelete { client, key }),
            );
            add(
                "retry",
                1,
                held_value(|client, key, value| Op::RetryByKey { client, key, value }),
            );
            let holders: Vec<usize> = (0..clients)
                .filter(|&client| !self.held[client].is_empty())
                .collect();
            add(
                "save_all",
                2,
                (proptest::sample::select(holders), value.clone())
                    .prop_map(|(client, value)| Op::SaveAll { client, value })
                    .boxed(),
            );
            add(
                "tracked",
                3,
                (slot.clone(), value.clone(), any::<bool>())
                    .prop_map(|((client, key), value, merging)| Op::TrackedSave {
                        client,
                        key,
                        value,
                        merging,
                    })
                    .boxed(),
            );
            let inner = Inner::strategy(self);
            let tracked = if ops.has("tracked") {
                any::<bool>().boxed()
            } else {
                Just(false).boxed()
            };
            add(
                "transaction",
                5,
                (
                    slot,
                    proptest::collection::vec(inner, 0..=3),
                    prop_oneof![2 => Just(End::Commit), 2 => Just(End::Fail), 1 => Just(End::Panic)],
                    tracked,
                )
                    .prop_map(|((client, key), steps, end, tracked)| Op::Transaction {
                        client,
                        key,
                        steps,
                        end,
                        tracked,
                    })
                    .boxed(),
            );
        }
        Union::new_weighted(options).boxed()
    }
}

impl Inner {
    fn strategy(model: &Model) -> BoxedStrategy<Inner> {
        let keys = 1..=model.setup.keys;
        let value = 1..1000_i32;
        // Inserts only where the model allows a new row: a free key never used, or a
        // taken one (a unique violation).
        let insertable: Vec<Key> = (1..=model.setup.keys)
            .filter(|&key| model.insertable(key))
            .collect();
        let mut options: Vec<(u32, BoxedStrategy<Inner>)> = vec![
            (
                4,
                value
                    .clone()
                    .prop_map(|value| Inner::Save { value })
                    .boxed(),
            ),
            (
                2,
                value
                    .clone()
                    .prop_map(|value| Inner::CatchConflict { value })
                    .boxed(),
            ),
            (1, Just(Inner::Delete).boxed()),
            (1, keys.prop_map(|key| Inner::Replace { key }).boxed()),
            (1, Just(Inner::CatchRefused).boxed()),
        ];
        if !model.rows.is_empty() {
            // Another row that exists: the entity then holds a row it was not read as.
            let present: Vec<Key> = model.rows.keys().copied().collect();
            options.push((
                3,
                proptest::sample::select(present)
                    .prop_map(|key| Inner::Replace { key })
                    .boxed(),
            ));
        }
        if !insertable.is_empty() {
            let pick = proptest::sample::select(insertable);
            options.push((
                1,
                (pick.clone(), value.clone())
                    .prop_map(|(key, value)| Inner::Insert { key, value })
                    .boxed(),
            ));
            options.push((
                3,
                (pick, value)
                    .prop_map(|(key, value)| Inner::CatchTaken { key, value })
                    .boxed(),
            ));
        }
        Union::new_weighted(options).boxed()
    }
}

impl fmt::Display for Op {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Op::Find { client, key } => write!(f, "c{client}: find(k{key})"),
            Op::Save { client, key, value } => {
                write!(f, "c{client}: e[k{key}].value = {value}; save_checked")
            }
            Op::Delete { client, key } => write!(f, "c{client}: e[k{key}].delete_checked"),
            Op::UpdateByKey { client, key, value } => {
                write!(
                    f,
                    "c{client}: update_by_key(k{key}, e[k{key}].token, value = {value})"
                )
            }
            Op::DeleteByKey { client, key } => {
                write!(f, "c{client}: delete_by_key(k{key}, e[k{key}].token)")
            }
            Op::Insert { client, key, value } => {
                write!(f, "c{client}: new(k{key}, {value}).insert_checked")
            }
            Op::InsertFrom { client, key, value } => {
                write!(f, "c{client}: insert_checked_from(form(k{key}, {value}))")
            }
            Op::SaveWhere {
                client,
                key,
                value,
                floor,
            } => write!(
                f,
                "c{client}: e[k{key}].value = {value}; save_checked_where(value >= {floor})"
            ),
            Op::UpsertSome { client, key, value } => {
                write!(
                    f,
                    "c{client}: e[k{key}].value = {value}; upsert_checked(Some(e[k{key}].token))"
                )
            }
            Op::UpsertNone { client, key, value } => {
                write!(f, "c{client}: new(k{key}, {value}).upsert_checked(None)")
            }
            Op::ForceIncrement { client, key } => write!(f, "c{client}: e[k{key}].force_increment"),
            Op::TrackedSave {
                client,
                key,
                value,
                merging,
            } => {
                let call = if *merging {
                    "save_merging"
                } else {
                    "save_checked"
                };
                write!(
                    f,
                    "c{client}: t = Tracked::new(e[k{key}]); t.edit().value = {value}; t.{call}"
                )
            }
            Op::SaveAll { client, value } => {
                write!(
                    f,
                    "c{client}: every e[..].value = {value}; save_all_checked"
                )
            }
            Op::BulkUpdate {
                client,
                keys,
                value,
            } => {
                write!(f, "c{client}: bulk_update(id IN {keys:?}, value = {value})")
            }
            Op::SoftDelete { client, key } => {
                write!(f, "c{client}: e[k{key}].soft_delete_checked(value = -1)")
            }
            Op::RetryByKey { client, key, value } => write!(
                f,
                "c{client}: retry(|conn| update_by_key(k{key}, e[k{key}].token, value = {value}))"
            ),
            Op::RetrySave { client, key, value } => write!(
                f,
                "c{client}: retry(|conn| {{ e = find(k{key})?; e.value = {value}; e.save_checked }})"
            ),
            Op::Transaction {
                client,
                key,
                steps,
                end,
                tracked,
            } => {
                if *tracked {
                    write!(
                        f,
                        "c{client}: transaction(&mut Tracked::new(e[k{key}]), |conn, e| {{ "
                    )?;
                } else {
                    write!(f, "c{client}: transaction(&mut e[k{key}], |conn, e| {{ ")?;
                }
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
            Inner::CatchConflict { value } => {
                write!(
                    f,
                    "e.value = {value}; e.save_checked(conn) (conflict caught)"
                )
            }
            Inner::Delete => write!(f, "e.delete_checked(conn)?"),
            Inner::Insert { key, value } => write!(f, "new(k{key}, {value}).insert_checked(conn)?"),
            Inner::CatchTaken { key, value } => {
                write!(
                    f,
                    "new(k{key}, {value}).insert_checked(conn) (UniqueViolation caught)"
                )
            }
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
