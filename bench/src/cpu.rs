//! Where a run's CPU went, for the paired async rounds: this whole process
//! ([`Process`]), and how busy the whole machine was (the machine is shared). Read from
//! Linux's `/proc` (`stat`: clock ticks); elsewhere every figure is absent.

use std::fs;

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
