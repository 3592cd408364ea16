//! The guard's DDL on a blocking connection.

use diesel::connection::SimpleConnection;
use diesel::prelude::*;
use diesel_occ::bypass_guard::{BypassGuard, GuardError};
use diesel_occ::prelude::*;
use diesel_occ::{Dialect, TokenKind};
use diesel_occ_tests::TestConnection;

use super::super::super::dialect;
use super::super::tables::{
    AuxItem, LongA, LongB, OddRow, Order, OrderItem, Wrap16, Wrap32, Wrap64,
};
use super::Conn;
use crate::flavours::blocking::run_sql;

const GUARD: Dialect = dialect(Conn::BACKEND);

/// An identifier quoted for this backend, for the tests' own DDL.
fn q(name: &str) -> String {
    match GUARD {
        Dialect::Mysql => format!("`{}`", name.replace('`', "``")),
        _ => format!("\"{}\"", name.replace('"', "\"\"")),
    }
}

/// Creates `table (id, note, token token_type)` (names as SQL) holding `(1, 'a', value)`.
fn create_table_sql(conn: &mut Conn, table: &str, token: &str, token_type: &str, value: &str) {
    let sql = format!(
        "CREATE TABLE {table} (id INTEGER PRIMARY KEY, note VARCHAR(20) NOT NULL, \
         {token} {token_type} NOT NULL);\n\
         INSERT INTO {table} (id, note, {token}) VALUES (1, 'a', {value});"
    );
    run_sql(conn, &sql);
}

/// [`create_table_sql`] with the names quoted.
fn create_table(conn: &mut Conn, table: &str, token: &str, token_type: &str, value: i64) {
    create_table_sql(conn, &q(table), &q(token), token_type, &value.to_string());
}

fn install(conn: &mut Conn, guard: &BypassGuard) -> QueryResult<()> {
    conn.batch_execute(&guard.install_sql(GUARD).expect("guard DDL"))
}

fn uninstall(conn: &mut Conn, guard: &BypassGuard) {
    run_sql(conn, &guard.uninstall_sql(GUARD).expect("guard DDL"));
}

/// A write that bypasses diesel-occ: it changes the note of `table` (as SQL), not the
/// token.
fn bypass_sql(conn: &mut Conn, table: &str) {
    let update = format!("UPDATE {table} SET note = 'bypass' WHERE id = 1");
    run_sql(conn, &update);
}

/// [`bypass_sql`] on `table`, quoted.
fn bypass(conn: &mut Conn, table: &str) {
    bypass_sql(conn, &q(table));
}

#[derive(QueryableByName)]
struct Version {
    #[diesel(sql_type = diesel::sql_types::Integer)]
    v: i32,
}

/// The integer tokens of `table`'s rows (names as SQL).
fn tokens(conn: &mut Conn, token: &str, table: &str) -> Vec<i32> {
    let query = diesel::sql_query(format!("SELECT {token} AS v FROM {table}"));
    let rows: Vec<Version> = query.load(conn).expect("read the token");
    rows.into_iter().map(|row| row.v).collect()
}

/// The table a hostile name would drop if it broke out of its quotes.
fn create_sentinel(conn: &mut Conn) {
    run_sql(conn, "CREATE TABLE sentinel (id INTEGER PRIMARY KEY)");
}

fn assert_sentinel_survives(conn: &mut Conn) {
    let query = diesel::sql_query("SELECT 1 FROM sentinel");
    query.execute(conn).expect("the sentinel table survives");
}

#[test]
fn guards_whose_readable_names_match_guard_their_own_tables() {
    let db = test_db!();
    let mut conn = db.conn();
    create_table(&mut conn, "order_items", "version", "INTEGER", 1);
    create_table(&mut conn, "order", "items_version", "INTEGER", 1);
    let (items_guard, order_guard) = (BypassGuard::of::<OrderItem>(), BypassGuard::of::<Order>());
    install(&mut conn, &items_guard).expect("install the order_items guard");
    install(&mut conn, &order_guard).expect("install the order guard");

    bypass(&mut conn, "order_items");
    bypass(&mut conn, "order");
    let mut item = OrderItem::find(&mut conn, 1).unwrap();
    let mut order = Order::find(&mut conn, 1).unwrap();
    let tokens = (item.version, order.items_version);
    assert_eq!(tokens, (2, 2), "each trigger advanced its own token");

    (item.note, order.note) = ("saved".into(), "saved".into());
    item.save_checked(&mut conn).expect("save the item");
    order.save_checked(&mut conn).expect("save the order");
    assert_eq!(OrderItem::find(&mut conn, 1).unwrap().version, 3);
    assert_eq!(Order::find(&mut conn, 1).unwrap().items_version, 3);
    assert_ne!(items_guard.trigger_name(), order_guard.trigger_name());
}

#[test]
fn installing_the_same_guard_twice_fails_and_keeps_the_first() {
    let db = test_db!();
    let mut conn = db.conn();
    create_table(&mut conn, "order_items", "version", "INTEGER", 1);
    let guard = BypassGuard::of::<OrderItem>();
    install(&mut conn, &guard).expect("first install");
    let again = install(&mut conn, &guard);
    assert!(again.is_err(), "a second install must fail loudly");

    bypass(&mut conn, "order_items");
    let version = OrderItem::find(&mut conn, 1).unwrap().version;
    assert_eq!(version, 2, "advanced once");
}

#[test]
fn sql_names_with_quotes_and_dollar_quotes_round_trip() {
    let db = test_db!();
    let mut conn = db.conn();
    let table = "odd \"quoted\" `ticked` $occ$; -- table";
    let token = "ver$occ$'; DROP TABLE sentinel; --";
    create_table(&mut conn, table, token, "INTEGER", 1);
    create_sentinel(&mut conn);

    let guard = BypassGuard::of::<OddRow>();
    install(&mut conn, &guard).expect("install the guard of the odd table");
    let mut mine = OddRow::find(&mut conn, 1).unwrap();
    bypass(&mut conn, table);
    assert_eq!(OddRow::find(&mut conn, 1).unwrap().version, 2);
    mine.note = "stale".into();
    assert!(mine.save_checked(&mut conn).unwrap_err().is_conflict());

    let mut fresh = OddRow::find(&mut conn, 1).unwrap();
    fresh.note = "saved".into();
    fresh.save_checked(&mut conn).expect("checked save");
    assert_eq!(OddRow::find(&mut conn, 1).unwrap().version, 3);
    assert_sentinel_survives(&mut conn);

    uninstall(&mut conn, &guard);
    bypass(&mut conn, table);
    let version = OddRow::find(&mut conn, 1).unwrap().version;
    assert_eq!(version, 3, "no trigger left");
}

#[test]
fn long_table_names_get_distinct_names_within_the_limit() {
    let db = test_db!();
    let mut conn = db.conn();
    let a = "long_table_name_that_fills_the_whole_identifier_limit_of_pg_a12";
    let b = "long_table_name_that_fills_the_whole_identifier_limit_of_pg_b12";
    assert_eq!((a.len(), b.len()), (63, 63));
    create_table(&mut conn, a, "version", "INTEGER", 1);
    create_table(&mut conn, b, "revision", "INTEGER", 1);
    let (ga, gb) = (BypassGuard::of::<LongA>(), BypassGuard::of::<LongB>());
    install(&mut conn, &ga).expect("install the first guard");
    install(&mut conn, &gb).expect("install the second guard");

    bypass(&mut conn, a);
    bypass(&mut conn, b);
    assert_eq!(LongA::find(&mut conn, 1).unwrap().version, 2);
    assert_eq!(LongB::find(&mut conn, 1).unwrap().revision, 2);
    for guard in [&ga, &gb] {
        assert!(guard.trigger_name().len() <= 63, "{}", guard.trigger_name());
    }
}

/// A row whose token sits at its type's MAX: a bypassing write makes the trigger wrap
/// it to MIN, and the row saves again from there.
macro_rules! wrap_scenarios {
    ($($test:ident: $entity:ident, $table:literal, $sql_type:literal, $int:ty;)+) => {$(
        #[test]
        fn $test() {
            let db = test_db!();
            let mut conn = db.conn();
            create_table(&mut conn, $table, "version", $sql_type, <$int>::MAX.into());
            install(&mut conn, &BypassGuard::of::<$entity>()).expect("install");

            bypass(&mut conn, $table);
            let mut row = $entity::find(&mut conn, 1).unwrap();
            assert_eq!(row.version, <$int>::MIN, "the trigger wraps MAX to MIN");
            row.note = "saved".into();
            row.save_checked(&mut conn).expect("the row can be saved again");
            assert_eq!($entity::find(&mut conn, 1).unwrap().version, <$int>::MIN + 1);
        }
    )+};
}

wrap_scenarios! {
    the_trigger_wraps_an_i16_token_at_max: Wrap16, "wrap16", "SMALLINT", i16;
    the_trigger_wraps_an_i32_token_at_max: Wrap32, "wrap32", "INTEGER", i32;
    the_trigger_wraps_an_i64_token_at_max: Wrap64, "wrap64", "BIGINT", i64;
}

/// A table in another schema: PostgreSQL's `CREATE SCHEMA`, SQLite's `ATTACH`.
/// MySQL's schemas are databases: see `a_guard_in_another_database`.
#[test]
fn a_schema_qualified_table_is_guarded_in_its_schema() {
    let db = test_db!();
    let mut conn = db.conn();
    let schema = match GUARD {
        Dialect::Postgres => "CREATE SCHEMA occ_aux",
        Dialect::Sqlite => "ATTACH DATABASE ':memory:' AS occ_aux",
        _ => return,
    };
    run_sql(&mut conn, schema);
    create_table_sql(&mut conn, "occ_aux.items", "version", "INTEGER", "1");
    let guard = BypassGuard::of::<AuxItem>();
    install(&mut conn, &guard).expect("install");

    let mut mine = AuxItem::find(&mut conn, 1).unwrap();
    bypass_sql(&mut conn, "occ_aux.items");
    mine.note = "stale".into();
    assert!(mine.save_checked(&mut conn).unwrap_err().is_conflict());
    uninstall(&mut conn, &guard);
}

/// MySQL's schemas are databases: a second one, dropped when the test ends.
struct OtherDatabase<'a>(&'a mut Conn, String);

impl Drop for OtherDatabase<'_> {
    fn drop(&mut self) {
        let drop = format!("DROP DATABASE IF EXISTS {}", q(&self.1));
        let _ = self.0.batch_execute(&drop);
    }
}

#[test]
fn a_guard_in_another_database() {
    if GUARD != Dialect::Mysql {
        return;
    }
    let db = test_db!();
    let mut conn = db.conn();
    let name = format!("occ_guard_other_{}", std::process::id());
    run_sql(&mut conn, &format!("CREATE DATABASE {}", q(&name)));
    let other = OtherDatabase(&mut conn, name.clone());
    let items = format!("{}.{}", q(&name), q("items"));
    create_table_sql(other.0, &items, "version", "INTEGER", "1");
    let guard = BypassGuard::new("items", "version", &["id"], TokenKind::Integer).in_schema(&name);
    install(other.0, &guard).expect("install");
    bypass_sql(other.0, &items);
    let version = tokens(other.0, "version", &items);
    assert_eq!(version, [2], "the other database's trigger advanced it");
    uninstall(other.0, &guard);
}

#[test]
fn a_hostile_name_from_new_is_refused_or_round_trips() {
    let db = test_db!();
    let mut conn = db.conn();
    create_sentinel(&mut conn);
    let kind = TokenKind::Integer;
    // A NUL cannot be an identifier anywhere: a typed error, nothing rendered.
    let nul = BypassGuard::new("t\0\"; DROP TABLE sentinel; --", "v", &["id"], kind);
    let refused = nul.install_sql(GUARD);
    assert!(matches!(refused, Err(GuardError::InvalidName { .. })));
    // Everything else is quoted: the odd names are a real table and column.
    let (table, token) = ("t$occ$\"`'; DROP TABLE sentinel; --", "v$occ$ END; $$");
    create_table(&mut conn, table, token, "INTEGER", 1);
    let guard = BypassGuard::new(table, token, &["id"], kind);
    install(&mut conn, &guard).expect("install");
    bypass(&mut conn, table);
    assert_eq!(tokens(&mut conn, &q(token), &q(table)), [2]);
    assert_sentinel_survives(&mut conn);
}

#[derive(QueryableByName)]
struct Token {
    #[diesel(sql_type = diesel::sql_types::Text)]
    text: String,
}

/// A `UuidToken` column, 16 bytes (`bytea` on PostgreSQL, `BINARY(16)` on MySQL,
/// `BLOB` on SQLite) or PostgreSQL's `uuid`: a write that bypasses diesel-occ gets a
/// fresh UUID of the column's own type.
#[test]
fn a_uuid_token_column_of_either_type_gets_a_fresh_uuid() {
    let columns: &[&str] = match GUARD {
        Dialect::Postgres => &["BYTEA", "UUID"],
        Dialect::Mysql => &["BINARY(16)"],
        _ => &["BLOB"],
    };
    let db = test_db!();
    let mut conn = db.conn();
    for (n, &column) in columns.iter().enumerate() {
        let table = format!("uuid_tokens_{n}");
        let first = diesel_occ::UuidToken::initial();
        let (uuid, hex) = (first.0.hyphenated(), first.0.simple());
        let (value, select) = match (GUARD, column) {
            (Dialect::Postgres, "UUID") => (format!("'{uuid}'"), "version::text"),
            (Dialect::Postgres, _) => (format!("decode('{hex}', 'hex')"), "encode(version, 'hex')"),
            (Dialect::Mysql, _) => (format!("UNHEX('{hex}')"), "lower(hex(version))"),
            _ => (format!("X'{hex}'"), "lower(hex(version))"),
        };
        create_table_sql(&mut conn, &q(&table), "version", column, &value);
        let guard = BypassGuard::new(&table, "version", &["id"], TokenKind::UuidBytes);
        install(&mut conn, &guard).expect("install the guard");
        let read = |conn: &mut Conn| -> String {
            let query = diesel::sql_query(format!("SELECT {select} AS text FROM {}", q(&table)));
            let token: Token = query.get_result(conn).expect("read the token");
            token.text.replace('-', "")
        };
        let before = read(&mut conn);
        assert_eq!(before, first.0.simple().to_string(), "{column}: seeded");
        bypass(&mut conn, &table);
        let after = read(&mut conn);
        assert_ne!(after, before, "{column}: the trigger drew a fresh UUID");
        assert_eq!(after.len(), 32, "{column}: 16 bytes: {after}");
    }
}
