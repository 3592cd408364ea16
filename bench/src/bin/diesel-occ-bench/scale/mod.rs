//! `scale`: the reservation workload on a 3-node MariaDB Galera cluster (1 node against
//! 3, [`galera`]) and on PostgreSQL with a streaming standby (reads on the standby
//! against the primary, [`standby`]), two set-ups of a strategy in paired rounds
//! ([`rounds`]), every run from a fresh table and ending with its lost updates. The
//! set-ups are described in `bench/results/method.md`.

#[cfg(feature = "mysql")]
mod galera;
mod options;
mod rounds;
mod standby;

use diesel_occ_bench::summary::Summary;

pub(crate) use self::options::Args;
use self::options::Cluster;
use self::rounds::{ScaleRow, report};

/// Runs the comparison on every `--backend` cluster.
pub(crate) fn main(mut args: Args) -> Result<(), String> {
    args.common.finish(3);
    if args.common.smoke {
        args.keys = vec![1, 100];
    }
    for &cluster in &args.clusters {
        bench(&args, cluster).map_err(|e| format!("{}: {e}", cluster.name()))?;
    }
    Ok(())
}

/// Runs the comparison on `cluster` and writes `<cluster>.csv` and
/// `<cluster>-summary.txt` into `--out`.
fn bench(args: &Args, cluster: Cluster) -> Result<(), String> {
    let urls = cluster.urls(args.cluster_url(cluster));
    let keys = args.keys.clone();
    let mut summary = Summary::default();
    let rows = match cluster {
        #[cfg(feature = "mysql")]
        Cluster::Galera => galera::run(args, &urls, &keys, &mut summary)?,
        #[cfg(not(feature = "mysql"))]
        Cluster::Galera => return Err("Galera needs `--features mysql`".into()),
        Cluster::PgStandby => standby::run(args, &urls, &keys, &mut summary)?,
    };
    report(cluster, &rows, &keys, args.common.rounds, &mut summary);
    let lines: Vec<String> = rows.iter().map(|row| row.csv(cluster)).collect();
    let csv = format!("{}\n{}\n", ScaleRow::CSV_HEADER, lines.join("\n"));
    let csv = args.common.save(&format!("{}.csv", cluster.name()), &csv)?;
    let text = args
        .common
        .save(&format!("{}-summary.txt", cluster.name()), summary.text())?;
    println!("wrote {} and {}", csv.display(), text.display());
    Ok(())
}
