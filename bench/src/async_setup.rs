//! How the asynchronous strategy sets itself up ([`Setup`]): a value each async run is
//! given, [`Setup::RECOMMENDED`] unless the paired rounds' diagnosis asks for another.

/// How the asynchronous strategy sets itself up: the runtime, the pool's recycle check
/// and where each attempt's connection comes from. `occ-async` runs with
/// [`Setup::RECOMMENDED`]; `OCC_BENCH_ASYNC_SETUPS` (a `;`-separated list of
/// [`Setup::parse`] specs) adds other setups to the paired async rounds, to find where
/// the time goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Setup {
    /// The Tokio runtime.
    pub runtime: Runtime,
    /// The pool's recycle check.
    pub recycle: Recycle,
    /// Where each attempt's connection comes from.
    pub source: Source,
    /// On a wrapped blocking connection (SQLite), each attempt in one blocking task
    /// (`retry_in_blocking_task`) rather than a blocking task per statement.
    pub one_task: bool,
    /// deadpool hands out the most recently returned connection first.
    pub lifo: bool,
    /// SQLite: the wrapper runs its blocking calls in place (diesel-occ's
    /// `BlockInPlace`) rather than on Tokio's blocking pool (diesel-async's default).
    pub in_place: bool,
    /// Plain diesel-async written by hand instead of diesel-occ's helper (diagnosis).
    pub handwritten: bool,
}

/// The Tokio runtime the tasks run on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Runtime {
    /// `new_multi_thread` with this many worker threads (0: one per core, at most one
    /// per task).
    Multi(usize),
    /// `new_current_thread`: every task and every driver task on one thread.
    Current,
}

/// The deadpool recycle check run at every checkout.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Recycle {
    /// diesel-async's default: a `SELECT 1` round trip per checkout.
    Verified,
    /// Only the connection's own state (an open transaction, a broken one).
    Fast,
    /// What diesel-occ's documentation recommends: `Fast`, and on MySQL (where
    /// nothing else sees a connection the server closed) a test query for a
    /// connection idle for 500 ms (`asynchronous::verify_when_idle`).
    Recommended,
}

/// Where an attempt's connection comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Source {
    /// A deadpool checkout per attempt.
    Pool,
    /// The task's own connection, as each blocking worker thread has.
    Held,
}

impl Setup {
    /// What the benchmark runs as `occ-async`, and what BENCHMARKS.md recommends.
    pub const RECOMMENDED: Setup = Setup {
        runtime: Runtime::Multi(0),
        recycle: Recycle::Recommended,
        source: Source::Pool,
        one_task: true,
        lifo: true,
        in_place: true,
        handwritten: false,
    };

    /// [`Setup::RECOMMENDED`] with the same statements written by hand on diesel-async
    /// (`handwritten-async`): the async baseline that isolates the library.
    pub const HANDWRITTEN: Setup = Setup {
        handwritten: true,
        ..Setup::RECOMMENDED
    };

    /// The diagnosis setups from `OCC_BENCH_ASYNC_SETUPS`, e.g.
    /// `rt=current,recycle=fast;rt=multi2,source=held`.
    pub fn from_env() -> Result<Vec<Setup>, String> {
        let Ok(text) = std::env::var("OCC_BENCH_ASYNC_SETUPS") else {
            return Ok(Vec::new());
        };
        text.split(';')
            .filter(|s| !s.trim().is_empty())
            .map(Setup::parse)
            .collect()
    }

    /// `rt=multi|multiN|current`, `recycle=verified|fast|recommended`,
    /// `queue=fifo|lifo`, `source=pool|held`, `hops=closure|attempt` (SQLite: the async
    /// closure's statements, or one blocking call per attempt), `wrapper=hop|in-place`
    /// (SQLite: each blocking call on Tokio's blocking pool, or in place), comma
    /// separated, `code=occ|handwritten` (diesel-occ's helper, or the same statements
    /// written by hand with diesel-async), each defaulting to [`Setup::RECOMMENDED`]'s.
    pub fn parse(spec: &str) -> Result<Setup, String> {
        let mut setup = Setup::RECOMMENDED;
        for part in spec.split(',').map(str::trim).filter(|p| !p.is_empty()) {
            let bad = || format!("bad async setup {part:?} in {spec:?}");
            let (key, value) = part.split_once('=').ok_or_else(bad)?;
            match (key, value) {
                ("rt", "current") => setup.runtime = Runtime::Current,
                ("rt", multi) if multi.starts_with("multi") => {
                    let threads = &multi["multi".len()..];
                    setup.runtime = Runtime::Multi(if threads.is_empty() {
                        0
                    } else {
                        threads.parse().map_err(|_| bad())?
                    });
                }
                ("recycle", "verified") => setup.recycle = Recycle::Verified,
                ("recycle", "fast") => setup.recycle = Recycle::Fast,
                ("recycle", "recommended") => setup.recycle = Recycle::Recommended,
                ("source", "pool") => setup.source = Source::Pool,
                ("source", "held") => setup.source = Source::Held,
                ("hops", "closure" | "statement") => setup.one_task = false,
                ("hops", "attempt") => setup.one_task = true,
                ("queue", "lifo") => setup.lifo = true,
                ("wrapper", "hop") => setup.in_place = false,
                ("wrapper", "in-place") => setup.in_place = true,
                ("queue", "fifo") => setup.lifo = false,
                ("code", "occ") => setup.handwritten = false,
                ("code", "handwritten") => setup.handwritten = true,
                _ => return Err(bad()),
            }
        }
        Ok(setup)
    }

    /// The name the rounds print: `occ-async` for the recommended setup.
    pub fn label(self) -> String {
        if self == Setup::RECOMMENDED {
            return "occ-async".into();
        }
        if self == Setup::HANDWRITTEN {
            return "handwritten-async".into();
        }
        let runtime = match self.runtime {
            Runtime::Multi(0) => "multi".to_owned(),
            Runtime::Multi(n) => format!("multi{n}"),
            Runtime::Current => "current".to_owned(),
        };
        let recycle = match self.recycle {
            Recycle::Verified => "verified",
            Recycle::Fast => "fast",
            Recycle::Recommended => "recycle-recommended",
        };
        let source = match self.source {
            Source::Pool => "pool",
            Source::Held => "held",
        };
        let hops = if self.one_task { "" } else { ",closure" };
        let wrapper = if self.in_place { "" } else { ",wrapper-hop" };
        let queue = if self.lifo { ",lifo" } else { ",fifo" };
        let code = if self.handwritten { ",handwritten" } else { "" };
        format!("async[{runtime},{recycle},{source}{queue}{hops}{wrapper}{code}]")
    }

    /// Whether the pool skips the test query at checkout.
    pub fn fast_recycle(self) -> bool {
        match self.recycle {
            Recycle::Verified => false,
            Recycle::Fast => true,
            Recycle::Recommended => true,
        }
    }

    /// How long a connection may sit idle before a checkout tests it, if ever.
    pub fn idle_check(self, url: &str) -> Option<std::time::Duration> {
        (self.recycle == Recycle::Recommended && url.starts_with("mysql:"))
            .then_some(std::time::Duration::from_millis(500))
    }

    /// Builds the runtime for `workers` tasks.
    pub fn runtime(self, workers: usize) -> Result<tokio::runtime::Runtime, String> {
        let mut builder = match self.runtime {
            Runtime::Current => tokio::runtime::Builder::new_current_thread(),
            Runtime::Multi(threads) => {
                let threads = if threads == 0 {
                    let cores = std::thread::available_parallelism().map_or(2, usize::from);
                    cores.min(workers).max(1)
                } else {
                    threads
                };
                let mut builder = tokio::runtime::Builder::new_multi_thread();
                builder.worker_threads(threads);
                builder
            }
        };
        builder.enable_all().build().map_err(|e| e.to_string())
    }
}
