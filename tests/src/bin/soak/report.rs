//! What the soak prints: each backend's figures and violations, then one verdict line
//! per backend (CI reads them), and the exit code.

use std::process::ExitCode;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use crate::check;
use crate::counters::Counters;
use crate::options::Args;

/// A backend's figures and violations.
pub(crate) struct Report {
    /// The backend's name, `galera` for the cluster.
    pub(crate) backend: &'static str,
    /// The write path (`--path`).
    pub(crate) path: &'static str,
    /// What the session-level fault was, for the figures line.
    pub(crate) fault_kind: &'static str,
    /// Lines printed before the figures (per-node figures, a node's kill and restart).
    pub(crate) notes: Vec<String>,
    /// Evidence the backend's own run found missing (a node fault that did not happen).
    pub(crate) shortfalls: Vec<String>,
    pub(crate) counters: Counters,
    pub(crate) violations: Vec<String>,
    /// Unknown-outcome writes the check needed to explain the rows.
    pub(crate) unknown_applied: usize,
}

/// What a backend's run proved.
enum Verdict {
    Passed,
    /// Violations: the run fails with 1.
    Violations,
    /// Too few acknowledged writes or faults: the run fails with 3.
    TooLittle,
}

impl Report {
    /// Prints the figures line and up to 50 violations.
    fn print(&self, args: &Args, elapsed: Duration) {
        let c = &self.counters;
        let fault_kind = self.fault_kind;
        let name = format!("{}: {}", self.backend, self.path);
        for note in &self.notes {
            println!("{name}: {note}");
        }
        println!(
            "{name}: {:.1}s, {} workers: {} operations, {} acknowledged writes, {} conflicts, \
             {} retries, {} retries exhausted, {} faults injected ({fault_kind}), {} \
             rollbacks, {} panics, {} errors caught inside transactions, {} stale upserts \
             of deleted rows and {} dropped futures injected, {} errors from faults, {} \
             writes with unknown outcome ({} of them needed to explain the rows), {} \
             hostile tokens refused, {} fenced completions, {} violations",
            elapsed.as_secs_f64(),
            args.workers,
            get(&c.operations),
            get(&c.acknowledged),
            get(&c.conflicts),
            get(&c.retries),
            get(&c.exhausted),
            get(&c.faults),
            get(&c.rollbacks),
            get(&c.panics),
            get(&c.caught),
            get(&c.stale_upserts),
            get(&c.dropped),
            get(&c.errors),
            get(&c.unknown_outcome),
            self.unknown_applied,
            get(&c.hostile_refused),
            get(&c.fenced),
            self.violations.len(),
        );
        for violation in self.violations.iter().take(50) {
            println!("  VIOLATION {violation}");
        }
        // The RELIABILITY.md table's row: path, backend, flavour, acknowledged writes,
        // unknown outcomes, faults injected, violations, the twin's column (lost updates,
        // changes applied twice or though refused, resurrected rows).
        let mut faults = format!("{} {fault_kind}", get(&c.faults));
        for (n, what) in [
            (get(&c.rollbacks), "rollbacks"),
            (get(&c.panics), "panics"),
            (get(&c.caught), "errors caught inside transactions"),
            (get(&c.stale_upserts), "stale upserts of deleted rows"),
            (get(&c.dropped), "futures dropped"),
        ] {
            if n > 0 {
                faults += &format!(", {n} {what}");
            }
        }
        println!(
            "table: | {} | {} | {} | {} | {} | {faults} | {} | {} |",
            self.path.trim_start_matches("async_"),
            self.backend,
            if self.path.starts_with("async_") {
                "async"
            } else {
                "blocking"
            },
            get(&c.acknowledged),
            get(&c.unknown_outcome),
            self.violations.len(),
            self.count("lost update:")
                + self.count("applied twice:")
                + self.count("applied though refused:")
                + self.count("resurrected:"),
        );
    }

    /// The violations of one kind (`lost update:`, `applied twice:`, `resurrected:`, ...).
    fn count(&self, kind: &str) -> usize {
        self.violations.iter().filter(|v| v.contains(kind)).count()
    }

    /// The verdict and its line (`soak: <backend>: passed` or `... FAILED: ...`).
    fn verdict(&self, args: &Args) -> (Verdict, String) {
        let c = &self.counters;
        let mut shortfalls = check::evidence(
            get(&c.acknowledged),
            args.min_acknowledged,
            get(&c.faults),
            args.min_faults,
        );
        shortfalls.extend(self.shortfalls.iter().cloned());
        if !self.violations.is_empty() {
            let mut kinds = format!("{} lost updates", self.count("lost update:"));
            for kind in ["applied twice", "applied though refused", "resurrected"] {
                let n = self.count(&format!("{kind}:"));
                if n > 0 {
                    kinds += &format!(", {n} {kind}");
                }
            }
            let line = format!(
                "soak: {}: {}: FAILED: {} violations ({kinds})",
                self.backend,
                self.path,
                self.violations.len(),
            );
            (Verdict::Violations, line)
        } else if !shortfalls.is_empty() {
            let line = format!(
                "soak: {}: {}: FAILED: too little evidence: {}",
                self.backend,
                self.path,
                shortfalls.join(", ")
            );
            (Verdict::TooLittle, line)
        } else {
            (
                Verdict::Passed,
                format!("soak: {}: {}: passed", self.backend, self.path),
            )
        }
    }
}

fn get(counter: &AtomicU64) -> u64 {
    counter.load(Ordering::Relaxed)
}

/// The verdicts of all backends so far.
#[derive(Debug, Default)]
pub(crate) struct Verdicts {
    lines: Vec<String>,
    failed: bool,
    too_little: bool,
    unavailable: bool,
}

impl Verdicts {
    /// A backend that could not run.
    pub(crate) fn unavailable(&mut self) {
        self.unavailable = true;
    }

    /// Prints a backend's figures and keeps its verdict for the end.
    pub(crate) fn add(&mut self, report: &Report, args: &Args, elapsed: Duration) {
        report.print(args, elapsed);
        let (verdict, line) = report.verdict(args);
        match verdict {
            Verdict::Passed => {}
            Verdict::Violations => self.failed = true,
            Verdict::TooLittle => self.too_little = true,
        }
        self.lines.push(line);
    }

    /// Prints the verdict lines; 1 for violations, 3 for too little evidence, 2 for a
    /// backend that could not run.
    pub(crate) fn finish(self) -> ExitCode {
        for line in &self.lines {
            println!("{line}");
        }
        if self.failed {
            ExitCode::from(1)
        } else if self.too_little {
            ExitCode::from(3)
        } else if self.unavailable {
            ExitCode::from(2)
        } else {
            ExitCode::SUCCESS
        }
    }
}
