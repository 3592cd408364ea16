//! `BlockInPlace` on a current-thread runtime (no `block_in_place`: statements run on the
//! blocking pool): a checked save dropped while its UPDATE runs there ends before the drop
//! returns, so the next checked write on the connection gets a typed answer, and the row holds
//! the dropped write whole. A trigger stops the UPDATE in a function of the test's until the drop.

use std::sync::Arc;

use diesel::expression::functions::declare_sql_function;
use diesel_occ::Error;
use diesel_occ::asynchronous::prelude::*;

use super::AsyncConn as Conn;
use super::counters::{load, seed};
use crate::cancellation::cut::{Cut, Stage};
use crate::flavours::asynchronous::run_sql;

#[declare_sql_function]
extern "SQL" {
    /// Called by the trigger on `counters`: stops the UPDATE at the cut.
    fn occ_update_gate() -> diesel::sql_types::Integer;
}

#[tokio::test(flavor = "current_thread")]
async fn a_save_dropped_on_the_blocking_pool_ends_before_the_next_write_on_its_connection() {
    let db = async_test_db!();
    seed(&db, 1).await;
    let mut conn = db.conn().await;
    let cut = Cut::new(Stage::MidStatement);
    let gate = Arc::clone(&cut);
    let registered = conn.spawn_blocking(move |conn| {
        occ_update_gate_utils::register_impl(conn, move || {
            gate.block_at(Stage::MidStatement);
            1
        })
    });
    registered.await.expect("register the gate");
    let trigger = "CREATE TEMP TRIGGER occ_stop_update BEFORE UPDATE ON counters \
         BEGIN SELECT occ_update_gate(); END";
    run_sql(&mut conn, trigger).await;

    let mut mine = load(&mut conn, 1).await;
    mine.increment();
    cut.drop_when_stopped(mine.save_checked(&mut conn)).await;

    // The same connection, right after the drop returned.
    let mut stale = mine.clone();
    stale.increment();
    let answer = stale.save_checked(&mut conn).await;
    let Some(conflict) = answer.as_ref().err().and_then(Error::as_conflict) else {
        panic!("a conflict with the dropped save's token: {answer:?}");
    };
    assert_eq!(conflict.current::<i32>(), Some(2), "{conflict:?}");
    let row = load(&mut conn, 1).await;
    row.assert_whole();
    assert_eq!(row.value, 1, "the dropped save landed whole, once");

    let mut fresh = row;
    fresh.increment();
    let saved = fresh.save_checked(&mut conn).await;
    saved.expect("the connection works");
    assert_eq!(load(&mut conn, 1).await.version, 3);
}
