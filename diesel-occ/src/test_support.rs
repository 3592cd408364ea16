//! What the retry tests share: a `stock` table in a SQLite file, an entity with a
//! hand-written `Versioned` impl (the crate's own tests cannot use the derive, whose
//! output names `::diesel_occ`), and connection sources that count checkouts.

use std::ops::{Deref, DerefMut};
use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};

use diesel::prelude::*;
use diesel::sqlite::SqliteConnection;

use crate::versioned::Versioned;

diesel::table! {
    stock (id) {
        id -> Integer,
        available -> Integer,
        version -> Integer,
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Queryable, Selectable)]
#[diesel(table_name = stock)]
pub(crate) struct Stock {
    pub(crate) id: i32,
    pub(crate) available: i32,
    pub(crate) version: i32,
}

type ByKey = diesel::dsl::Filter<stock::table, diesel::dsl::Eq<stock::id, i32>>;
type Guarded = diesel::dsl::Filter<ByKey, diesel::dsl::Eq<stock::version, i32>>;

impl Versioned for Stock {
    type Table = stock::table;
    type Token = i32;
    type Key = i32;
    type UpdateStatement = diesel::dsl::Update<
        Guarded,
        (
            diesel::dsl::Eq<stock::available, i32>,
            diesel::dsl::Eq<stock::version, i32>,
        ),
    >;
    type DeleteStatement = diesel::dsl::delete<Guarded>;
    type TokenQuery = diesel::dsl::Select<ByKey, stock::version>;
    type FindQuery = ByKey;
    type ValuesRow = ();

    const TABLE_NAME: &'static str = "stock";
    const TOKEN_COLUMN: &'static str = "version";
    const KEY_COLUMNS: &'static [&'static str] = &["id"];

    fn token(&self) -> &i32 {
        &self.version
    }

    fn set_token(&mut self, token: i32) {
        self.version = token;
    }

    fn key(&self) -> i32 {
        self.id
    }

    fn key_values(key: &i32) -> Vec<String> {
        vec![format!("{key:?}")]
    }

    fn update_statement(&self, fresh: &i32) -> Self::UpdateStatement {
        diesel::update(Self::find_query(self.id).filter(stock::version.eq(self.version))).set((
            stock::available.eq(self.available),
            stock::version.eq(*fresh),
        ))
    }

    fn delete_statement(&self) -> Self::DeleteStatement {
        diesel::delete(Self::find_query(self.id).filter(stock::version.eq(self.version)))
    }

    fn token_query(key: i32) -> Self::TokenQuery {
        stock::table
            .filter(stock::id.eq(key))
            .select(stock::version)
    }

    fn find_query(key: i32) -> ByKey {
        stock::table.filter(stock::id.eq(key))
    }
}

/// A SQLite database file with one `stock` row: id 1, 10 available, version 1.
pub(crate) struct TestDb {
    _dir: tempfile::TempDir,
    pub(crate) url: String,
}

impl TestDb {
    pub(crate) fn new() -> Self {
        let dir = tempfile::tempdir().expect("temp dir");
        let url = dir.path().join("occ.sqlite").display().to_string();
        let db = TestDb { _dir: dir, url };
        let mut conn = db.connect();
        diesel::sql_query(
            "CREATE TABLE stock (id INTEGER PRIMARY KEY, available INTEGER NOT NULL \
             CHECK (available >= 0), version INTEGER NOT NULL)",
        )
        .execute(&mut conn)
        .expect("create table");
        diesel::sql_query("INSERT INTO stock VALUES (1, 10, 1)")
            .execute(&mut conn)
            .expect("insert row");
        db
    }

    /// A new connection; no busy timeout, so a held lock fails at once.
    pub(crate) fn connect(&self) -> SqliteConnection {
        SqliteConnection::establish(&self.url).expect("open SQLite file")
    }

    /// The row as it is now, read on a connection of its own.
    pub(crate) fn stock(&self) -> Stock {
        stock::table
            .find(1)
            .select(Stock::as_select())
            .get_result(&mut self.connect())
            .expect("read the row")
    }
}

/// Counts what a source hands out: checkouts, connections alive, discards.
#[derive(Debug, Default, Clone)]
pub(crate) struct Counters(Arc<[AtomicU32; 3]>);

impl Counters {
    pub(crate) fn checkouts(&self) -> u32 {
        self.0[0].load(Ordering::SeqCst)
    }

    /// Connections checked out and not yet dropped.
    pub(crate) fn live(&self) -> u32 {
        self.0[1].load(Ordering::SeqCst)
    }

    pub(crate) fn discards(&self) -> u32 {
        self.0[2].load(Ordering::SeqCst)
    }

    /// Records a checkout and wraps the connection; panics if an earlier one is alive.
    pub(crate) fn checkout<C>(&self, conn: C) -> Counted<C> {
        assert_eq!(
            self.live(),
            0,
            "the previous attempt's connection is still checked out"
        );
        self.0[0].fetch_add(1, Ordering::SeqCst);
        self.0[1].fetch_add(1, Ordering::SeqCst);
        Counted {
            conn,
            counters: self.clone(),
        }
    }

    pub(crate) fn discard<C>(&self, counted: Counted<C>) {
        self.0[2].fetch_add(1, Ordering::SeqCst);
        drop(counted);
    }
}

/// A connection handed out by a counting source.
pub(crate) struct Counted<C> {
    conn: C,
    counters: Counters,
}

impl<C> Deref for Counted<C> {
    type Target = C;

    fn deref(&self) -> &C {
        &self.conn
    }
}

impl<C> DerefMut for Counted<C> {
    fn deref_mut(&mut self) -> &mut C {
        &mut self.conn
    }
}

impl<C> Drop for Counted<C> {
    fn drop(&mut self) {
        self.counters.0[1].fetch_sub(1, Ordering::SeqCst);
    }
}

/// A blocking source that opens a new connection to `url` for every checkout.
pub(crate) struct CountingSource {
    pub(crate) url: String,
    pub(crate) counters: Counters,
}

impl CountingSource {
    pub(crate) fn new(db: &TestDb) -> Self {
        CountingSource {
            url: db.url.clone(),
            counters: Counters::default(),
        }
    }
}

impl crate::blocking::ConnectionSource for CountingSource {
    type Connection = SqliteConnection;
    type Pooled<'a> = Counted<SqliteConnection>;

    fn checkout(&self) -> Result<Counted<SqliteConnection>, crate::PoolError> {
        let conn = SqliteConnection::establish(&self.url)?;
        Ok(self.counters.checkout(conn))
    }

    fn discard(&self, pooled: Counted<SqliteConnection>) {
        self.counters.discard(pooled);
    }
}

/// Another writer bumps the row's token behind the attempt's back (a bypass write on
/// a connection of its own), so the attempt's save is bound to conflict.
pub(crate) fn interfere(db: &TestDb) {
    diesel::update(stock::table.find(1))
        .set(stock::version.eq(stock::version + 1))
        .execute(&mut db.connect())
        .expect("interfering write");
}
