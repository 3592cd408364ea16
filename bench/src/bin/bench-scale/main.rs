//! `bench-scale`: the reservation workload on
//! a 3-node MariaDB Galera cluster, one node against three, and on PostgreSQL with a
//! streaming standby, reads from the standby against reads from the primary.
//!
//! Both compare two set-ups of the same strategy at the same key count in paired
//! rounds: each round runs both, one after the other, the first of the pair swapping
//! from round to round. Every run starts from a fresh table and ends with the lost
//! updates (committed reservations minus the units that left the table, read with a
//! causal read on Galera and from the primary on PostgreSQL).
//!
//! - **Galera.** "1 node": every worker connects to node 1. "3 nodes": worker `i` to node
//!   `i % 3` (writers on every node, racing through certification). Certification
//!   failures arrive as error 1213 and are counted apart from the conflicts (a checked
//!   UPDATE that matched no row) and retried. Reads run with the default
//!   `wsrep_sync_wait = 0`: a read on a node may be stale.
//! - **PostgreSQL.** "primary": `occ` reading and writing on the primary. "standby": the
//!   first attempt of an operation reads from the standby, the checked save goes to the
//!   primary, and a retry after a conflict re-reads from the primary
//!   (`blocking::retry_with_standby`).
//!
//! ```text
//! cargo run --release -p diesel-occ-bench --features mysql --bin bench-scale -- \
//!     --backend galera,pg-standby --workers 6 --keys 1,10000 --duration 2s --rounds 5
//! ```

#[cfg(feature = "mysql")]
mod galera;
mod options;
mod rounds;
mod standby;

use diesel_occ_bench::cli;
use diesel_occ_bench::summary::Summary;

use crate::options::{Args, Cluster};
use crate::rounds::{ScaleRow, report};

fn main() {
    let args = match Args::parse() {
        Ok(args) => args,
        Err((message, help)) => cli::exit_with_usage(&message, help),
    };
    let mut failed = false;
    for &cluster in &args.clusters {
        if let Err(message) = bench(&args, cluster) {
            eprintln!("{}: {message}", cluster.name());
            failed = true;
        }
    }
    if failed {
        std::process::exit(1);
    }
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
