//! pgbench, for the same SQL without Diesel or diesel-occ: `bench/pgbench.sh`.

use std::path::PathBuf;

/// pgbench's transactions per second for the equivalent SQL script, from
/// `bench/pgbench.sh` (None when pgbench is not installed).
pub(crate) fn tps(
    url: &str,
    clients: usize,
    seconds: u64,
    keys: i32,
) -> Result<Option<f64>, String> {
    let script = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("pgbench.sh");
    let output = std::process::Command::new("bash")
        .arg(&script)
        .args([clients.to_string(), seconds.to_string(), keys.to_string()])
        .env("PGBENCH_URL", url)
        .env("PGBENCH_NO_INIT", "1")
        .output()
        .map_err(|e| format!("{}: {e}", script.display()))?;
    let stdout = String::from_utf8_lossy(&output.stdout);
    if output.status.code() == Some(3) {
        return Ok(None);
    }
    if !output.status.success() {
        return Err(format!(
            "pgbench failed: {}{}",
            stdout,
            String::from_utf8_lossy(&output.stderr)
        ));
    }
    let tps = stdout
        .lines()
        .find(|l| l.starts_with("tps = ") && l.contains("without initial connection time"))
        .and_then(|l| l.trim_start_matches("tps = ").split_whitespace().next())
        .and_then(|v| v.parse().ok());
    tps.map(Some)
        .ok_or_else(|| format!("no tps in pgbench output:\n{stdout}"))
}
