//! The batch benchmark's workers on one backend's `Conn` and `AsyncConn`: a batch save
//! of N entities (`save_all_checked`) or N single saves, blocking and async. Plain
//! code, compiled once in each backend module as its `batch`, like `blocking.rs`.

use std::sync::Barrier;
use std::time::{Duration, Instant};

use diesel::prelude::*;

use super::{AFTER_CONNECT, AsyncConn, Conn, connect, establish_async};
use crate::async_setup::Setup;
use crate::measures::{BatchMeasured as Measured, Counted, Side, StatementLog};
use crate::model::{Stock, bench_stock};
use crate::strategy::Strategy;

type Worker = (u64, Instant, Instant, Vec<u64>);

/// Rows `index * size + 1 ..= (index + 1) * size`.
fn range(index: usize, size: usize) -> (i32, i32) {
    let first = i32::try_from(index * size + 1).unwrap_or(i32::MAX);
    let last = i32::try_from((index + 1) * size).unwrap_or(i32::MAX);
    (first, last)
}

fn load(conn: &mut Conn, (first, last): (i32, i32)) -> Result<Vec<Stock>, String> {
    bench_stock::table
        .filter(bench_stock::id.between(first, last))
        .order(bench_stock::id)
        .select(Stock::as_select())
        .load(conn)
        .map_err(|e| e.to_string())
}

fn save(conn: &mut Conn, side: Side, stocks: &mut [Stock]) -> Result<(), String> {
    use diesel_occ::prelude::*;
    for stock in stocks.iter_mut() {
        stock.available -= 1;
    }
    match side {
        Side::Single => {
            for stock in stocks.iter_mut() {
                stock.save_checked(conn).map_err(|e| e.to_string())?;
            }
            Ok(())
        }
        Side::Batch => stocks.save_all_checked(conn).map_err(|e| e.to_string()),
    }
}

/// One blocking run: `workers` threads, each saving its `size` rows until `duration`.
pub fn blocking(
    url: &str,
    side: Side,
    size: usize,
    workers: usize,
    duration: Duration,
) -> Result<Measured, String> {
    let mut held = Vec::with_capacity(workers);
    for index in 0..workers {
        let mut conn = connect(url, Strategy::Occ)?;
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

async fn connect_async(url: &str) -> Result<AsyncConn, String> {
    use diesel_async::SimpleAsyncConnection;
    let mut conn = establish_async(url, Setup::RECOMMENDED)
        .await
        .map_err(|e| e.to_string())?;
    if !AFTER_CONNECT.is_empty() {
        conn.batch_execute(AFTER_CONNECT)
            .await
            .map_err(|e| e.to_string())?;
    }
    Ok(conn)
}

async fn load_async(conn: &mut AsyncConn, (first, last): (i32, i32)) -> Result<Vec<Stock>, String> {
    diesel_async::RunQueryDsl::load(
        bench_stock::table
            .filter(bench_stock::id.between(first, last))
            .order(bench_stock::id)
            .select(Stock::as_select()),
        conn,
    )
    .await
    .map_err(|e| e.to_string())
}

async fn save_async(conn: &mut AsyncConn, side: Side, stocks: &mut [Stock]) -> Result<(), String> {
    use diesel_occ::asynchronous::prelude::*;
    for stock in stocks.iter_mut() {
        stock.available -= 1;
    }
    match side {
        Side::Single => {
            for stock in stocks.iter_mut() {
                stock.save_checked(conn).await.map_err(|e| e.to_string())?;
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
pub fn asynchronous(
    url: &str,
    side: Side,
    size: usize,
    workers: usize,
    duration: Duration,
) -> Result<Measured, String> {
    runtime(workers)?.block_on(async move {
        let mut held = Vec::with_capacity(workers);
        for index in 0..workers {
            let mut conn = connect_async(url).await?;
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
pub fn count_blocking(url: &str) -> Result<Counted, String> {
    let mut conn = connect(url, Strategy::Occ)?;
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
pub fn count_asynchronous(url: &str) -> Result<Counted, String> {
    runtime(1)?.block_on(async move {
        use diesel_async::AsyncConnection;
        let mut conn = connect_async(url).await?;
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
