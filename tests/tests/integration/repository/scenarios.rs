//! The generic repository, in both flavours: `Repository` on a blocking connection,
//! `AsyncRepository` on diesel-async.

flavour_prelude!();

use diesel::prelude::*;
#[flavour(asynchronous)]
use diesel_occ_examples::repository::AsyncRepository as Repository;
#[flavour(blocking)]
use diesel_occ_examples::repository::Repository;
use diesel_occ_tests::schema::pg::counters;

use super::super::{Counter, counter};

#[flavour(test)]
async fn the_generic_repository_runs_every_checked_write_and_refuses_the_stale_writer() {
    let db = db!();
    let conn = &mut db.conn().await;
    let counters = Repository::<Counter>::new();

    let mut created = counter(1, 10);
    assert_eq!(counters.create(conn, &mut created).await.unwrap(), 1);
    let taken = counters.create(conn, &mut counter(1, 0)).await.unwrap_err();
    let unique_violation = matches!(taken, diesel_occ::Error::UniqueViolation(_));
    assert!(unique_violation, "{taken:?}");

    let mut mine = counters.get(conn, 1).await.unwrap();
    let mut theirs = mine.clone();
    theirs.value = 11;
    counters.save(conn, &mut theirs).await.unwrap();
    mine.value = 12;
    let stale = counters.save(conn, &mut mine).await.unwrap_err();
    assert_eq!(stale.as_conflict().unwrap().current::<i32>(), Some(2));

    let etag = counters.update(conn, 1, &2, counters::value.eq(13)).await;
    let etag = etag.unwrap();
    assert_eq!(etag, 3);
    let refused = counters.update(conn, 1, &2, counters::value.eq(0)).await;
    assert!(refused.unwrap_err().is_conflict());
    let refused = counters.delete(conn, 1, &2).await;
    assert!(refused.unwrap_err().is_conflict());
    counters.delete(conn, 1, &etag).await.unwrap();
    assert!(counters.get(conn, 1).await.unwrap_err().is_not_found());
}
