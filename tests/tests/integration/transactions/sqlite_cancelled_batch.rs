//! A dropped async batch on `SyncConnectionWrapper<SqliteConnection>`: the batch is
//! dropped while its first UPDATE runs inside its transaction, held there by a TEMP
//! trigger that calls a function meeting the test at a barrier.

use std::sync::{Arc, Barrier};

use diesel::prelude::*;
use diesel::sqlite::SqliteConnection;
use diesel_async::sync_connection_wrapper::SyncConnectionWrapper;
use diesel_async::{AsyncConnection, SimpleAsyncConnection};
use diesel_occ::Error;
use diesel_occ::asynchronous::prelude::*;
use diesel_occ_tests::TestDb;
use diesel_occ_tests::entities::Counter;
use diesel_occ_tests::schema::sqlite as schema;

type Conn = SyncConnectionWrapper<SqliteConnection>;

diesel::define_sql_function! {
    /// Meets the test twice: once inside the UPDATE, once to be let go.
    fn occ_test_pause() -> Integer;
}

/// Meets the trigger's function at `barrier`, on a thread where waiting blocks no task.
async fn meet(barrier: &Arc<Barrier>) {
    let barrier = Arc::clone(barrier);
    let met = tokio::task::spawn_blocking(move || barrier.wait()).await;
    met.expect("barrier");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cancelled_batch_leaves_the_connection_visibly_broken() {
    let Some(db) = TestDb::<SqliteConnection>::create(concat!(module_path!(), "_", line!())) else {
        return;
    };
    let rows: Vec<_> = (1..=3).map(|id| Counter::new(id, 0)).collect();
    let seed = diesel::insert_into(schema::counters::table).values(rows);
    seed.execute(&mut db.conn()).expect("seed");
    let (reached, release) = (Arc::new(Barrier::new(2)), Arc::new(Barrier::new(2)));
    let inner = SqliteConnection::establish(db.url()).expect("connection");
    {
        let (reached, release) = (Arc::clone(&reached), Arc::clone(&release));
        occ_test_pause_utils::register_nondeterministic_impl(&inner, move || {
            reached.wait();
            release.wait();
            1
        })
        .expect("register the pause");
    }
    let mut conn: Conn = SyncConnectionWrapper::new(inner);
    let pause = "PRAGMA busy_timeout = 10000;
         CREATE TEMP TRIGGER pause BEFORE UPDATE ON counters WHEN OLD.id = 1
         BEGIN SELECT occ_test_pause(); END;";
    conn.batch_execute(pause).await.expect("pause trigger");
    let mut third = Counter::find(&mut conn, 3).await.expect("row 3");
    let mut batch = [
        Counter::find(&mut conn, 1).await.expect("row 1"),
        Counter::find(&mut conn, 2).await.expect("row 2"),
    ];
    batch[0].value = 11;
    batch[1].value = 12;
    {
        let save = batch.save_all_checked(&mut conn);
        tokio::pin!(save);
        tokio::select! {
            biased;
            outcome = &mut save => panic!("the batch finished: {outcome:?}"),
            () = meet(&reached) => {}
        }
        // The first UPDATE is running inside the batch's transaction: let it end,
        // then drop the batch before it is polled again.
        meet(&release).await;
    }

    third.value = 33;
    let later = third.save_checked(&mut conn).await;
    assert!(later.is_err(), "a later save returned {later:?}");
    assert_eq!(third.version, 1);
    let tx = conn.transaction(async |_| Ok::<_, Error>(())).await;
    assert!(tx.is_err(), "{tx:?}");
    drop(conn);

    let mut check = Conn::establish(db.url()).await.expect("connection");
    for id in 1..=3 {
        let row = Counter::find(&mut check, id).await.expect("row");
        assert_eq!((row.value, row.version), (0, 1), "row {id}");
    }
}
