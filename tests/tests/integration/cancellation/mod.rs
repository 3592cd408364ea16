//! Cancellation: async saves and retries dropped at any point leave whole rows, free
//! locks and a pool whose connections are in step with their servers. Each future is
//! dropped at a stage a [`cut::Cut`] forced, never by a deadline.

mod cut;

on_every_backend!(asynchronous_counters, asynchronous);

/// `asynchronous::retry_in_blocking_task`, SQLite only (it runs on wrapped blocking
/// connections).
#[path = "."]
pub(crate) mod sqlite_blocking_task {
    #[allow(unused_imports)]
    use diesel_occ_tests::schema::sqlite as schema;
    type AsyncConn = diesel_async::sync_connection_wrapper::SyncConnectionWrapper<
        diesel::sqlite::SqliteConnection,
    >;
    #[path = "blocking_task.rs"]
    mod blocking_task;
    #[path = "../shared/asynchronous_counters.rs"]
    mod counters;
}

/// SQLite on `SyncConnectionWrapper<_, BlockInPlace>`, the wrapper that runs its
/// statements on the task's thread, within one poll: both retry helpers' scenarios,
/// at the stages where such a future can be dropped; and on a current-thread runtime,
/// where it runs them on the blocking pool, a save dropped mid-statement.
#[path = "."]
pub(crate) mod sqlite_block_in_place {
    #[allow(unused_imports)]
    use diesel_occ_tests::schema::sqlite as schema;
    type AsyncConn = diesel_async::sync_connection_wrapper::SyncConnectionWrapper<
        diesel::sqlite::SqliteConnection,
        diesel_occ::asynchronous::BlockInPlace,
    >;
    #[path = "asynchronous.rs"]
    mod asynchronous;
    #[path = "blocking_task.rs"]
    mod blocking_task;
    #[path = "../shared/asynchronous_counters.rs"]
    mod counters;
    #[path = "current_thread.rs"]
    mod current_thread;
}
