//! The async flavour of the counters paths: each thread drives a diesel-async
//! connection on a runtime of its own (`Session`). Every path but the combiner is an
//! [`AsyncPath`], the twin of its blocking path (same reads, same writes, same twin),
//! and [`Async`] (`adaptor.rs`) runs it and drops some of its writes' futures after a
//! random number of pending polls. `async_transaction` also rolls back or panics inside
//! some transactions and runs them again; `async_combiner` applies `+1`s through
//! `asynchronous::Combiner`.

mod adaptor;
mod batch;
mod bulk_update;
mod combiner;
mod delete;
mod force_increment;
mod retry;
mod save_checked;
mod soft_delete;
mod tracked;
mod transaction;
mod update_by_key;
mod upsert;
mod versionless;

use diesel::prelude::*;
use diesel_async::RunQueryDsl;
use diesel_occ::Error;
use diesel_occ::asynchronous::prelude::*;
use diesel_occ_tests::connect_async;
use tokio::runtime::{Builder, Runtime};

use super::AsyncConn;
use super::counter::Counter;
use super::runner::Open;
use super::schema::counters;

pub(super) use self::adaptor::Async;
pub(super) use self::batch::SaveAll;
pub(super) use self::bulk_update::BulkUpdate;
pub(super) use self::combiner::Combined;
pub(super) use self::delete::Delete;
pub(super) use self::force_increment::ForceIncrement;
pub(super) use self::retry::{Escalated as RetryEscalated, WithStandby as RetryWithStandby};
pub(super) use self::save_checked::{Plain, Where};
pub(super) use self::soft_delete::SoftDelete;
pub(super) use self::tracked::{Merging, Save as TrackedSave};
pub(super) use self::transaction::Transaction;
pub(super) use self::update_by_key::UpdateByKey;
pub(super) use self::upsert::Upsert;
pub(super) use self::versionless::Save as VersionlessSave;

/// An async connection and the runtime its thread drives it on: a multi-thread one
/// (of one worker), since diesel-async's SQLite wrapper blocks in place when a
/// future is dropped.
pub(super) struct Session {
    runtime: Runtime,
    conn: AsyncConn,
}

impl Open for Session {
    fn open(url: &str) -> ConnectionResult<Session> {
        let runtime = Builder::new_multi_thread()
            .worker_threads(1)
            .enable_all()
            .build()
            .map_err(|e| ConnectionError::BadConnection(e.to_string()))?;
        let conn = runtime.block_on(connect_async::<AsyncConn>(url))?;
        Ok(Session { runtime, conn })
    }
}

/// The twins' write, as `counter::blind_save`.
async fn blind_save(conn: &mut AsyncConn, row: &mut Counter) -> Result<(), Error> {
    row.version += 1;
    diesel::update(counters::table.find(row.id))
        .set((
            counters::value.eq(row.value),
            counters::label.eq(&row.label),
            counters::version.eq(row.version),
        ))
        .execute(conn)
        .await?;
    Ok(())
}

/// A checked save, or the twin's blind one.
async fn save(conn: &mut AsyncConn, row: &mut Counter, sabotage: bool) -> Result<(), Error> {
    if sabotage {
        blind_save(conn, row).await
    } else {
        row.save_checked(conn).await
    }
}
