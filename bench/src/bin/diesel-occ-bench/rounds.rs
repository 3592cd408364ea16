//! The paired rounds behind the ratios: the strategies being compared run in
//! alternation, round after round, each round starting with another, so that the
//! shared machine's drift hits all of them alike; each comparison is reported as its
//! per-round ratios, their median and its interval.

use diesel_occ_bench::backend::Backend;
use diesel_occ_bench::pg;
use diesel_occ_bench::strategies::sql::StockSql;
use diesel_occ_bench::strategy::Strategy;
use diesel_occ_bench::summary::Summary;

use crate::options::Args;
use crate::run::{Setting, run};
use crate::samples::Samples;

/// Runs the rounds and reports the ratios: the overhead comparisons at the most keys
/// (with pgbench on PostgreSQL unless `!pgbench`), the hot key at the fewest.
pub(crate) fn paired(
    setting: &Setting<'_>,
    args: &Args,
    pgbench: bool,
    summary: &mut Summary,
) -> Result<(), String> {
    let (narrow, wide) = args.narrow_and_wide();
    let rounds = args.common.rounds;
    summary.say(format!(
        "-- paired rounds ({rounds} rounds): hot key at {narrow} keys, overhead at {wide} keys"
    ));
    let chosen = |group: [Strategy; 4], keys| {
        let group: Vec<(Strategy, i32)> = group
            .into_iter()
            .filter(|s| args.strategies.contains(s))
            .map(|s| (s, keys))
            .collect();
        // A comparison needs two.
        if group.len() < 2 { Vec::new() } else { group }
    };
    use Strategy::{
        Handwritten, HandwrittenPrepared, Occ, OccEscalate, OccEscalateOp, Pessimistic,
    };
    let mut hot = chosen([Occ, OccEscalate, OccEscalateOp, Pessimistic], narrow);
    let mut overhead = chosen([Handwritten, HandwrittenPrepared, Occ, OccEscalate], wide);
    let mut samples = Samples::default();
    for round in 1..=rounds {
        if round > 1 {
            let (h, o) = (hot.len().min(1), overhead.len().min(1));
            hot.rotate_left(h);
            overhead.rotate_left(o);
        }
        for &(strategy, keys) in hot.iter().chain(&overhead) {
            let row = run(setting, strategy, keys)?;
            summary.say(format!("round {round}: {}", row.line()));
            samples.push(round, strategy.name(), keys, row.ops_per_sec());
        }
        if setting.backend == Backend::Postgres && pgbench {
            pgbench_round(setting, args, round, wide, &mut samples, summary)?;
        }
    }
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
            summary.say(samples.per_round(rounds, a, b));
        }
    }
    Ok(())
}

/// pgbench on the same table and SQL, for one round.
fn pgbench_round(
    setting: &Setting<'_>,
    args: &Args,
    round: usize,
    wide: i32,
    samples: &mut Samples,
    summary: &mut Summary,
) -> Result<(), String> {
    let seconds = args.common.duration.as_secs().max(1);
    let mut conn = pg::Conn::connect(setting.url, Strategy::Atomic)?;
    conn.reset(wide).map_err(|e| e.to_string())?;
    let clients = args.common.workers;
    match crate::pgbench::tps(setting.url, clients, seconds, wide)? {
        Some(tps) => {
            summary.say(format!(
                "round {round}: pgbench        keys {wide:>6}  {tps:>9.0} tps (same SQL, {clients} clients)"
            ));
            samples.push(round, "pgbench", wide, tps);
        }
        None => summary.say("pgbench not found: skipped".into()),
    }
    Ok(())
}
