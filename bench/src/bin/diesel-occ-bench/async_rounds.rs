//! The paired async rounds: `occ-async` against `occ` at every key count, with
//! `handwritten-async` and, built with feature `sqlx`, the sqlx peer (`sqlx`), and their
//! chart (drawn again by `redraw`).

use std::path::{Path, PathBuf};

use diesel_occ_bench::backend::Backend;
use diesel_occ_bench::cpu::Process;
use diesel_occ_bench::summary::Summary;

use crate::chart;
use crate::options::Args;
use crate::run::{Setting, run, run_sqlx};
use crate::samples::Samples;

/// The label of the sqlx peer (`strategies::sqlx_peer`).
const SQLX: &str = "sqlx";

/// `occ-async` against `occ` at every key count, in rounds of their own, with
/// `handwritten-async` (the same statements on diesel-async without diesel-occ) and,
/// with feature `sqlx`, the sqlx peer (hand-written optimistic locking on sqlx): the
/// per-round goodput ratios, and the conflicts, statements and this process's CPU per
/// committed operation.
pub(crate) fn paired(
    setting: &Setting<'_>,
    args: &Args,
    summary: &mut Summary,
) -> Result<(), String> {
    let mut entrants = vec!["occ", "occ-async", "handwritten-async"];
    entrants.extend(cfg!(feature = "sqlx").then_some(SQLX));
    let rounds = args.common.rounds;
    summary.say(format!(
        "-- paired async rounds ({rounds} rounds): occ against {} at keys {:?}",
        entrants[1..].join(", "),
        args.keys
    ));
    let labels = entrants.clone();
    let mut goodput = Samples::default();
    let mut client_cpu = Samples::default();
    for round in 1..=rounds {
        if round > 1 {
            entrants.rotate_left(1);
        }
        for &keys in &args.keys {
            for &label in &entrants {
                let cpu_before = Process::take();
                let mut row = match label {
                    SQLX => run_sqlx(setting, keys)?,
                    _ => run(setting, clap::ValueEnum::from_str(label, false)?, keys)?,
                };
                let per_op = |n: u64| n as f64 / row.tally.committed.max(1) as f64;
                // Counted on diesel's connections only: sqlx has no cheap hook.
                let statements = match label {
                    "occ" | SQLX => String::new(),
                    _ => format!("  statements/op {:.2}", per_op(row.tally.statements)),
                };
                // This process's CPU per operation (the client: driver, runtime, library)
                // and how busy both cores were: where the time goes when the cores are
                // the limit.
                let cpu = match (cpu_before, Process::take()) {
                    (Some(before), Some(after)) => {
                        let (client_us, busy) = before.spent_until(&after, row.tally.committed);
                        client_cpu.push(round, label, keys, client_us);
                        format!(
                            "  client CPU us/op {client_us:.1}  machine busy {:.0} %",
                            busy * 100.0
                        )
                    }
                    _ => String::new(),
                };
                row.strategy = label.to_owned();
                summary.say(format!(
                    "async round {round}: {}  conflicts/op {:.3}{statements}{cpu}",
                    row.line(),
                    per_op(row.tally.conflicts)
                ));
                goodput.push(round, label, keys, row.ops_per_sec());
            }
        }
    }
    let base = draw(
        setting.backend,
        args.common.workers,
        rounds,
        &goodput,
        &args.common.out,
    )?;
    summary.say(format!(
        "async chart: {}",
        base.with_extension("svg").display()
    ));
    for &keys in &args.keys {
        let mut pairs = vec![("occ-async", "handwritten-async")];
        pairs.extend(cfg!(feature = "sqlx").then_some(("occ-async", SQLX)));
        pairs.extend(labels[1..].iter().map(|&label| (label, "occ")));
        for (a, b) in pairs {
            summary.say(goodput.per_round(rounds, (a, keys), (b, keys)));
        }
        if client_cpu.has("occ", keys) {
            let medians: Vec<String> = labels
                .iter()
                .map(|label| format!("{label} {:.1}", client_cpu.median(label, keys)))
                .collect();
            summary.say(format!(
                "async: client CPU us per operation at {keys} keys, medians of the rounds: {}",
                medians.join(", ")
            ));
        }
    }
    Ok(())
}

/// Draws `<backend>-async.svg` (and `.png`) into `out`: the medians of the rounds'
/// goodput of each entrant at each key count. Returns the files' base path.
pub(crate) fn draw(
    backend: Backend,
    workers: usize,
    rounds: usize,
    goodput: &Samples,
    out: &Path,
) -> Result<PathBuf, String> {
    let mut points = Vec::new();
    for sample in goodput.0.iter().filter(|s| s.round == 1) {
        points.push(chart::Point {
            series: sample.label.clone(),
            x: sample.keys,
            y: goodput.median(&sample.label, sample.keys),
        });
    }
    points.sort_by_key(|p| p.series != "occ");
    let title = format!(
        "diesel-occ-bench: {}, async against blocking (occ), {workers} workers, median of \
         {rounds} paired rounds",
        backend.name()
    );
    std::fs::create_dir_all(out).map_err(|e| e.to_string())?;
    let base = out.join(format!("{}-async", backend.name()));
    chart::draw(&points, &title, chart::HOT_KEYS, &base)?;
    Ok(base)
}
