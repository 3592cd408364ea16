//! What the benchmarks' command lines share: reading values with `lexopt`, durations
//! and lists, and the options every benchmark takes (workers, duration, rounds, output).

use std::path::PathBuf;
use std::str::FromStr;
use std::time::Duration;

use crate::harness::Limit;

/// The next value of `flag` as a string.
pub fn value(parser: &mut lexopt::Parser, flag: &str) -> Result<String, String> {
    parser
        .value()
        .map_err(|e| format!("{flag}: {e}"))?
        .into_string()
        .map_err(|v| format!("{flag}: not UTF-8: {v:?}"))
}

/// The next value of `flag`, parsed.
pub fn parsed<T: FromStr>(parser: &mut lexopt::Parser, flag: &str) -> Result<T, String>
where
    T::Err: std::fmt::Display,
{
    number(flag, &value(parser, flag)?)
}

/// The next value of `flag`, a comma-separated list, each item parsed.
pub fn parsed_list<T: FromStr>(parser: &mut lexopt::Parser, flag: &str) -> Result<Vec<T>, String>
where
    T::Err: std::fmt::Display,
{
    list(&value(parser, flag)?)
        .iter()
        .map(|item| number(flag, &item.replace('_', "")))
        .collect()
}

/// A comma-separated list, each item trimmed.
pub fn list(value: &str) -> Vec<String> {
    value.split(',').map(|s| s.trim().to_owned()).collect()
}

/// `value` parsed, the error naming `flag`.
pub fn number<T: FromStr>(flag: &str, value: &str) -> Result<T, String>
where
    T::Err: std::fmt::Display,
{
    value.parse().map_err(|e| format!("{flag}: {e}"))
}

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

/// The name of a long option (`--name`), or an error for anything else.
pub fn flag(arg: lexopt::Arg<'_>) -> Result<String, String> {
    match arg {
        lexopt::Arg::Long(name) => Ok(format!("--{name}")),
        lexopt::Arg::Short(c) => Ok(format!("-{c}")),
        lexopt::Arg::Value(value) => Err(format!("unexpected argument {value:?}")),
    }
}

/// The options every benchmark takes.
#[derive(Debug, Clone)]
pub struct Common {
    /// `--workers`: concurrent workers (or HTTP clients).
    pub workers: usize,
    /// `--duration` / `--ops`: how long a run lasts.
    pub limit: Limit,
    /// `--rounds`: paired rounds.
    pub rounds: usize,
    /// `--out`: the results directory.
    pub out: PathBuf,
    /// `--smoke`: a fraction of a second per run, one round, results in the temp dir.
    pub smoke: bool,
    out_given: bool,
}

impl Default for Common {
    fn default() -> Self {
        Common {
            workers: 4,
            limit: Limit::Time(Duration::from_secs(5)),
            rounds: 3,
            out: PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("results"),
            smoke: false,
            out_given: false,
        }
    }
}

/// The usage lines of [`Common`]'s options.
pub const COMMON_USAGE: &str = "  --workers N           concurrent workers (default 4)
  --duration D          per run, e.g. 5s or 500ms (default 5s)
  --ops N               per run, total operations instead of a duration
  --rounds N            paired rounds (default 3)
  --out DIR             results directory (default bench/results)
  --smoke               a fraction of a second per run, 1 round, results in the temp
                        directory unless --out is given";

impl Common {
    /// Applies `flag` if it is one of these options; `false` when it is not.
    pub fn accept(&mut self, flag: &str, parser: &mut lexopt::Parser) -> Result<bool, String> {
        match flag {
            "--workers" => self.workers = parsed(parser, flag)?,
            "--duration" => self.limit = Limit::Time(duration(&value(parser, flag)?)?),
            "--ops" => self.limit = Limit::Ops(parsed(parser, flag)?),
            "--rounds" => self.rounds = parsed(parser, flag)?,
            "--out" => {
                self.out = PathBuf::from(value(parser, flag)?);
                self.out_given = true;
            }
            "--smoke" => self.smoke = true,
            _ => return Ok(false),
        }
        Ok(true)
    }

    /// Applies `--smoke` (results under `smoke_dir` in the temp directory unless `--out`
    /// was given) and checks the numbers.
    pub fn finish(&mut self, smoke_dir: &str) -> Result<(), String> {
        if self.smoke {
            // Smoke runs check that everything runs; they do not replace the results.
            if !self.out_given {
                self.out = std::env::temp_dir().join(smoke_dir);
            }
            self.limit = Limit::Time(Duration::from_millis(200));
            self.rounds = 1;
        }
        if self.workers == 0 || self.rounds == 0 {
            return Err("--workers and --rounds must be at least 1".into());
        }
        Ok(())
    }
}

/// Exits with `message`: on stdout with status 0 for `--help`, else on stderr with 2.
pub fn exit_with_usage(message: &str, help: bool) -> ! {
    if help {
        println!("{message}");
        std::process::exit(0);
    }
    eprintln!("{message}");
    std::process::exit(2);
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
    }
}
