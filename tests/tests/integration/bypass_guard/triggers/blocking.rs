//! The guard's DDL on a blocking connection.

use diesel::connection::SimpleConnection;
use diesel::prelude::*;
use diesel_occ::bypass_guard::{BypassGuard, GuardError};
use diesel_occ::prelude::*;
use diesel_occ::{Dialect, TokenKind};
use diesel_occ_tests::TestConnection;

use super::super::super::dialect;
use super::super::tables as schema;
use super::Conn;

const GUARD: Dialect = dialect(Conn::BACKEND);

#[derive(Debug, Clone, PartialEq, Queryable, Selectable, Versioned)]
#[diesel(table_name = schema::order_items)]
struct OrderItem {
    id: i32,
    note: String,
    #[occ(version)]
    version: i32,
}

#[derive(Debug, Clone, PartialEq, Queryable, Selectable, Versioned)]
#[diesel(table_name = schema::order)]
struct Order {
    id: i32,
    note: String,
    #[occ(version)]
    items_version: i32,
}

#[derive(Debug, Clone, PartialEq, Queryable, Selectable, Versioned)]
#[diesel(table_name = schema::odd_rows)]
struct OddRow {
    id: i32,
    note: String,
    #[occ(version)]
    version: i32,
}

#[derive(Debug, Clone, PartialEq, Queryable, Selectable, Versioned)]
#[diesel(table_name = schema::long_a)]
struct LongA {
    id: i32,
    note: String,
    #[occ(version)]
    version: i32,
}

#[derive(Debug, Clone, PartialEq, Queryable, Selectable, Versioned)]
#[diesel(table_name = schema::long_b)]
struct LongB {
    id: i32,
    note: String,
    #[occ(version)]
    revision: i32,
}

#[derive(Debug, Clone, PartialEq, Queryable, Selectable, Versioned)]
#[diesel(table_name = schema::wrap16)]
struct Wrap16 {
    id: i32,
    note: String,
    #[occ(version)]
    version: i16,
}

#[derive(Debug, Clone, PartialEq, Queryable, Selectable, Versioned)]
#[diesel(table_name = schema::wrap32)]
struct Wrap32 {
    id: i32,
    note: String,
    #[occ(version)]
    version: i32,
}

#[derive(Debug, Clone, PartialEq, Queryable, Selectable, Versioned)]
#[diesel(table_name = schema::wrap64)]
struct Wrap64 {
    id: i32,
    note: String,
    #[occ(version)]
    version: i64,
}

#[derive(Debug, Clone, PartialEq, Queryable, Selectable, Versioned)]
#[diesel(table_name = schema::items)]
struct AuxItem {
    id: i32,
    note: String,
    #[occ(version)]
    version: i32,
}

/// An identifier quoted for this backend, for the tests' own DDL.
fn q(name: &str) -> String {
    match GUARD {
        Dialect::Mysql => format!("`{}`", name.replace('`', "``")),
        _ => format!("\"{}\"", name.replace('"', "\"\"")),
    }
}

/// Creates `table (id, note, <token> <token_type>)` holding one row
/// `(1, 'a', token)`.
fn create_table(conn: &mut Conn, table: &str, token: &str, token_type: &str, value: i64) {
    let (table, token) = (q(table), q(token));
    conn.batch_execute(&format!(
        "CREATE TABLE {table} (id INTEGER PRIMARY KEY, note VARCHAR(20) NOT NULL, \
         {token} {token_type} NOT NULL);\n\
         INSERT INTO {table} (id, note, {token}) VALUES (1, 'a', {value});"
    ))
    .expect("create table");
}

fn install(conn: &mut Conn, guard: &BypassGuard) -> QueryResult<()> {
    conn.batch_execute(&guard.install_sql(GUARD).expect("guard DDL"))
}

/// A write that bypasses diesel-occ: it changes the note, not the token.
fn bypass(conn: &mut Conn, table: &str) {
    diesel::sql_query(format!(
        "UPDATE {} SET note = 'bypass' WHERE id = 1",
        q(table)
    ))
    .execute(conn)
    .expect("bypass update");
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
    assert_eq!(
        (item.version, order.items_version),
        (2, 2),
        "each trigger advanced its own token"
    );

    item.note = "saved".into();
    item.save_checked(&mut conn)
        .expect("checked save of the item");
    order.note = "saved".into();
    order
        .save_checked(&mut conn)
        .expect("checked save of the order");
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
    assert!(
        install(&mut conn, &guard).is_err(),
        "a second install must fail loudly"
    );

    bypass(&mut conn, "order_items");
    assert_eq!(
        OrderItem::find(&mut conn, 1).unwrap().version,
        2,
        "advanced once"
    );
}

#[test]
fn sql_names_with_quotes_and_dollar_quotes_round_trip() {
    let db = test_db!();
    let mut conn = db.conn();
    let table = "odd \"quoted\" `ticked` $occ$; -- table";
    let token = "ver$occ$'; DROP TABLE sentinel; --";
    create_table(&mut conn, table, token, "INTEGER", 1);
    conn.batch_execute("CREATE TABLE sentinel (id INTEGER PRIMARY KEY)")
        .expect("create sentinel");

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
    diesel::sql_query("SELECT 1 FROM sentinel")
        .execute(&mut conn)
        .expect("the sentinel table survives");

    conn.batch_execute(&guard.uninstall_sql(GUARD).expect("guard DDL"))
        .expect("uninstall");
    bypass(&mut conn, table);
    assert_eq!(
        OddRow::find(&mut conn, 1).unwrap().version,
        3,
        "no trigger left"
    );
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
macro_rules! wrap_scenario {
    ($entity:ident, $table:literal, $sql_type:literal, $int:ty) => {{
        let db = test_db!();
        let mut conn = db.conn();
        create_table(&mut conn, $table, "version", $sql_type, <$int>::MAX.into());
        install(&mut conn, &BypassGuard::of::<$entity>()).expect("install");

        bypass(&mut conn, $table);
        let mut row = $entity::find(&mut conn, 1).unwrap();
        assert_eq!(row.version, <$int>::MIN, "the trigger wraps MAX to MIN");
        row.note = "saved".into();
        row.save_checked(&mut conn)
            .expect("the row can be saved again");
        assert_eq!(
            $entity::find(&mut conn, 1).unwrap().version,
            <$int>::MIN + 1
        );
    }};
}

#[test]
fn the_trigger_wraps_an_i16_token_at_max() {
    wrap_scenario!(Wrap16, "wrap16", "SMALLINT", i16);
}

#[test]
fn the_trigger_wraps_an_i32_token_at_max() {
    wrap_scenario!(Wrap32, "wrap32", "INTEGER", i32);
}

#[test]
fn the_trigger_wraps_an_i64_token_at_max() {
    wrap_scenario!(Wrap64, "wrap64", "BIGINT", i64);
}

/// A table in another schema: PostgreSQL's `CREATE SCHEMA`, SQLite's `ATTACH`.
/// MySQL's schemas are databases: see `a_guard_in_another_database`.
fn create_aux_schema(conn: &mut Conn) -> bool {
    let sql = match GUARD {
        Dialect::Postgres => "CREATE SCHEMA occ_aux",
        Dialect::Sqlite => "ATTACH DATABASE ':memory:' AS occ_aux",
        _ => return false,
    };
    conn.batch_execute(sql).expect("create schema");
    true
}

#[test]
fn a_schema_qualified_table_is_guarded_in_its_schema() {
    let db = test_db!();
    let mut conn = db.conn();
    if !create_aux_schema(&mut conn) {
        return;
    }
    conn.batch_execute(
        "CREATE TABLE occ_aux.items (id INTEGER PRIMARY KEY, note VARCHAR(20) NOT NULL, \
         version INTEGER NOT NULL);\n\
         INSERT INTO occ_aux.items (id, note, version) VALUES (1, 'a', 1);",
    )
    .expect("create occ_aux.items");
    let guard = BypassGuard::of::<AuxItem>();
    install(&mut conn, &guard).expect("install");

    let mut mine = AuxItem::find(&mut conn, 1).unwrap();
    diesel::sql_query("UPDATE occ_aux.items SET note = 'bypass' WHERE id = 1")
        .execute(&mut conn)
        .expect("bypass update");
    mine.note = "stale".into();
    assert!(mine.save_checked(&mut conn).unwrap_err().is_conflict());
    conn.batch_execute(&guard.uninstall_sql(GUARD).expect("guard DDL"))
        .expect("uninstall");
}

/// MySQL's schemas are databases: a second one, dropped when the test ends.
struct OtherDatabase<'a>(&'a mut Conn, String);

impl Drop for OtherDatabase<'_> {
    fn drop(&mut self) {
        let _ = self
            .0
            .batch_execute(&format!("DROP DATABASE IF EXISTS {}", q(&self.1)));
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
    conn.batch_execute(&format!("CREATE DATABASE {}", q(&name)))
        .expect("create database");
    let other = OtherDatabase(&mut conn, name.clone());
    let items = format!("{}.{}", q(&name), q("items"));
    other
        .0
        .batch_execute(&format!(
            "CREATE TABLE {items} (id INTEGER PRIMARY KEY, note VARCHAR(20) NOT NULL, \
         version INTEGER NOT NULL);\n\
         INSERT INTO {items} (id, note, version) VALUES (1, 'a', 1);"
        ))
        .expect("create the other database's table");
    let guard = BypassGuard::new("items", "version", &["id"], TokenKind::Integer).in_schema(&name);
    other
        .0
        .batch_execute(&guard.install_sql(GUARD).expect("guard DDL"))
        .expect("install");
    diesel::sql_query(format!("UPDATE {items} SET note = 'bypass' WHERE id = 1"))
        .execute(other.0)
        .expect("bypass update");
    let version: Vec<i32> = diesel::sql_query(format!("SELECT version AS v FROM {items}"))
        .load::<Version>(other.0)
        .expect("read the token")
        .into_iter()
        .map(|row| row.v)
        .collect();
    assert_eq!(
        version,
        [2],
        "the trigger in the other database advanced the token"
    );
    other
        .0
        .batch_execute(&guard.uninstall_sql(GUARD).expect("guard DDL"))
        .expect("uninstall");
}

#[derive(QueryableByName)]
struct Version {
    #[diesel(sql_type = diesel::sql_types::Integer)]
    v: i32,
}

#[test]
fn a_hostile_name_from_new_is_refused_or_round_trips() {
    let db = test_db!();
    let mut conn = db.conn();
    conn.batch_execute("CREATE TABLE sentinel (id INTEGER PRIMARY KEY)")
        .expect("create sentinel");
    let kind = TokenKind::Integer;
    // A NUL cannot be an identifier anywhere: a typed error, nothing rendered.
    let nul = BypassGuard::new("t\0\"; DROP TABLE sentinel; --", "v", &["id"], kind);
    assert!(matches!(
        nul.install_sql(GUARD),
        Err(GuardError::InvalidName { .. })
    ));
    // Everything else is quoted: the odd names are a real table and column.
    let table = "t$occ$\"`'; DROP TABLE sentinel; --";
    let token = "v$occ$ END; $$";
    create_table(&mut conn, table, token, "INTEGER", 1);
    let guard = BypassGuard::new(table, token, &["id"], kind);
    conn.batch_execute(&guard.install_sql(GUARD).expect("guard DDL"))
        .expect("install");
    bypass(&mut conn, table);
    let version: Vec<i32> =
        diesel::sql_query(format!("SELECT {} AS v FROM {}", q(token), q(table)))
            .load::<Version>(&mut conn)
            .expect("read the token")
            .into_iter()
            .map(|row| row.v)
            .collect();
    assert_eq!(version, [2]);
    diesel::sql_query("SELECT 1 FROM sentinel")
        .execute(&mut conn)
        .expect("the sentinel table survives");
}

/// A `UuidToken` column, 16 bytes (`bytea` on PostgreSQL, `BINARY(16)` on MySQL,
/// `BLOB` on SQLite) or PostgreSQL's `uuid`: a write that bypasses diesel-occ gets a
/// fresh UUID of the column's own type.
#[test]
fn a_uuid_token_column_of_either_type_gets_a_fresh_uuid() {
    use diesel::sql_types::Text;

    #[derive(QueryableByName)]
    struct Token {
        #[diesel(sql_type = Text)]
        text: String,
    }
    let columns: &[&str] = match GUARD {
        Dialect::Postgres => &["BYTEA", "UUID"],
        Dialect::Mysql => &["BINARY(16)"],
        _ => &["BLOB"],
    };
    let db = test_db!();
    let mut conn = db.conn();
    for (n, column) in columns.iter().enumerate() {
        let table = format!("uuid_tokens_{n}");
        let first = diesel_occ::UuidToken::initial();
        conn.batch_execute(&format!(
            "CREATE TABLE {} (id INTEGER PRIMARY KEY, note VARCHAR(20) NOT NULL, \
             version {column} NOT NULL)",
            q(&table)
        ))
        .expect("create table");
        let (uuid, hex) = (first.0.hyphenated(), first.0.simple());
        let value = match (GUARD, *column) {
            (Dialect::Postgres, "UUID") => format!("'{uuid}'"),
            (Dialect::Postgres, _) => format!("decode('{hex}', 'hex')"),
            (Dialect::Mysql, _) => format!("UNHEX('{hex}')"),
            _ => format!("X'{hex}'"),
        };
        conn.batch_execute(&format!(
            "INSERT INTO {} (id, note, version) VALUES (1, 'a', {value})",
            q(&table)
        ))
        .expect("insert");
        let guard = BypassGuard::new(&table, "version", &["id"], TokenKind::UuidBytes);
        install(&mut conn, &guard).expect("install the guard");
        let read = |conn: &mut Conn| -> String {
            let select = match (GUARD, *column) {
                (Dialect::Postgres, "UUID") => "SELECT version::text AS text FROM {t}",
                (Dialect::Postgres, _) => "SELECT encode(version, 'hex') AS text FROM {t}",
                _ => "SELECT lower(hex(version)) AS text FROM {t}",
            };
            diesel::sql_query(select.replace("{t}", &q(&table)))
                .get_result::<Token>(conn)
                .expect("read the token")
                .text
                .replace('-', "")
        };
        let before = read(&mut conn);
        assert_eq!(before, first.0.simple().to_string(), "{column}: seeded");
        bypass(&mut conn, &table);
        let after = read(&mut conn);
        assert_ne!(after, before, "{column}: the trigger drew a fresh UUID");
        assert_eq!(after.len(), 32, "{column}: 16 bytes: {after}");
    }
}
