//! The command line: options, their defaults and the usage text.

use std::time::Duration;

use diesel_occ_tests::Backend;

/// Command-line options.
#[derive(Debug, Clone)]
pub(crate) struct Args {
    pub(crate) backends: Vec<Backend>,
    pub(crate) duration: Duration,
    pub(crate) workers: usize,
    pub(crate) fault_every: Duration,
    pub(crate) seed: u64,
    pub(crate) sabotage: bool,
    /// A backend that acknowledged fewer writes proves too little.
    pub(crate) min_acknowledged: u64,
    /// A backend that injected fewer faults proves too little.
    pub(crate) min_faults: u64,
}

fn parse_duration(text: &str) -> Result<Duration, String> {
    let bad = || format!("bad duration {text:?} (examples: 500ms, 30s, 2m)");
    let (number, unit) = text
        .find(|c: char| !c.is_ascii_digit())
        .map_or((text, "s"), |at| text.split_at(at));
    let n: u64 = number.parse().map_err(|_| bad())?;
    match unit {
        "ms" => Ok(Duration::from_millis(n)),
        "s" => Ok(Duration::from_secs(n)),
        "m" => Ok(Duration::from_secs(n * 60)),
        _ => Err(bad()),
    }
}

pub(crate) fn parse_args() -> Result<Args, String> {
    let mut args = Args {
        backends: Backend::ALL.to_vec(),
        duration: Duration::from_secs(30),
        workers: 8,
        fault_every: Duration::from_millis(200),
        seed: 0x5eed_0cc0,
        sabotage: false,
        min_acknowledged: MIN_ACKNOWLEDGED,
        min_faults: 1,
    };
    let mut it = std::env::args().skip(1);
    while let Some(flag) = it.next() {
        let (name, inline) = match flag.split_once('=') {
            Some((n, v)) => (n.to_owned(), Some(v.to_owned())),
            None => (flag.clone(), None),
        };
        let mut value = || {
            inline
                .clone()
                .or_else(|| it.next())
                .ok_or(format!("{name} needs a value"))
        };
        match name.as_str() {
            "--backend" => {
                args.backends = parse_backends(&value()?)?;
            }
            "--duration" => args.duration = parse_duration(&value()?)?,
            "--workers" => {
                args.workers = value()?.parse().map_err(|_| "bad --workers")?;
                if args.workers == 0 {
                    return Err("--workers must be at least 1".into());
                }
            }
            "--fault-every" => args.fault_every = parse_duration(&value()?)?,
            "--seed" => args.seed = value()?.parse().map_err(|_| "bad --seed")?,
            "--sabotage" => args.sabotage = true,
            "--min-acknowledged" => {
                args.min_acknowledged = value()?.parse().map_err(|_| "bad --min-acknowledged")?
            }
            "--min-faults" => args.min_faults = value()?.parse().map_err(|_| "bad --min-faults")?,
            "--help" | "-h" => return Err(String::new()),
            other => return Err(format!("unknown option {other:?}")),
        }
    }
    Ok(args)
}

/// The default `--min-acknowledged`: a debug build's 3-second run on a loaded 2-core
/// machine acknowledges several times this many writes on every backend.
pub(crate) const MIN_ACKNOWLEDGED: u64 = 100;

/// `all`, or a comma-separated list of backend names.
fn parse_backends(list: &str) -> Result<Vec<Backend>, String> {
    if list == "all" {
        return Ok(Backend::ALL.to_vec());
    }
    list.split(',')
        .map(|name| {
            Backend::ALL
                .into_iter()
                .find(|b| b.name() == name.trim())
                .ok_or(format!("unknown backend {name:?}"))
        })
        .collect()
}

/// The usage line printed after a bad option or `--help`.
pub(crate) fn usage() -> String {
    format!(
        "usage: soak [--backend all|postgres,mysql,sqlite] [--duration 30s] \
         [--workers 8] [--fault-every 200ms] [--seed N] [--sabotage] \
         [--min-acknowledged {MIN_ACKNOWLEDGED}] [--min-faults 1]"
    )
}
