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
    args.common.finish("diesel-occ-bench-smoke", 3);
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
    std::fs::create_dir_all(&args.common.out).map_err(|e| e.to_string())?;
    let mut csv = String::from(ScaleRow::CSV_HEADER);
    csv.push('\n');
    for row in &rows {
        csv.push_str(&row.csv(cluster));
        csv.push('\n');
    }
    let path = args.common.out.join(format!("{}.csv", cluster.name()));
    std::fs::write(&path, csv).map_err(|e| format!("{}: {e}", path.display()))?;
    let text = args
        .common
        .out
        .join(format!("{}-summary.txt", cluster.name()));
    std::fs::write(&text, summary.text()).map_err(|e| format!("{}: {e}", text.display()))?;
    println!("wrote {} and {}", path.display(), text.display());
    Ok(())
}
