//! The paired async rounds: `occ-async` against `occ` at every key count, with
//! `handwritten-async` and, built with feature `sqlx`, the sqlx peer (`sqlx`), and their chart (drawn again by `--redraw`).

use diesel_occ_bench::async_setup::Setup;
use diesel_occ_bench::async_support::sleep_probe;
use diesel_occ_bench::backend::Backend;
use diesel_occ_bench::cpu::Process;
use diesel_occ_bench::stats::ratio;
use diesel_occ_bench::strategy::Strategy;
use diesel_occ_bench::summary::Summary;

use crate::options::Args;
use crate::run::{Setting, run, run_sqlx};

use crate::samples::{Sample, Samples};

/// The label of the sqlx peer (`strategies::sqlx_peer`).
const SQLX: &str = "sqlx";

/// Who runs in one slot of a round.
#[derive(Debug, Clone, Copy)]
enum Entrant {
    /// The blocking `occ`, the rounds' reference.
    Occ,
    /// The asynchronous strategy with the setup of this index.
    Setup(usize),
    /// The sqlx peer (feature `sqlx`).
    Sqlx,
}

/// The chart of the paired async rounds: the medians of `occ` and of each async setup
/// at every key count, as `<backend>-async.svg` (and `.png`).
struct AsyncChart<'a> {
    backend: Backend,
    workers: usize,
    rounds: usize,
    keys: &'a [i32],
    labels: &'a [&'static str],
}

impl AsyncChart<'_> {
    /// Draws it from the rounds' goodput into `out`; returns the files' base path.
    fn draw(&self, goodput: &Samples, out: &std::path::Path) -> Result<std::path::PathBuf, String> {
        let groups: Vec<(i32, Vec<(&str, f64)>)> = self
            .keys
            .iter()
            .map(|&keys| {
                let bars = std::iter::once("occ")
                    .chain(self.labels.iter().copied())
                    .map(|label| (label, goodput.median(label, keys)))
                    .collect();
                (keys, bars)
            })
            .collect();
        std::fs::create_dir_all(out).map_err(|e| e.to_string())?;
        let base = out.join(format!("{}-async", self.backend.name()));
        crate::chart::bars(
            &groups,
            &format!(
                "diesel-occ-bench: {}, async (occ-async) against blocking (occ), {} workers, median of {} paired rounds",
                self.backend.name(),
                self.workers,
                self.rounds
            ),
            "committed operations per second",
            &base,
        )?;
        Ok(base)
    }
}

/// Draws `<backend>-async.svg` again from the `async round` lines of the backend's
/// summary in `out` (`--redraw`); `Ok(None)` when there is no summary or it has none.
pub(crate) fn redraw_asynchronous(
    backend: Backend,
    workers: usize,
    out: &std::path::Path,
) -> Result<Option<std::path::PathBuf>, String> {
    let path = out.join(format!("{}-summary.txt", backend.name()));
    let Ok(summary) = std::fs::read_to_string(&path) else {
        return Ok(None);
    };
    let mut goodput = Samples::default();
    let (mut keys, mut labels) = (Vec::new(), Vec::<&'static str>::new());
    for line in summary.lines() {
        // `async round R: LABEL keys K OPS ops/s ...`
        let Some(rest) = line.strip_prefix("async round ") else {
            continue;
        };
        let words: Vec<&str> = rest.split_whitespace().collect();
        let parsed = (|| {
            let round = words.first()?.strip_suffix(':')?.parse().ok()?;
            let label = *words.get(1)?;
            let key_count = words.get(3)?.parse().ok()?;
            let value = words.get(4)?.parse().ok()?;
            Some((round, label, key_count, value))
        })();
        let Some((round, label, key_count, value)) = parsed else {
            return Err(format!("{}: cannot read {line:?}", path.display()));
        };
        if !keys.contains(&key_count) {
            keys.push(key_count);
        }
        let label: &'static str = match labels.iter().find(|known| **known == label) {
            Some(known) => known,
            None => Box::leak(label.to_owned().into_boxed_str()),
        };
        if label != "occ" && !labels.contains(&label) {
            labels.push(label);
        }
        goodput.0.push(Sample {
            round,
            label,
            keys: key_count,
            value,
        });
    }
    if goodput.0.is_empty() {
        return Ok(None);
    }
    let rounds = goodput.0.iter().map(|s| s.round).max().unwrap_or(1);
    let chart = AsyncChart {
        backend,
        workers,
        rounds,
        keys: &keys,
        labels: &labels,
    };
    chart.draw(&goodput, out).map(Some)
}

/// `occ-async` against `occ` at every key count, in rounds of their own, with
/// `handwritten-async` (the same statements on diesel-async without diesel-occ) and, with feature `sqlx`, the sqlx peer
/// (hand-written optimistic locking on sqlx): goodput ratios, p99 at the fewest keys,
/// conflicts, statements and this process's CPU per committed operation.
pub(crate) fn paired(
    setting: &Setting<'_>,
    args: &Args,
    summary: &mut Summary,
) -> Result<(), String> {
    let setups = [Setup::RECOMMENDED, Setup::HANDWRITTEN];
    let sqlx = cfg!(feature = "sqlx");
    let [asked, thread, tokio, helper] = sleep_probe()?;
    summary.say(format!(
        "-- paired async rounds ({} rounds): occ against {} at keys {:?}; \
         a backoff of U[0, 1 ms] (mean {asked:.3} ms) lasts {thread:.3} ms with \
         thread::sleep, {tokio:.3} ms with tokio::time::sleep, {helper:.3} ms with the \
         async helper's pause",
        args.common.rounds,
        setups
            .iter()
            .map(|s| s.label())
            .chain(sqlx.then_some(SQLX))
            .collect::<Vec<_>>()
            .join(", "),
        args.keys
    ));
    let labels: Vec<&'static str> = setups
        .iter()
        .map(|s| s.label())
        .chain(sqlx.then_some(SQLX))
        .collect();
    let mut entrants: Vec<Entrant> = std::iter::once(Entrant::Occ)
        .chain((0..setups.len()).map(Entrant::Setup))
        .chain(sqlx.then_some(Entrant::Sqlx))
        .collect();
    let (mut goodput, mut p99) = (Samples::default(), Samples::default());
    let mut client_cpu = Samples::default();
    for round in 1..=args.common.rounds {
        if round > 1 {
            entrants.rotate_left(1);
        }
        for &keys in &args.keys {
            for &entrant in &entrants {
                let cpu_before = Process::take();
                let (mut row, label) = match entrant {
                    Entrant::Occ => (
                        run(setting, Strategy::Occ, keys, Setup::RECOMMENDED)?,
                        "occ",
                    ),
                    Entrant::Setup(index) => (
                        run(setting, Strategy::OccAsynchronous, keys, setups[index])?,
                        labels[index],
                    ),
                    Entrant::Sqlx => (run_sqlx(setting, keys)?, SQLX),
                };
                let per_op = |n: f64| n / row.committed.max(1) as f64;
                // Counted on diesel's connections only: sqlx has no cheap hook.
                let statements = match entrant {
                    Entrant::Occ | Entrant::Sqlx => String::new(),
                    Entrant::Setup(_) => {
                        format!("  statements/op {:.2}", per_op(row.statements as f64))
                    }
                };
                let conflicts = per_op(row.conflicts as f64);
                // This process's CPU per operation (the client: driver, runtime, library)
                // and how busy both cores were: where the time goes when the cores are
                // the limit.
                let cpu = match (cpu_before, Process::take()) {
                    (Some(before), Some(after)) => {
                        let (client_us, busy) = before.spent_until(&after, row.committed);
                        client_cpu.0.push(Sample {
                            round,
                            label,
                            keys,
                            value: client_us,
                        });
                        format!(
                            "  client CPU us/op {client_us:.1}  machine busy {:.0} %",
                            busy * 100.0
                        )
                    }
                    _ => String::new(),
                };
                row.strategy = label.to_owned();
                summary.say(format!(
                    "async round {round}: {}  conflicts/op {conflicts:.3}{statements}{cpu}",
                    row.line()
                ));
                for (samples, value) in [(&mut goodput, row.ops_per_sec), (&mut p99, row.p99_ms)] {
                    samples.0.push(Sample {
                        round,
                        label,
                        keys,
                        value,
                    });
                }
            }
        }
    }
    let chart = AsyncChart {
        backend: setting.backend,
        workers: args.common.workers,
        rounds: args.common.rounds,
        keys: &args.keys,
        labels: &labels,
    };
    let base = chart.draw(&goodput, &args.common.out)?;
    summary.say(format!(
        "async chart: {}",
        base.with_extension("svg").display()
    ));
    for &keys in &args.keys {
        let (library, baseline) = (
            goodput.median("occ-async", keys),
            goodput.median("handwritten-async", keys),
        );
        summary.say(format!(
            "async: occ-async / handwritten-async (the library's own cost in async code, \
             no target) at {keys} keys = {}",
            ratio(library, baseline)
        ));
        summary.say(goodput.per_round(
            args.common.rounds,
            ("occ-async", keys),
            ("handwritten-async", keys),
        ));
        if sqlx {
            summary.say(format!(
                "async: occ-async / sqlx (hand-written optimistic locking on sqlx 0.9, \
                 no target) at {keys} keys = {}",
                ratio(library, goodput.median(SQLX, keys))
            ));
            summary.say(goodput.per_round(args.common.rounds, ("occ-async", keys), (SQLX, keys)));
        }
        if client_cpu.has("occ", keys) {
            let medians: Vec<String> = std::iter::once("occ")
                .chain(labels.iter().copied())
                .map(|label| format!("{label} {:.1}", client_cpu.median(label, keys)))
                .collect();
            summary.say(format!(
                "async: client CPU us per operation at {keys} keys, medians of the rounds: {}",
                medians.join(", ")
            ));
        }
    }
    for &label in &labels {
        for &keys in &args.keys {
            let (a, b) = (goodput.median(label, keys), goodput.median("occ", keys));
            summary.say(format!(
                "async: {label} / occ at {keys} keys = {} (medians {a:.0} vs {b:.0} ops/s)",
                ratio(a, b)
            ));
            summary.say(goodput.per_round(args.common.rounds, (label, keys), ("occ", keys)));
        }
        let narrow = *args.keys.iter().min().unwrap_or(&1);
        let (a, b) = (p99.median(label, narrow), p99.median("occ", narrow));
        summary.say(format!(
            "async: p99 at {narrow} keys, medians of the rounds: {label} {a:.3} ms, occ {b:.3} ms, \
             ratio {}",
            ratio(a, b)
        ));
    }
    Ok(())
}
