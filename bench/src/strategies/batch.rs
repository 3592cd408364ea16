//! The batch benchmark's workers on a backend's blocking and async connections: a batch
//! save of N entities (`save_all_checked`, bounded by diesel-occ's `BatchDsl` on
//! `[Stock]`) or N single saves, blocking and async.

use std::sync::Barrier;
use std::time::{Duration, Instant};

use diesel::Connection;
use diesel_occ::{asynchronous, blocking};

use super::checked::{AsyncCheckedStock, CheckedStock};
use super::sql::{AsyncStockSql, StockSql};
use crate::measures::{BatchMeasured as Measured, Counted, Side, StatementLog};
use crate::model::Stock;
use crate::strategies::database::Database;
use crate::strategy::Strategy;

type Worker = (u64, Instant, Instant, Vec<u64>);

/// Rows `index * size + 1 ..= (index + 1) * size`.
fn range(index: usize, size: usize) -> (i32, i32) {
    let first = i32::try_from(index * size + 1).unwrap_or(i32::MAX);
    let last = i32::try_from((index + 1) * size).unwrap_or(i32::MAX);
    (first, last)
}

fn load<C: StockSql>(conn: &mut C, (first, last): (i32, i32)) -> Result<Vec<Stock>, String> {
    conn.read_range(first, last).map_err(|e| e.to_string())
}

fn save<C>(conn: &mut C, side: Side, stocks: &mut [Stock]) -> Result<(), String>
where
    C: CheckedStock,
    [Stock]: blocking::BatchDsl<C>,
{
    use diesel_occ::blocking::BatchDsl;
    for stock in stocks.iter_mut() {
        stock.available -= 1;
    }
    match side {
        Side::Single => {
            for stock in stocks.iter_mut() {
                conn.save_stock(stock).map_err(|e| e.to_string())?;
            }
            Ok(())
        }
        Side::Batch => stocks.save_all_checked(conn).map_err(|e| e.to_string()),
    }
}

/// One blocking run: `workers` threads, each saving its `size` rows until `duration`.
pub fn blocking<D: Database>(
    url: &str,
    side: Side,
    size: usize,
    workers: usize,
    duration: Duration,
) -> Result<Measured, String>
where
    [Stock]: blocking::BatchDsl<D::Conn>,
{
    let mut held = Vec::with_capacity(workers);
    for index in 0..workers {
        let mut conn = D::connect(url, Strategy::Occ)?;
        let stocks = load(&mut conn, range(index, size))?;
        held.push((conn, stocks));
    }
    let start = Barrier::new(workers);
    let results: Vec<Result<Worker, String>> = std::thread::scope(|scope| {
        let handles: Vec<_> = held
            .into_iter()
            .map(|(mut conn, mut stocks)| {
                let start = &start;
                scope.spawn(move || {
                    start.wait();
                    let began = Instant::now();
                    let mut saves = 0;
                    let mut latencies = Vec::new();
                    while began.elapsed() < duration {
                        let op = Instant::now();
                        save(&mut conn, side, &mut stocks)?;
                        latencies.push(op.elapsed().as_nanos() as u64);
                        saves += stocks.len() as u64;
                    }
                    Ok((saves, began, Instant::now(), latencies))
                })
            })
            .collect();
        handles
            .into_iter()
            .map(|h| h.join().unwrap_or_else(|_| Err("worker panicked".into())))
            .collect()
    });
    Ok(Measured::merge(
        results.into_iter().collect::<Result<_, _>>()?,
    ))
}

async fn connect_async<D: Database>(url: &str) -> Result<D::AsyncConn, String> {
    use diesel_async::SimpleAsyncConnection;
    let mut conn = <D::AsyncConn as diesel_async::AsyncConnection>::establish(url)
        .await
        .map_err(|e| e.to_string())?;
    if !D::AFTER_CONNECT.is_empty() {
        conn.batch_execute(D::AFTER_CONNECT)
            .await
            .map_err(|e| e.to_string())?;
    }
    Ok(conn)
}

async fn load_async<C: AsyncStockSql>(
    conn: &mut C,
    (first, last): (i32, i32),
) -> Result<Vec<Stock>, String> {
    conn.read_range(first, last)
        .await
        .map_err(|e| e.to_string())
}

async fn save_async<C>(conn: &mut C, side: Side, stocks: &mut [Stock]) -> Result<(), String>
where
    C: AsyncCheckedStock,
    [Stock]: asynchronous::BatchDsl<C>,
{
    use diesel_occ::asynchronous::BatchDsl;
    for stock in stocks.iter_mut() {
        stock.available -= 1;
    }
    match side {
        Side::Single => {
            for stock in stocks.iter_mut() {
                conn.save_stock(stock).await.map_err(|e| e.to_string())?;
            }
            Ok(())
        }
        Side::Batch => stocks
            .save_all_checked(conn)
            .await
            .map_err(|e| e.to_string()),
    }
}

fn runtime(workers: usize) -> Result<tokio::runtime::Runtime, String> {
    let threads = std::thread::available_parallelism().map_or(2, usize::from);
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(threads.min(workers).max(1))
        .enable_all()
        .build()
        .map_err(|e| e.to_string())
}

/// One async run: `workers` tasks, each saving its `size` rows until `duration`.
pub fn asynchronous<D: Database>(
    url: &str,
    side: Side,
    size: usize,
    workers: usize,
    duration: Duration,
) -> Result<Measured, String>
where
    [Stock]: asynchronous::BatchDsl<D::AsyncConn>,
{
    runtime(workers)?.block_on(async move {
        let mut held = Vec::with_capacity(workers);
        for index in 0..workers {
            let mut conn = connect_async::<D>(url).await?;
            let stocks = load_async(&mut conn, range(index, size)).await?;
            held.push((conn, stocks));
        }
        let tasks: Vec<_> = held
            .into_iter()
            .map(|(mut conn, mut stocks)| {
                tokio::spawn(async move {
                    let began = Instant::now();
                    let mut saves = 0;
                    let mut latencies = Vec::new();
                    while began.elapsed() < duration {
                        let op = Instant::now();
                        save_async(&mut conn, side, &mut stocks).await?;
                        latencies.push(op.elapsed().as_nanos() as u64);
                        saves += stocks.len() as u64;
                    }
                    Ok::<Worker, String>((saves, began, Instant::now(), latencies))
                })
            })
            .collect();
        let mut results = Vec::with_capacity(workers);
        for task in tasks {
            results.push(task.await.map_err(|e| e.to_string())??);
        }
        Ok(Measured::merge(results))
    })
}

/// The statements of 100 blocking single saves and of one batch of 100.
pub fn count_blocking<D: Database>(url: &str) -> Result<Counted, String>
where
    [Stock]: blocking::BatchDsl<D::Conn>,
{
    let mut conn = D::connect(url, Strategy::Occ)?;
    let log = StatementLog::default();
    conn.set_instrumentation(log.clone());
    let mut stocks = load(&mut conn, range(0, 100))?;
    log.take();
    save(&mut conn, Side::Single, &mut stocks)?;
    let single = log.take();
    save(&mut conn, Side::Batch, &mut stocks)?;
    Ok(Counted {
        single,
        batch: log.take(),
    })
}

/// The same, async.
pub fn count_asynchronous<D: Database>(url: &str) -> Result<Counted, String>
where
    [Stock]: asynchronous::BatchDsl<D::AsyncConn>,
{
    runtime(1)?.block_on(async move {
        use diesel_async::AsyncConnection;
        let mut conn = connect_async::<D>(url).await?;
        let log = StatementLog::default();
        conn.set_instrumentation(log.clone());
        let mut stocks = load_async(&mut conn, range(0, 100)).await?;
        log.take();
        save_async(&mut conn, Side::Single, &mut stocks).await?;
        let single = log.take();
        save_async(&mut conn, Side::Batch, &mut stocks).await?;
        Ok(Counted {
            single,
            batch: log.take(),
        })
    })
}
