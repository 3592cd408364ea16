//! A session killed between retry attempts, on an async connection from a deadpool
//! pool. The kill runs on a blocking connection, awaited: the barrier.

use std::sync::Mutex;
use std::time::Duration;

use diesel::dsl::sql;
use diesel::sql_types::BigInt;
use diesel_async::RunQueryDsl as _;
use diesel_occ::Error;
use diesel_occ::asynchronous;
use diesel_occ::asynchronous::prelude::*;
use diesel_occ_tests::AsyncTestConnection;

use super::counters::{Counter, pool, quick, row, seed};
use super::{AsyncConn, Conn};
use crate::servers::Server;

/// The attempt meets a conflict, then its session is killed (from a
/// blocking connection, awaited: the barrier). The helper retries the
/// conflict; deadpool's recycle check finds the connection dead and opens a
/// new one; the second attempt re-reads and saves. Both writes are in.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_pooled_session_killed_between_attempts_is_replaced_and_the_retry_succeeds() {
    let db = test_db!();
    seed(&db);
    let pool = pool(&db, Some(Duration::from_secs(10)));
    let sessions = Mutex::new(Vec::new());
    let url = db.url().to_owned();
    let saved = asynchronous::retry(&pool, &quick(), async |conn, attempt| {
        let id: i64 = diesel::select(sql::<BigInt>(AsyncConn::CONNECTION_ID))
            .get_result(conn)
            .await?;
        sessions.lock().unwrap().push(id);
        let mut counter: Counter = attempt.find(conn, 1).await?;
        if attempt.is_first() {
            let url = url.clone();
            tokio::task::spawn_blocking(move || {
                use diesel::Connection as _;
                use diesel_occ::CheckedDsl as Sync;
                let mut theirs_conn = Conn::establish(&url).expect("connect");
                let mut theirs: Counter = Sync::find(&mut theirs_conn, 1).expect("row 1");
                theirs.value += 100;
                Sync::save_checked(&mut theirs, &mut theirs_conn).expect("their save");
            })
            .await
            .expect("their writer");
        }
        counter.value += 1;
        let saved = counter.save_checked(conn).await;
        if attempt.is_first() {
            assert!(saved.as_ref().is_err_and(Error::is_conflict), "{saved:?}");
            let url = url.clone();
            tokio::task::spawn_blocking(move || {
                use diesel::Connection as _;
                let mut admin = Conn::establish(&url).expect("connect");
                admin.kill(id as u64);
            })
            .await
            .expect("killer");
        }
        saved.map(|()| counter.version)
    })
    .await
    .expect("the retry on a new connection");
    let sessions = sessions.into_inner().unwrap();
    assert_eq!(sessions.len(), 2);
    assert_ne!(sessions[0], sessions[1], "the dead session was not reused");
    assert_eq!(saved, 3);
    assert_eq!(row(&db), (111, 3), "their write and ours");
}
