//! Prepared statements stay bounded: writes whose SQL text varies (tracked saves of
//! every subset of the fields, full saves with every pattern of `None` fields, PATCHes
//! by key of every subset of the columns, saves under conditions of every shape) leave
//! a connection with a small, fixed number of prepared statements, however many
//! distinct texts they run. MariaDB's `max_prepared_stmt_count` is one limit for the whole server.
//!
//! Counted three ways: the statements Diesel's cache keeps (its `CacheQuery` events, on
//! every backend), the statements the server holds open for the session (MariaDB's
//! `Com_stmt_prepare - Com_stmt_close`, PostgreSQL's `pg_prepared_statements`), and on
//! MariaDB the server-wide `Prepared_stmt_count`.

use diesel::prelude::{Queryable, Selectable};

/// Twelve trackable, nullable columns: 4096 subsets, 4096 `None` patterns.
pub(crate) const COLUMNS: usize = 12;
/// How many saves each test runs: every pattern once.
pub(crate) const PATTERNS: u32 = 1 << COLUMNS;
/// Prepared statements one connection may keep after every pattern: the full save, the
/// find, the token query and at most two texts of each statement whose text varies
/// (all of its `Option` parts set, or none; an upsert has two statements: its insert
/// and its update), with room to spare. Without the bound it is thousands.
pub(crate) const BOUND: i64 = 24;

/// `stmt_wide`, its twelve columns named once: the table, a PATCH and the tracked row.
macro_rules! wide {
    ($($c:ident),+) => {
        diesel::table! {
            stmt_wide (id) {
                id -> Integer,
                $($c -> Nullable<Integer>,)+
                version -> Integer,
            }
        }

        /// A PATCH of the columns in `pattern` (bit i: column i) to `value`, the others
        /// left alone: one SQL text per pattern.
        pub(crate) type Patch = ($(Option<diesel::dsl::Eq<stmt_wide::$c, i32>>,)+);

        pub(crate) fn patch(pattern: u32, value: i32) -> Patch {
            use diesel::ExpressionMethods;
            let [$($c),+] = values(pattern, value);
            ($($c.map(|v| stmt_wide::$c.eq(v)),)+)
        }

        /// One row of `stmt_wide`, tracked.
        #[derive(Debug, Clone, PartialEq, Queryable, Selectable)]
        #[derive(diesel::Insertable, diesel_occ::Versioned)]
        #[diesel(table_name = stmt_wide)]
        #[occ(track)]
        pub(crate) struct Wide {
            pub(crate) id: i32,
            $($c: Option<i32>,)+
            #[occ(version)]
            version: i32,
        }

        impl Wide {
            pub(crate) fn set(&mut self, values: [Option<i32>; COLUMNS]) {
                let [$($c),+] = values;
                $(self.$c = $c;)+
            }

            pub(crate) fn get(&self) -> [Option<i32>; COLUMNS] {
                [$(self.$c),+]
            }
        }
    };
}

wide!(c0, c1, c2, c3, c4, c5, c6, c7, c8, c9, c10, c11);

/// The table, in SQL every backend accepts.
pub(crate) const CREATE: &str = "CREATE TABLE stmt_wide (id INTEGER PRIMARY KEY, \
    c0 INTEGER, c1 INTEGER, c2 INTEGER, c3 INTEGER, c4 INTEGER, c5 INTEGER, \
    c6 INTEGER, c7 INTEGER, c8 INTEGER, c9 INTEGER, c10 INTEGER, c11 INTEGER, \
    version INTEGER NOT NULL)";
pub(crate) const SEED: &str =
    "INSERT INTO stmt_wide VALUES (1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1)";

/// The columns of `pattern` (bit i: column i), with `value` or `None`.
pub(crate) fn values(pattern: u32, value: i32) -> [Option<i32>; COLUMNS] {
    std::array::from_fn(|i| (pattern & (1 << i) != 0).then_some(value))
}

/// `cI IS NOT NULL` for every column I in `pattern`, as a condition written at run
/// time: true on the seeded row, one SQL text per pattern.
pub(crate) fn condition(pattern: u32) -> diesel::expression::SqlLiteral<diesel::sql_types::Bool> {
    let mut text = String::from("1 = 1");
    for i in (0..COLUMNS).filter(|i| pattern & (1 << i) != 0) {
        text.push_str(&format!(" AND c{i} IS NOT NULL"));
    }
    diesel::dsl::sql(&text)
}

/// A row of `SHOW STATUS`.
#[derive(diesel::QueryableByName)]
pub(crate) struct Status {
    #[diesel(sql_type = diesel::sql_types::Text)]
    #[diesel(column_name = Variable_name)]
    name: String,
    #[diesel(sql_type = diesel::sql_types::Text)]
    #[diesel(column_name = Value)]
    value: String,
}

/// A row of `PG_OPEN`.
#[derive(diesel::QueryableByName)]
pub(crate) struct Count {
    #[diesel(sql_type = diesel::sql_types::BigInt)]
    pub(crate) count: i64,
}

pub(crate) fn status_value(rows: &[Status], name: &str) -> i64 {
    rows.iter()
        .find(|row| row.name.eq_ignore_ascii_case(name))
        .and_then(|row| row.value.parse().ok())
        .unwrap_or_else(|| panic!("no status {name}"))
}

/// What [`mysql_open`] counts.
pub(crate) const MYSQL_OPEN: &str =
    "SHOW SESSION STATUS WHERE Variable_name IN ('Com_stmt_prepare', 'Com_stmt_close')";
pub(crate) const MYSQL_SERVER: &str = "SHOW GLOBAL STATUS LIKE 'Prepared_stmt_count'";
pub(crate) const PG_OPEN: &str = "SELECT count(*) AS count FROM pg_prepared_statements";

/// Statements this MariaDB session prepared and has not closed.
pub(crate) fn mysql_open(rows: &[Status]) -> i64 {
    status_value(rows, "Com_stmt_prepare") - status_value(rows, "Com_stmt_close")
}

/// Other sessions (tests running beside this one) move the server-wide count too: this
/// much slack for them, still far below the thousands an unbounded cache leaves.
pub(crate) const SERVER_SLACK: i64 = 512;

/// The three counts after every pattern, against the counts before.
pub(crate) fn assert_bounded(
    what: &str,
    cached: usize,
    open: (Option<i64>, Option<i64>),
    server: (Option<i64>, Option<i64>),
) {
    let grew = |(before, after): (Option<i64>, Option<i64>)| Some(after? - before?);
    let (open, server) = (grew(open), grew(server));
    let report = format!(
        "{what}: Diesel's cache kept {cached} statements, the session holds {open:?} more, \
         Prepared_stmt_count grew by {server:?}"
    );
    assert!(i64::try_from(cached).unwrap() <= BOUND, "{report}");
    assert!(open.is_none_or(|open| open <= BOUND), "{report}");
    let server_bounded = server.is_none_or(|server| server <= BOUND + SERVER_SLACK);
    assert!(server_bounded, "{report}");
}

on_every_backend!(scenarios);
