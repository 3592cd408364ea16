//! What the benchmarks' command lines share: durations, lists, and the options every
//! benchmark takes (workers, duration, rounds, output), as `clap` arguments.

use std::path::PathBuf;
use std::time::Duration;

/// `5s`, `1.5s`, `500ms` or `250us`.
pub fn duration(text: &str) -> Result<Duration, String> {
    let bad = || format!("bad duration {text:?} (try 5s or 500ms)");
    if let Some(us) = text.strip_suffix("us") {
        return us.parse().map(Duration::from_micros).map_err(|_| bad());
    }
    if let Some(ms) = text.strip_suffix("ms") {
        return ms.parse().map(Duration::from_millis).map_err(|_| bad());
    }
    let secs = text.strip_suffix('s').unwrap_or(text);
    secs.parse::<f64>()
        .ok()
        .filter(|s| s.is_finite() && *s > 0.0)
        .map(Duration::from_secs_f64)
        .ok_or_else(bad)
}

/// A count of at least one (`1_000` allowed).
pub fn count(text: &str) -> Result<usize, String> {
    match text.replace('_', "").parse() {
        Ok(0) => Err("must be at least 1".into()),
        Ok(n) => Ok(n),
        Err(e) => Err(format!("{text:?}: {e}")),
    }
}

/// A key count of at least one (`10_000` allowed).
pub fn keys(text: &str) -> Result<i32, String> {
    i32::try_from(count(text)?).map_err(|e| e.to_string())
}

/// The options every benchmark takes.
#[derive(Debug, Clone, clap::Args)]
pub struct Common {
    /// Concurrent workers (or HTTP clients)
    #[arg(long, default_value = "4", value_parser = count)]
    pub workers: usize,
    /// Per run, e.g. 5s or 500ms
    #[arg(long, default_value = "5s", value_parser = duration)]
    pub duration: Duration,
    /// Rounds [default: 3; abba: 21, then 10 more while the interval straddles the
    /// threshold, up to 41]
    #[arg(long = "rounds", value_name = "N", value_parser = count)]
    rounds_given: Option<usize>,
    /// Results directory [default: bench/results]
    #[arg(long = "out", value_name = "DIR")]
    out_given: Option<PathBuf>,
    /// A fraction of a second per run, 1 round, results in the temp directory unless
    /// --out is given
    #[arg(long)]
    pub smoke: bool,
    /// Rounds: set by [`Common::finish`].
    #[arg(skip)]
    pub rounds: usize,
    /// The results directory: set by [`Common::finish`].
    #[arg(skip)]
    pub out: PathBuf,
}

impl Common {
    /// Resolves `--out` and `--smoke` (200 ms runs, 1 round, results in the temp
    /// directory unless `--out` was given), `default_rounds` unless `--rounds` was
    /// given.
    pub fn finish(&mut self, default_rounds: usize) {
        self.rounds = self.rounds_given.unwrap_or(default_rounds);
        self.out = self.out_given.clone().unwrap_or_else(|| {
            // Smoke runs check that everything runs; they do not replace the results.
            if self.smoke {
                std::env::temp_dir().join("diesel-occ-bench-smoke")
            } else {
                PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("results")
            }
        });
        if self.smoke {
            self.duration = Duration::from_millis(200);
            self.rounds = 1;
        }
    }

    /// Writes `text` to the file `name` in the results directory; its path.
    pub fn save(&self, name: &str, text: &str) -> Result<PathBuf, String> {
        std::fs::create_dir_all(&self.out).map_err(|e| format!("{}: {e}", self.out.display()))?;
        let path = self.out.join(name);
        std::fs::write(&path, text).map_err(|e| format!("{}: {e}", path.display()))?;
        Ok(path)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations() {
        assert_eq!(duration("5s"), Ok(Duration::from_secs(5)));
        assert_eq!(duration("500ms"), Ok(Duration::from_millis(500)));
        assert_eq!(duration("250us"), Ok(Duration::from_micros(250)));
        assert_eq!(duration("1.5"), Ok(Duration::from_millis(1500)));
        assert!(duration("0s").is_err());
        assert_eq!(count("10_000"), Ok(10_000));
        assert!(count("0").is_err());
    }
}
