//! One measured run of a write (a row of `http.csv`), and the paired rounds' ratios.

use std::fmt::Write as _;
use std::path::Path;

use diesel_occ_bench::cpu::{Sample, Spent};
use diesel_occ_bench::stats::{median, per_round, percentile, ratio, verdict};
use diesel_occ_bench::summary::Summary;

use super::service::{Counted, Service};
use super::writes::{HttpTally, Write};

/// Through the service (HTTP), or the same statements straight on its pool.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Via {
    Http,
    Direct,
}

impl Via {
    pub(crate) fn name(self) -> &'static str {
        match self {
            Via::Http => "http",
            Via::Direct => "direct",
        }
    }
}

/// One measured run.
#[derive(Debug, Clone)]
pub(crate) struct HttpRow {
    round: usize,
    write: Write,
    via: Via,
    clients: usize,
    articles: usize,
    seconds: f64,
    ok: u64,
    per_sec: f64,
    p50_ms: f64,
    p99_ms: f64,
    precondition_failed: u64,
    conflicts: u64,
    rereads: u64,
    errors: u64,
    /// Articles whose stored token is an ETag no client holds (must be 0).
    unmatched: usize,
    /// Statements the service's connections ran, per successful write.
    statements: f64,
    /// Their mean time from sending to result, per successful write, in ms.
    statement_ms: f64,
    /// CPU per successful write (absent off Linux).
    cpu: Option<Spent>,
}

impl HttpRow {
    const CSV_HEADER: &'static str = "round,write,clients,articles,seconds,ok,requests_per_sec,\
        p50_ms,p99_ms,status_412,status_409,rereads,errors,unmatched_etags,via,\
        statements_per_write,statement_ms_per_write,client_cpu_us,service_cpu_us,\
        postgres_cpu_us,machine_busy";

    pub(crate) fn csv(&self) -> String {
        let cpu = self.cpu.map_or_else(
            || ",,,".to_owned(),
            |c| {
                format!(
                    "{:.1},{:.1},{:.1},{:.3}",
                    c.client_us, c.service_us, c.postgres_us, c.machine_busy
                )
            },
        );
        format!(
            "{},{},{},{},{:.3},{},{:.1},{:.3},{:.3},{},{},{},{},{},{},{:.3},{:.3},{cpu}",
            self.round,
            self.write.name(),
            self.clients,
            self.articles,
            self.seconds,
            self.ok,
            self.per_sec,
            self.p50_ms,
            self.p99_ms,
            self.precondition_failed,
            self.conflicts,
            self.rereads,
            self.errors,
            self.unmatched,
            self.via.name(),
            self.statements,
            self.statement_ms,
        )
    }

    pub(crate) fn line(&self) -> String {
        let mut line = format!(
            "{:<17} articles {:>3}  {:>7.0} req/s  p50 {:>7.3} ms  p99 {:>8.3} ms  \
             412 {:>6}  409 {:>6}  re-reads {:>6}  errors {:>3}  unmatched ETags {}",
            self.write.name(),
            self.articles,
            self.per_sec,
            self.p50_ms,
            self.p99_ms,
            self.precondition_failed,
            self.conflicts,
            self.rereads,
            self.errors,
            self.unmatched
        );
        let _ = write!(
            line,
            "\n    per write: {:.2} statements, {:.3} ms in them",
            self.statements, self.statement_ms
        );
        if let Some(cpu) = self.cpu {
            let _ = write!(
                line,
                "; CPU us: clients {:.0}, service {:.0}, PostgreSQL backends {:.0}; \
                 machine busy {:.0} %",
                cpu.client_us,
                cpu.service_us,
                cpu.postgres_us,
                cpu.machine_busy * 100.0
            );
        }
        line
    }
}

/// The probes around one run: the service's statements and the CPU.
pub(crate) struct Probes {
    counted: Counted,
    cpu: Option<Sample>,
}

impl Probes {
    /// Takes them on the clients' thread.
    pub(crate) fn take(service: &Service, backends: &[u32]) -> Probes {
        Probes {
            counted: service.probe.counted(),
            cpu: Sample::take(backends),
        }
    }
}

/// What a run measured, before it becomes a row.
pub(crate) struct Measured {
    pub(crate) total: HttpTally,
    pub(crate) seconds: f64,
    pub(crate) unmatched: usize,
    pub(crate) before: Probes,
    pub(crate) after: Probes,
}

pub(crate) fn row(
    round: usize,
    write: Write,
    via: Via,
    (clients, articles): (usize, usize),
    mut measured: Measured,
) -> HttpRow {
    let total = &mut measured.total;
    total.latencies.sort_unstable();
    let ms = |nanos: u64| nanos as f64 / 1e6;
    let writes = total.ok.max(1) as f64;
    let (before, after) = (&measured.before, &measured.after);
    let statements = after.counted.statements - before.counted.statements;
    let nanos = after.counted.statement_nanos - before.counted.statement_nanos;
    let cpu = before
        .cpu
        .zip(after.cpu)
        .map(|(from, to)| from.spent_until(&to, total.ok));
    HttpRow {
        round,
        write,
        via,
        clients,
        articles,
        seconds: measured.seconds,
        ok: total.ok,
        per_sec: total.ok as f64 / measured.seconds.max(1e-9),
        p50_ms: ms(percentile(&total.latencies, 50.0)),
        p99_ms: ms(percentile(&total.latencies, 99.0)),
        precondition_failed: total.precondition_failed,
        conflicts: total.conflicts,
        rereads: total.rereads,
        errors: total.errors,
        unmatched: measured.unmatched,
        statements: statements as f64 / writes,
        statement_ms: nanos as f64 / 1e6 / writes,
        cpu,
    }
}

/// The ratios of the paired rounds: of the medians, and the median of each round's;
/// then, per write, the medians of where its time went, and the ratios without HTTP.
pub(crate) fn report_ratios(rows: &[HttpRow], rounds: usize, summary: &mut Summary) {
    for via in [Via::Http, Via::Direct] {
        let paired: Vec<&HttpRow> = rows
            .iter()
            .filter(|r| r.round > 0 && r.via == via)
            .collect();
        let values = |write: Write, of: fn(&HttpRow) -> f64| -> Vec<f64> {
            paired
                .iter()
                .filter(|r| r.write == write)
                .map(|r| of(r))
                .collect()
        };
        let of_round = |round: usize, write: Write| {
            paired
                .iter()
                .find(|r| r.round == round && r.write == write)
                .map(|r| r.per_sec)
        };
        let [conditional, load_save, unconditional] =
            Write::ALL.map(|w| median(values(w, |r| r.per_sec)));
        let label = match via {
            Via::Http => "http",
            Via::Direct => "without HTTP (diagnosis, no target)",
        };
        summary.say(format!(
            "{label}: medians: put-if-match {conditional:.0}, patch-load-save {load_save:.0}, \
             put-unconditional {unconditional:.0} req/s"
        ));
        for write in Write::ALL {
            let of = |f: fn(&HttpRow) -> f64| median(values(write, f));
            let mut line = format!(
                "  {:<17} medians per write: p50 {:.3} ms, {:.2} statements taking {:.3} ms",
                write.name(),
                of(|r| r.p50_ms),
                of(|r| r.statements),
                of(|r| r.statement_ms),
            );
            if paired.iter().all(|r| r.cpu.is_some()) {
                let cpu = |f: fn(&Spent) -> f64| {
                    median(
                        paired
                            .iter()
                            .filter(|r| r.write == write)
                            .filter_map(|r| r.cpu.as_ref().map(f))
                            .collect(),
                    )
                };
                let _ = write!(
                    line,
                    "; CPU us: clients {:.0}, service {:.0}, PostgreSQL backends {:.0}",
                    cpu(|c| c.client_us),
                    cpu(|c| c.service_us),
                    cpu(|c| c.postgres_us),
                );
            }
            summary.say(line);
        }
        for (other, target) in [(Write::LoadSave, 1.3), (Write::Unconditional, 0.95)] {
            let theirs = median(values(other, |r| r.per_sec));
            let ratios: Vec<f64> = (1..=rounds)
                .filter_map(|round| {
                    Some(of_round(round, Write::IfMatch)? / of_round(round, other)?)
                })
                .collect();

            let value = conditional / theirs;
            let verdict = match via {
                Via::Http => format!(" (target >= {target}: {})", verdict(value, target)),
                Via::Direct => String::new(),
            };
            summary.say(format!(
                "{label}: put-if-match / {} = {}{verdict}; per round: {}",
                other.name(),
                ratio(conditional, theirs),
                per_round(&ratios),
            ));
        }
    }
    let (failed, conflicts) = rows.iter().fold((0, 0), |(f, c), r| {
        (f + r.precondition_failed, c + r.conflicts)
    });
    let unmatched: usize = rows.iter().map(|r| r.unmatched).sum();
    summary.say(format!(
        "http: 412 responses {failed}, 409 responses {conflicts} (all runs); articles whose \
         token no client holds: {unmatched}"
    ));
}

/// `http.csv` and `http-summary.txt` in `out`.
pub(crate) fn write_results(out: &Path, rows: &[HttpRow], summary: &Summary) -> Result<(), String> {
    std::fs::create_dir_all(out).map_err(|e| e.to_string())?;
    let mut csv = String::from(HttpRow::CSV_HEADER);
    csv.push('\n');
    for row in rows {
        csv.push_str(&row.csv());
        csv.push('\n');
    }
    let path = out.join("http.csv");
    std::fs::write(&path, csv).map_err(|e| format!("{}: {e}", path.display()))?;
    let text = out.join("http-summary.txt");
    std::fs::write(&text, summary.text()).map_err(|e| format!("{}: {e}", text.display()))?;
    println!("wrote {} and {}", path.display(), text.display());
    Ok(())
}
