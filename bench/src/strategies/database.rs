//! The [`Database`] impl of one backend module (its `Db`), compiled once in each, like
//! `blocking.rs`: it hands the generic code this backend's strategies.

use std::time::Duration;

use diesel::QueryResult;
use diesel_occ::blocking::Combiner;
use diesel_occ::retry::RetryPolicy;

use super::{BACKEND, Conn, Db, asynchronous, batch, blocking, connect};
use crate::async_setup::Setup;
use crate::backend::Backend;
use crate::database::Database;
use crate::harness::{Held, Limit, OpResult, Tally, Worker};
use crate::measures::{BatchMeasured, Counted, Side, Statements};
use crate::model::Stock;
use crate::strategy::Strategy;

impl Database for Db {
    const BACKEND: Backend = BACKEND;
    type Conn = Conn;

    fn connect(url: &str, strategy: Strategy) -> Result<Conn, String> {
        connect(url, strategy)
    }

    fn reset(conn: &mut Conn, keys: i32) -> QueryResult<()> {
        blocking::reset(conn, keys)
    }

    fn taken(conn: &mut Conn, keys: i32) -> QueryResult<i64> {
        blocking::taken(conn, keys)
    }

    fn op(
        strategy: Strategy,
        held: &Held<Conn>,
        worker: &mut Worker,
        key: i32,
        combiner: &Combiner<Stock>,
    ) -> Result<OpResult, String> {
        blocking::op(strategy, held, worker, key, combiner)
    }

    fn run_asynchronous(
        url: &str,
        workers: usize,
        keys: i32,
        limit: Limit,
        policy: RetryPolicy,
        setup: Setup,
        combine: bool,
    ) -> Result<(Tally, Duration), String> {
        asynchronous::run(url, workers, keys, limit, policy, setup, combine)
    }

    fn statements(conn: &mut Conn, saves: i32) -> Result<Statements, String> {
        blocking::statements(conn, saves)
    }

    fn batch_blocking(
        url: &str,
        side: Side,
        size: usize,
        workers: usize,
        duration: Duration,
    ) -> Result<BatchMeasured, String> {
        batch::blocking(url, side, size, workers, duration)
    }

    fn batch_asynchronous(
        url: &str,
        side: Side,
        size: usize,
        workers: usize,
        duration: Duration,
    ) -> Result<BatchMeasured, String> {
        batch::asynchronous(url, side, size, workers, duration)
    }

    fn count_blocking(url: &str) -> Result<Counted, String> {
        batch::count_blocking(url)
    }

    fn count_asynchronous(url: &str) -> Result<Counted, String> {
        batch::count_asynchronous(url)
    }
}
