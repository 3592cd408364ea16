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
#[derive(Debug)]
pub(crate) struct HttpRow {
    /// 0 for the runs before the paired rounds.
    pub(crate) round: usize,
    pub(crate) write: Write,
    pub(crate) via: Via,
    pub(crate) clients: usize,
    pub(crate) articles: usize,
    pub(crate) measured: Measured,
}

impl HttpRow {
    const CSV_HEADER: &'static str = "round,write,clients,articles,seconds,ok,requests_per_sec,\
        p50_ms,p99_ms,status_412,status_409,rereads,errors,unmatched_etags,via,\
        statements_per_write";

    /// Successful writes per second.
    fn per_sec(&self) -> f64 {
        self.measured.tally.ok as f64 / self.measured.seconds.max(1e-9)
    }

    /// The percentile `p` of a successful write's latency, in ms.
    fn ms(&self, p: f64) -> f64 {
        percentile(&self.measured.tally.latencies, p) as f64 / 1e6
    }

    /// Statements the service's connections ran, per successful write.
    fn statements(&self) -> f64 {
        self.measured.statements as f64 / self.measured.tally.ok.max(1) as f64
    }

    fn csv(&self) -> String {
        let (m, t) = (&self.measured, &self.measured.tally);
        format!(
            "{},{},{},{},{:.3},{},{:.1},{:.3},{:.3},{},{},{},{},{},{},{:.3}",
            self.round,
            self.write.name(),
            self.clients,
            self.articles,
            m.seconds,
            t.ok,
            self.per_sec(),
            self.ms(50.0),
            self.ms(99.0),
            t.precondition_failed,
            t.conflicts,
            t.rereads,
            t.errors,
            m.unmatched,
            if self.via == Via::Http {
                "http"
            } else {
                "direct"
            },
            self.statements(),
        )
    }

    pub(crate) fn line(&self) -> String {
        let t = &self.measured.tally;
        format!(
            "{:<17} articles {:>3}  {:>7.0} req/s  p50 {:>7.3} ms  p99 {:>8.3} ms  \
             412 {:>6}  409 {:>6}  re-reads {:>6}  errors {:>3}  unmatched ETags {}  \
             statements/write {:.2}",
            self.write.name(),
            self.articles,
            self.per_sec(),
            self.ms(50.0),
            self.ms(99.0),
            t.precondition_failed,
            t.conflicts,
            t.rereads,
            t.errors,
            self.measured.unmatched,
            self.statements(),
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
                median_of(write, HttpRow::per_sec),
                median_of(write, |r| r.ms(50.0)),
                median_of(write, HttpRow::statements),
            ));
        }
        let of_round = |round: usize, write: Write| {
            let row = paired.iter().find(|r| r.round == round && r.write == write);
            row.map(|r| r.per_sec())
        };
        let conditional = median_of(Write::IfMatch, HttpRow::per_sec);
        for other in [Write::LoadSave, Write::Unconditional] {
            let ratios: Vec<f64> = (1..=rounds)
                .filter_map(|round| {
                    Some(of_round(round, Write::IfMatch)? / of_round(round, other)?)
                })
                .collect();
            summary.say(format!(
                "{label}: put-if-match / {} = {:.3} (ratio of medians); per round: {}",
                other.name(),
                conditional / median_of(other, HttpRow::per_sec),
                per_round(&ratios),
            ));
        }
    }
    let failed: u64 = rows
        .iter()
        .map(|r| r.measured.tally.precondition_failed)
        .sum();
    let conflicts: u64 = rows.iter().map(|r| r.measured.tally.conflicts).sum();
    let unmatched: usize = rows.iter().map(|r| r.measured.unmatched).sum();
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
