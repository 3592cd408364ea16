//! One measured run of a write (a row of `http.csv`), and the paired rounds' ratios.

use diesel_occ_bench::stats::{median, per_round, percentile};
use diesel_occ_bench::summary::Summary;

use super::runs::{Measured, Write};

/// Through the service (HTTP), or the same statements straight on its pool.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Via {
    Http,
    Direct,
}

/// One measured run.
#[derive(Debug, Clone)]
pub(crate) struct HttpRow {
    /// 0 for the runs before the paired rounds.
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
}

impl HttpRow {
    const CSV_HEADER: &'static str = "round,write,clients,articles,seconds,ok,requests_per_sec,\
        p50_ms,p99_ms,status_412,status_409,rereads,errors,unmatched_etags,via,\
        statements_per_write";

    pub(crate) fn new(
        (round, write, via): (usize, Write, Via),
        (clients, articles): (usize, usize),
        mut measured: Measured,
    ) -> HttpRow {
        let total = &mut measured.total;
        total.latencies.sort_unstable();
        let ms = |p| percentile(&total.latencies, p) as f64 / 1e6;
        HttpRow {
            round,
            write,
            via,
            clients,
            articles,
            seconds: measured.seconds,
            ok: total.ok,
            per_sec: total.ok as f64 / measured.seconds.max(1e-9),
            p50_ms: ms(50.0),
            p99_ms: ms(99.0),
            precondition_failed: total.precondition_failed,
            conflicts: total.conflicts,
            rereads: total.rereads,
            errors: total.errors,
            unmatched: measured.unmatched,
            statements: measured.statements as f64 / total.ok.max(1) as f64,
        }
    }

    fn csv(&self) -> String {
        format!(
            "{},{},{},{},{:.3},{},{:.1},{:.3},{:.3},{},{},{},{},{},{},{:.3}",
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
            if self.via == Via::Http {
                "http"
            } else {
                "direct"
            },
            self.statements,
        )
    }

    pub(crate) fn line(&self) -> String {
        format!(
            "{:<17} articles {:>3}  {:>7.0} req/s  p50 {:>7.3} ms  p99 {:>8.3} ms  \
             412 {:>6}  409 {:>6}  re-reads {:>6}  errors {:>3}  unmatched ETags {}  \
             statements/write {:.2}",
            self.write.name(),
            self.articles,
            self.per_sec,
            self.p50_ms,
            self.p99_ms,
            self.precondition_failed,
            self.conflicts,
            self.rereads,
            self.errors,
            self.unmatched,
            self.statements,
        )
    }
}

/// The ratios of the paired rounds (the median of each round's) and the medians of
/// each write's figures, over HTTP and without it; then the 412s, 409s and unmatched
/// tokens of every run.
pub(crate) fn report_ratios(rows: &[HttpRow], rounds: usize, summary: &mut Summary) {
    for via in [Via::Http, Via::Direct] {
        let paired: Vec<&HttpRow> = rows
            .iter()
            .filter(|r| r.round > 0 && r.via == via)
            .collect();
        let median_of = |write: Write, of: fn(&HttpRow) -> f64| {
            median(
                paired
                    .iter()
                    .filter(|r| r.write == write)
                    .map(|r| of(r))
                    .collect(),
            )
        };
        let label = if via == Via::Http {
            "http"
        } else {
            "without HTTP"
        };
        for write in Write::ALL {
            summary.say(format!(
                "{label}: {:<17} medians: {:.0} req/s, p50 {:.3} ms, {:.2} statements per write",
                write.name(),
                median_of(write, |r| r.per_sec),
                median_of(write, |r| r.p50_ms),
                median_of(write, |r| r.statements),
            ));
        }
        let of_round = |round: usize, write: Write| {
            let row = paired.iter().find(|r| r.round == round && r.write == write);
            row.map(|r| r.per_sec)
        };
        let conditional = median_of(Write::IfMatch, |r| r.per_sec);
        for other in [Write::LoadSave, Write::Unconditional] {
            let ratios: Vec<f64> = (1..=rounds)
                .filter_map(|round| {
                    Some(of_round(round, Write::IfMatch)? / of_round(round, other)?)
                })
                .collect();
            summary.say(format!(
                "{label}: put-if-match / {} = {:.3} (ratio of medians); per round: {}",
                other.name(),
                conditional / median_of(other, |r| r.per_sec),
                per_round(&ratios),
            ));
        }
    }
    let failed: u64 = rows.iter().map(|r| r.precondition_failed).sum();
    let conflicts: u64 = rows.iter().map(|r| r.conflicts).sum();
    let unmatched: usize = rows.iter().map(|r| r.unmatched).sum();
    summary.say(format!(
        "http: 412 responses {failed}, 409 responses {conflicts} (all runs); articles whose \
         token no client holds: {unmatched}"
    ));
}

/// `http.csv`, as its rows.
pub(crate) fn csv(rows: &[HttpRow]) -> String {
    let lines: Vec<String> = rows.iter().map(HttpRow::csv).collect();
    format!("{}\n{}\n", HttpRow::CSV_HEADER, lines.join("\n"))
}
