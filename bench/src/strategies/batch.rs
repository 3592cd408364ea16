//! The batch benchmark's workers on a backend's blocking and async connections: each
//! owns `size` rows and saves them all, one less unit each, per operation: one
//! `save_all_checked` (the batch) or `save_checked` on each (single saves).

use std::time::Duration;

use super::asynchronous::connect;
use super::sql::{AsyncStockSql, StockSql};
use crate::harness::{self, OpResult, Reserve, Tally};
use crate::measures::QueryLog;
use crate::model::Stock;
use crate::strategy::Strategy;

/// The rows of worker `index`: `index * size + 1 ..= (index + 1) * size`.
fn range(index: usize, size: usize) -> (i32, i32) {
    let first = i32::try_from(index * size + 1).unwrap_or(i32::MAX);
    let last = i32::try_from((index + 1) * size).unwrap_or(i32::MAX);
    (first, last)
}

/// One operation: every stock one unit less, then saved as one batch or one by one.
fn save<C: StockSql>(conn: &mut C, batch: bool, stocks: &mut [Stock]) -> Result<(), String> {
    stocks.iter_mut().for_each(|stock| stock.available -= 1);
    if batch {
        return conn.save_all(stocks).map_err(|e| e.to_string());
    }
    stocks
        .iter_mut()
        .try_for_each(|stock| conn.save_stock(stock))
        .map_err(|e| e.to_string())
}

/// The same, async.
async fn save_async<C: AsyncStockSql>(
    conn: &mut C,
    batch: bool,
    stocks: &mut [Stock],
) -> Result<(), String> {
    stocks.iter_mut().for_each(|stock| stock.available -= 1);
    if batch {
        return conn.save_all(stocks).await.map_err(|e| e.to_string());
    }
    for stock in stocks.iter_mut() {
        conn.save_stock(stock).await.map_err(|e| e.to_string())?;
    }
    Ok(())
}

/// One run: `workers` threads (or, `asynchronous`, tasks), each saving its `size` rows
/// per operation for `duration`. A failed save fails the run.
pub fn run<D: StockSql>(
    url: &str,
    asynchronous: bool,
    batch: bool,
    size: usize,
    workers: usize,
    duration: Duration,
) -> Result<(Tally, Duration), String> {
    let measured = if asynchronous {
        harness::runtime(workers)?.block_on(async {
            let mut tasks = Vec::with_capacity(workers);
            for index in 0..workers {
                let (first, last) = range(index, size);
                let stocks = D::connect(url, Strategy::Occ)?
                    .read_range(first, last)
                    .map_err(|e| e.to_string())?;
                let conn = connect::<D::Async>(url, None)
                    .await
                    .map_err(|e| e.to_string())?;
                tasks.push(Task {
                    conn,
                    stocks,
                    batch,
                });
            }
            harness::run_tasks(tasks, 1, duration).await
        })?
    } else {
        let policy = diesel_occ::retry::RetryPolicy::new();
        let connect = |index| {
            let mut conn = D::connect(url, Strategy::Occ)?;
            let (first, last) = range(index, size);
            let stocks = conn.read_range(first, last).map_err(|e| e.to_string())?;
            Ok((conn, stocks))
        };
        harness::run_threads(workers, 1, duration, policy, connect, |held, _, _| {
            let (conn, stocks) = &mut *held.0.borrow_mut();
            save(conn, batch, stocks).map(|()| committed())
        })?
    };
    match &measured.0.first_error {
        Some(error) => Err(error.clone()),
        None => Ok(measured),
    }
}

/// A saved operation.
fn committed() -> OpResult {
    OpResult {
        committed: true,
        ..OpResult::default()
    }
}

/// An async worker: its connection and its rows.
struct Task<C> {
    conn: C,
    stocks: Vec<Stock>,
    batch: bool,
}

impl<C: AsyncStockSql + Send> Reserve for Task<C> {
    async fn reserve(&mut self, _key: i32) -> Result<OpResult, String> {
        save_async(&mut self.conn, self.batch, &mut self.stocks).await?;
        Ok(committed())
    }
}

/// The statements (Diesel's instrumentation) that 100 single saves started, and one
/// batch of 100, blocking or async.
pub fn count<D: StockSql>(url: &str, asynchronous: bool) -> Result<[Vec<String>; 2], String> {
    let log = QueryLog::default();
    let started = |log: &QueryLog| {
        let started = log.take().into_iter().filter(|s| !QueryLog::cached(s));
        started.collect::<Vec<_>>()
    };
    let mut conn = D::connect(url, Strategy::Occ)?;
    let mut stocks = conn.read_range(1, 100).map_err(|e| e.to_string())?;
    if !asynchronous {
        conn.set_instrumentation(log.clone());
        save(&mut conn, false, &mut stocks)?;
        let single = started(&log);
        save(&mut conn, true, &mut stocks)?;
        return Ok([single, started(&log)]);
    }
    harness::runtime(1)?.block_on(async {
        let mut conn = connect::<D::Async>(url, None)
            .await
            .map_err(|e| e.to_string())?;
        diesel_async::AsyncConnection::set_instrumentation(&mut conn, log.clone());
        save_async(&mut conn, false, &mut stocks).await?;
        let single = started(&log);
        save_async(&mut conn, true, &mut stocks).await?;
        Ok([single, started(&log)])
    })
}
