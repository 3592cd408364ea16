//! Errors a database produced, on a blocking connection: a unique violation and a
//! check violation carrying values, a conflict, retries exhausted, a missing row.

use diesel::prelude::*;
use diesel_occ::blocking;
use diesel_occ::prelude::*;
use diesel_occ::{Error, UuidToken};
use diesel_occ_tests::entities::Counter;

use super::super::{LABEL, VALUE, assert_no_leak, policy};
use super::{Conn, schema};

#[derive(Debug, Clone, PartialEq, Queryable, Selectable, Insertable, Versioned)]
#[diesel(table_name = schema::stock)]
struct Stock {
    id: i32,
    available: i32,
    #[occ(version)]
    version: UuidToken,
}

fn secret_counter() -> Counter {
    let label = Some(LABEL.to_owned());
    Counter {
        label,
        ..Counter::new(1, VALUE)
    }
}

/// Inserts the secret counter: Ok once, a unique violation from then on.
fn insert_secret_counter(conn: &mut Conn) -> QueryResult<usize> {
    let insert = diesel::insert_into(schema::counters::table).values(secret_counter());
    insert.execute(conn)
}

#[test]
fn constraint_violations_do_not_show_the_values_or_the_statement() {
    let db = test_db!();
    let mut conn = db.conn();
    insert_secret_counter(&mut conn).expect("first insert");
    let error = Error::from(insert_secret_counter(&mut conn).expect_err("duplicate key"));
    let shown = error.to_string();
    assert_eq!(shown, "database error: unique violation", "{error:?}");
    assert_no_leak(&error, &[&VALUE.to_string(), LABEL]);

    let mut stock = Stock {
        id: 7,
        available: 5,
        version: UuidToken::initial(),
    };
    let insert = diesel::insert_into(schema::stock::table).values(&stock);
    insert.execute(&mut conn).expect("stock");
    stock.available = -VALUE;
    let saved = stock.save_checked(&mut conn);
    let error = saved.expect_err("CHECK (available >= 0)");
    assert!(matches!(error, Error::Database(_)), "{error:?}");
    assert_no_leak(&error, &[&VALUE.to_string()]);
}

#[test]
fn conflicts_and_exhausted_retries_show_key_and_tokens_only() {
    let db = test_db!();
    let mut conn = db.conn();
    insert_secret_counter(&mut conn).expect("seed");
    let mut mine: Counter = Counter::find(&mut conn, 1).expect("row");
    let mut theirs = mine.clone();
    theirs.value += 1;
    theirs.save_checked(&mut conn).expect("their save");
    mine.value -= 1;
    let error = mine.save_checked(&mut conn).expect_err("stale");
    assert!(error.is_conflict());
    assert_eq!(
        error.to_string(),
        "concurrency conflict on counters (id=1) during update: expected token 1, \
         the row now holds token 2"
    );
    let values = [VALUE - 1, VALUE, VALUE + 1].map(|v| v.to_string());
    let secrets: Vec<&str> = values.iter().map(String::as_str).chain([LABEL]).collect();
    assert_no_leak(&error, &secrets);

    let source = || Conn::establish(db.url());
    let result: Result<(), Error> = blocking::retry(&source, &policy(), |conn, attempt| {
        let mut mine: Counter = attempt.find(conn, 1)?;
        let mut theirs = mine.clone();
        theirs.label = Some(format!("{LABEL}-{}", attempt.number()));
        theirs.save_checked(&mut db.conn())?;
        mine.value -= 1;
        mine.save_checked(conn)
    });
    let error = result.expect_err("every attempt conflicts");
    assert!(matches!(error, Error::RetriesExhausted(_)), "{error:?}");
    assert_no_leak(&error, &secrets);

    let missing = Counter::find(&mut conn, 424_242).expect_err("no such row");
    assert!(missing.is_not_found());
    assert_no_leak(&missing, &secrets);
}
