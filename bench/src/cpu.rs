//! Where a run's CPU went. For the HTTP runs: the clients' thread, the service's
//! runtime threads, the PostgreSQL backends of the service's pool; for the paired
//! async rounds: this whole process ([`Process`]); and how busy the whole machine was
//! (the machine is shared). Read from Linux's `/proc` (`schedstat`: nanoseconds on a
//! CPU; `stat`: clock ticks); elsewhere every figure is absent.

use std::fs;

/// Name prefix of the service's runtime threads.
pub const SERVICE_THREADS: &str = "http-service";

/// CPU time so far, in nanoseconds, and the machine's busy and total ticks.
#[derive(Debug, Clone, Copy, Default)]
pub struct Sample {
    client: u64,
    service: u64,
    postgres: u64,
    machine_busy: u64,
    machine_total: u64,
}

/// CPU per successful write, in microseconds, and the machine's busy share.
#[derive(Debug, Clone, Copy)]
pub struct Spent {
    /// The clients' thread.
    pub client_us: f64,
    /// The service's runtime threads.
    pub service_us: f64,
    /// The PostgreSQL backends of the service's pool.
    pub postgres_us: f64,
    /// Of all cores, the share busy with anything (other sessions included), 0 to 1.
    pub machine_busy: f64,
}

impl Sample {
    /// Takes a sample on the clients' thread (the caller), with the pool's backends.
    pub fn take(backends: &[u32]) -> Option<Sample> {
        let (machine_busy, machine_total) = machine()?;
        Some(Sample {
            client: schedstat("/proc/thread-self/schedstat")?,
            service: service_threads()?,
            postgres: backends
                .iter()
                .map(|pid| schedstat(&format!("/proc/{pid}/schedstat")))
                .sum::<Option<u64>>()?,
            machine_busy,
            machine_total,
        })
    }

    /// What was spent since `self`, per one of `writes`.
    pub fn spent_until(&self, later: &Sample, writes: u64) -> Spent {
        let per = |from: u64, to: u64| to.saturating_sub(from) as f64 / 1e3 / writes.max(1) as f64;
        let total = later.machine_total.saturating_sub(self.machine_total);
        Spent {
            client_us: per(self.client, later.client),
            service_us: per(self.service, later.service),
            postgres_us: per(self.postgres, later.postgres),
            machine_busy: later.machine_busy.saturating_sub(self.machine_busy) as f64
                / total.max(1) as f64,
        }
    }
}

/// This process's CPU time (every thread, ended ones included) and the machine's busy
/// and total ticks, at one moment.
#[derive(Debug, Clone, Copy)]
pub struct Process {
    ticks: u64,
    machine_busy: u64,
    machine_total: u64,
}

impl Process {
    /// Takes a sample now (None off Linux).
    pub fn take() -> Option<Process> {
        let (machine_busy, machine_total) = machine()?;
        Some(Process {
            ticks: process_ticks()?,
            machine_busy,
            machine_total,
        })
    }

    /// Since `self`: this process's CPU per one of `operations` in microseconds, and the
    /// machine's busy share (0 to 1).
    pub fn spent_until(&self, later: &Process, operations: u64) -> (f64, f64) {
        // `/proc` counts in clock ticks, 100 a second on Linux (USER_HZ).
        const MICROS_PER_TICK: f64 = 10_000.0;
        let ticks = later.ticks.saturating_sub(self.ticks) as f64;
        let total = later.machine_total.saturating_sub(self.machine_total);
        let busy = later.machine_busy.saturating_sub(self.machine_busy) as f64;
        (
            ticks * MICROS_PER_TICK / operations.max(1) as f64,
            busy / total.max(1) as f64,
        )
    }
}

/// User and system ticks of this process, its ended threads included (`/proc/self/stat`
/// fields 14 and 15, counted after the command name, which may hold spaces).
fn process_ticks() -> Option<u64> {
    let stat = fs::read_to_string("/proc/self/stat").ok()?;
    let after_name = &stat[stat.rfind(')')? + 1..];
    let fields: Vec<&str> = after_name.split_whitespace().collect();
    // `after_name` starts at field 3 (the state).
    let user: u64 = fields.get(14 - 3)?.parse().ok()?;
    let system: u64 = fields.get(15 - 3)?.parse().ok()?;
    Some(user + system)
}

/// The first field of a `schedstat` file: nanoseconds spent on a CPU.
fn schedstat(path: &str) -> Option<u64> {
    fs::read_to_string(path)
        .ok()?
        .split_whitespace()
        .next()?
        .parse()
        .ok()
}

/// The service's runtime threads, summed.
fn service_threads() -> Option<u64> {
    let mut total = 0;
    for task in fs::read_dir("/proc/self/task").ok()? {
        let dir = task.ok()?.path();
        let name = fs::read_to_string(dir.join("comm")).unwrap_or_default();
        if name.starts_with(SERVICE_THREADS) {
            // A thread that ended between the listing and the read counts nothing.
            total += schedstat(&dir.join("schedstat").to_string_lossy()).unwrap_or(0);
        }
    }
    Some(total)
}

/// The machine's busy and total ticks, from `/proc/stat` (idle and iowait are not busy).
fn machine() -> Option<(u64, u64)> {
    let stat = fs::read_to_string("/proc/stat").ok()?;
    let line = stat.lines().next()?.strip_prefix("cpu ")?;
    let ticks: Vec<u64> = line
        .split_whitespace()
        .map(|field| field.parse().ok())
        .collect::<Option<_>>()?;
    let total: u64 = ticks.iter().take(8).sum();
    let idle = ticks.get(3)? + ticks.get(4)?;
    Some((total - idle, total))
}
