//! Cancellation: async saves and retries dropped at any point leave whole rows, free locks and
//! pooled connections in step with their servers; each is dropped where a [`cut::Cut`] forced.

mod cut;

on_every_backend!(asynchronous_counters, asynchronous);

/// `asynchronous::retry_in_blocking_task`, SQLite only (on wrapped blocking connections).
#[path = "."]
pub(crate) mod sqlite_blocking_task {
    use diesel_async::sync_connection_wrapper::SyncConnectionWrapper;
    #[allow(unused_imports)]
    use diesel_occ_tests::schema::sqlite as schema;
    type AsyncConn = SyncConnectionWrapper<diesel::sqlite::SqliteConnection>;
    #[path = "blocking_task.rs"]
    mod blocking_task;
    #[path = "../shared/asynchronous_counters.rs"]
    mod counters;
}

/// SQLite on `SyncConnectionWrapper<_, BlockInPlace>`, which runs statements within one
/// poll: both retry helpers' scenarios where such a future can be dropped; and on a
/// current-thread runtime (statements on the blocking pool), a save dropped mid-statement.
#[path = "."]
pub(crate) mod sqlite_block_in_place {
    use diesel_async::sync_connection_wrapper::SyncConnectionWrapper;
    use diesel_occ::asynchronous::BlockInPlace;
    #[allow(unused_imports)]
    use diesel_occ_tests::schema::sqlite as schema;
    type AsyncConn = SyncConnectionWrapper<diesel::sqlite::SqliteConnection, BlockInPlace>;
    #[path = "asynchronous.rs"]
    mod asynchronous;
    #[path = "blocking_task.rs"]
    mod blocking_task;
    #[path = "../shared/asynchronous_counters.rs"]
    mod counters;
    #[path = "current_thread.rs"]
    mod current_thread;
}
