//! The generic repository on a blocking connection.

use diesel::prelude::*;
use diesel_occ_examples::repository::Repository;
use diesel_occ_tests::TestDb;

use super::super::{Counter, counter};
use super::Conn;
use diesel_occ_tests::schema::pg::counters;

#[test]
fn the_generic_repository_runs_every_checked_write_and_refuses_the_stale_writer() {
    let Some(db) = TestDb::<Conn>::create("repository_blocking") else {
        return;
    };
    let conn = &mut db.conn();
    let counters = Repository::<Counter>::new();

    let mut created = counter(1, 10);
    assert_eq!(counters.create(conn, &mut created).unwrap(), 1);
    let taken = counters.create(conn, &mut counter(1, 0)).unwrap_err();
    assert!(matches!(taken, diesel_occ::Error::UniqueViolation(_)), "{taken:?}");

    let mut mine = counters.get(conn, 1).unwrap();
    let mut theirs = mine.clone();
    theirs.value = 11;
    counters.save(conn, &mut theirs).unwrap();
    mine.value = 12;
    let stale = counters.save(conn, &mut mine).unwrap_err();
    assert_eq!(stale.as_conflict().unwrap().current::<i32>(), Some(2));

    let etag = counters.update(conn, 1, &2, counters::value.eq(13)).unwrap();
    assert_eq!(etag, 3);
    assert!(counters.update(conn, 1, &2, counters::value.eq(0)).unwrap_err().is_conflict());
    assert!(counters.delete(conn, 1, &2).unwrap_err().is_conflict());
    counters.delete(conn, 1, &etag).unwrap();
    assert!(counters.get(conn, 1).unwrap_err().is_not_found());
}
