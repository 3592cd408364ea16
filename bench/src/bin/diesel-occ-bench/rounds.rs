//! The paired rounds behind the ratios: the strategies being compared run in
//! alternation, round after round, so that the shared machine's drift hits all of them
//! alike; the ratios are ratios of medians, and each round's own ratio is listed too.

use diesel_occ_bench::async_setup::Setup;
use diesel_occ_bench::backend::Backend;
use diesel_occ_bench::harness::Limit;
use diesel_occ_bench::pg;
use diesel_occ_bench::stats::{ratio, verdict};
use diesel_occ_bench::strategies::database::Database;
use diesel_occ_bench::strategies::sql::StockSql;
use diesel_occ_bench::strategy::Strategy;
use diesel_occ_bench::summary::Summary;

use crate::options::Args;
use crate::run::{Setting, run};
use crate::samples::{Sample, Samples};

/// The key counts of the comparisons: the hot key (fewest) and the overhead (most).
#[derive(Debug, Clone, Copy)]
struct Keys {
    narrow: i32,
    wide: i32,
}

/// Runs the rounds and reports the ratios.
pub(crate) fn paired(
    setting: &Setting<'_>,
    args: &Args,
    pgbench: bool,
    summary: &mut Summary,
) -> Result<(), String> {
    let keys = Keys {
        wide: *args.keys.iter().max().unwrap_or(&1),
        narrow: *args.keys.iter().min().unwrap_or(&1),
    };
    summary.say(format!(
        "-- paired rounds ({} rounds): hot key at {} keys, overhead at {} keys",
        args.common.rounds, keys.narrow, keys.wide
    ));
    let samples = play(setting, args, keys, pgbench, summary)?;
    report_overhead(&samples, args, keys, summary);
    report_hot_key(&samples, args, keys, summary);
    report_per_round(&samples, args, keys, summary);
    Ok(())
}

/// Plays the rounds, each starting with another strategy so that none always runs first.
fn play(
    setting: &Setting<'_>,
    args: &Args,
    keys: Keys,
    pgbench: bool,
    summary: &mut Summary,
) -> Result<Samples, String> {
    let Keys { narrow, wide } = keys;
    let mut hot = chosen(
        args,
        vec![
            (Strategy::Occ, narrow),
            (Strategy::OccEscalate, narrow),
            (Strategy::OccEscalateOp, narrow),
            (Strategy::Pessimistic, narrow),
        ],
    );
    let mut overhead = chosen(
        args,
        vec![
            (Strategy::Handwritten, wide),
            (Strategy::HandwrittenPrepared, wide),
            (Strategy::Occ, wide),
            (Strategy::OccEscalate, wide),
        ],
    );
    let mut samples = Samples::default();
    for round in 1..=args.common.rounds {
        if round > 1 {
            let (h, o) = (hot.len().min(1), overhead.len().min(1));
            hot.rotate_left(h);
            overhead.rotate_left(o);
        }
        for &(strategy, keys) in hot.iter().chain(&overhead) {
            let row = run(setting, strategy, keys, Setup::RECOMMENDED)?;
            summary.say(format!("round {round}: {}", row.line()));
            samples.0.push(Sample {
                round,
                label: strategy.name(),
                keys,
                value: row.ops_per_sec,
            });
        }
        if setting.backend == Backend::Postgres && pgbench {
            if let Some(sample) = pgbench_round(setting, args, round, wide, summary)? {
                samples.0.push(sample);
            }
        }
    }
    Ok(samples)
}

/// The strategies of a comparison that `--strategies` selected (all by default); none
/// when fewer than two are left to compare.
fn chosen(args: &Args, mut group: Vec<(Strategy, i32)>) -> Vec<(Strategy, i32)> {
    group.retain(|(strategy, _)| args.strategies.contains(strategy));
    if group.len() < 2 {
        group.clear();
    }
    group
}

/// pgbench on the same table and SQL, for one round.
fn pgbench_round(
    setting: &Setting<'_>,
    args: &Args,
    round: usize,
    wide: i32,
    summary: &mut Summary,
) -> Result<Option<Sample>, String> {
    let Limit::Time(duration) = args.common.limit;
    let seconds = duration.as_secs().max(1);
    let mut conn = pg::Db::connect(setting.url, Strategy::Atomic)?;
    conn.reset(wide).map_err(|e| e.to_string())?;
    match crate::pgbench::tps(setting.url, args.common.workers, seconds, wide)? {
        Some(tps) => {
            summary.say(format!(
                "round {round}: pgbench        keys {wide:>6}  {tps:>9.0} tps (same SQL, {} clients)",
                args.common.workers
            ));
            Ok(Some(Sample {
                round,
                label: "pgbench",
                keys: wide,
                value: tps,
            }))
        }
        None => {
            summary.say("pgbench not found: skipped".into());
            Ok(None)
        }
    }
}

/// diesel-occ against the hand-written statements and pgbench, at the most keys.
fn report_overhead(samples: &Samples, args: &Args, keys: Keys, summary: &mut Summary) {
    let wide = keys.wide;
    if !samples.has("occ", wide) {
        return;
    }
    let (hand, prepared, occ) = (
        samples.median("handwritten", wide),
        samples.median("handwritten-prepared", wide),
        samples.median("occ", wide),
    );
    if prepared.is_finite() {
        summary.say(format!(
            "overhead: diesel-occ / hand-written Diesel, UPDATE prepared once = {} (medians {occ:.0} vs {prepared:.0} ops/s at {wide} keys; target >= 0.97: {})",
            ratio(occ, prepared),
            verdict(occ / prepared, 0.97)
        ));
    }
    if hand.is_finite() {
        summary.say(format!(
            "  diesel-occ / hand-written Diesel, UPDATE prepared every time = {} (medians {occ:.0} vs {hand:.0} ops/s: what the statement cache is worth)",
            ratio(occ, hand),
        ));
    }
    let tps = samples.median("pgbench", wide);
    if tps.is_finite() {
        summary.say(format!(
            "overhead: diesel-occ / pgbench = {} (medians {occ:.0} ops/s vs {tps:.0} tps, {} clients; target >= 0.9: {})",
            ratio(occ, tps),
            args.common.workers,
            verdict(occ / tps, 0.9)
        ));
    }
}

/// Lock escalation against the pessimistic lock at the fewest keys, and its cost at
/// the most keys.
fn report_hot_key(samples: &Samples, args: &Args, keys: Keys, summary: &mut Summary) {
    let Keys { narrow, wide } = keys;
    if !samples.has("pessimistic", narrow) {
        return;
    }
    let (plain, escalate, per_operation, lock) = (
        samples.median("occ", narrow),
        samples.median("occ-escalate", narrow),
        samples.median("occ-escalate-op", narrow),
        samples.median("pessimistic", narrow),
    );
    summary.say(format!(
        "hot key ({narrow} key, {} workers), medians: occ {plain:.0}, occ-escalate {escalate:.0}, \
         occ-escalate-op {per_operation:.0}, pessimistic {lock:.0} ops/s",
        args.common.workers
    ));
    summary.say(format!(
        "  occ-escalate / pessimistic = {} (target >= 0.9: {}); occ-escalate-op / pessimistic = {}; \
         occ / pessimistic = {}",
        ratio(escalate, lock),
        verdict(escalate / lock, 0.9),
        ratio(per_operation, lock),
        ratio(plain, lock)
    ));
    let (plain, escalate) = (
        samples.median("occ", wide),
        samples.median("occ-escalate", wide),
    );
    if !(plain.is_finite() && escalate.is_finite()) {
        return;
    }
    summary.say(format!(
        "  at {wide} keys: occ-escalate / occ = {} (target >= 0.97: {})",
        ratio(escalate, plain),
        verdict(escalate / plain, 0.97)
    ));
}

/// The same comparisons round by round.
fn report_per_round(samples: &Samples, args: &Args, keys: Keys, summary: &mut Summary) {
    let Keys { narrow, wide } = keys;
    let pairs = [
        (("occ", wide), ("handwritten-prepared", wide)),
        (("occ", wide), ("handwritten", wide)),
        (("occ", wide), ("pgbench", wide)),
        (("occ", narrow), ("pessimistic", narrow)),
        (("occ-escalate", narrow), ("pessimistic", narrow)),
        (("occ-escalate-op", narrow), ("pessimistic", narrow)),
        (("occ-escalate", wide), ("occ", wide)),
    ];
    for (a, b) in pairs {
        if samples.has(a.0, a.1) && samples.has(b.0, b.1) {
            summary.say(samples.per_round(args.common.rounds, a, b));
        }
    }
}
