//! `compile`: what `#[derive(Versioned)]` adds to a crate's build. Generates (in
//! [`generate`]) a workspace of two crates of the same models, Diesel's derives alone
//! and with `#[derive(Versioned)]` beside them, builds each `--repeat` times clean and
//! after an edit of one model, alternating the crates, and prints the ratios versioned /
//! plain; then counts the expanded code per model (`-Zunpretty=expanded` under
//! `RUSTC_BOOTSTRAP=1`). Cargo runs offline, with this workspace's `Cargo.lock`.

mod generate;

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use diesel_occ_bench::cli;
use diesel_occ_bench::stats::{median, per_round};

use self::generate::{CRATES, Shape};

/// `compile`'s options.
#[derive(Debug, clap::Args)]
pub(crate) struct Args {
    #[command(flatten)]
    shape: Shape,
    /// Builds of each kind per crate, medians printed
    #[arg(long, default_value = "5", value_parser = cli::count)]
    repeat: usize,
    /// Where to write the crates [default: bench-compile in the temp directory]
    #[arg(long)]
    dir: Option<PathBuf>,
    /// Only count the expanded code
    #[arg(long)]
    expansion_only: bool,
}

/// Runs the study.
pub(crate) fn main(options: &Args) -> Result<(), String> {
    if options.shape.columns < 3 {
        return Err("--columns: at least 3 (the key, a value, the token)".into());
    }
    run(options)
}

fn run(options: &Args) -> Result<(), String> {
    let dir = options
        .dir
        .clone()
        .unwrap_or_else(|| std::env::temp_dir().join("bench-compile"));
    let workspace = Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .ok_or("no workspace above the bench crate")?;
    generate::write(&dir, workspace, options.shape)?;
    let Shape { models, columns } = options.shape;
    println!(
        "-- compile time: {models} models x {columns} columns, crates in {}",
        dir.display()
    );
    if options.expansion_only {
        return expansion(options, &dir);
    }
    // The dependencies, once: every build below compiles the generated crate alone.
    for name in CRATES {
        cargo(&dir, &["build", "-p", name])?;
    }
    let mut clean: [Vec<f64>; 2] = Default::default();
    let mut incremental: [Vec<f64>; 2] = Default::default();
    for repetition in 0..options.repeat {
        // Alternate which crate goes first, so that neither always meets a warmer machine.
        let order: [usize; 2] = if repetition % 2 == 0 { [0, 1] } else { [1, 0] };
        for index in order {
            let name = CRATES[index];
            cargo(&dir, &["clean", "-p", name])?;
            let secs = timed(|| cargo(&dir, &["build", "-p", name]))?;
            clean[index].push(secs);
        }
        for index in order {
            let name = CRATES[index];
            generate::edit_one_model(&dir, name, repetition)?;
            let secs = timed(|| cargo(&dir, &["build", "-p", name]))?;
            incremental[index].push(secs);
        }
    }
    report("clean build", &clean, 1.15);
    report(
        "incremental rebuild after editing one model",
        &incremental,
        1.10,
    );
    // Last: `RUSTC_BOOTSTRAP` changes the dependencies' fingerprints, so the next build
    // compiles them again (the untimed build above does that on the next run).
    expansion(options, &dir)
}

/// Prints each crate's timings, the ratio of the medians against `target`, and the
/// ratios of each repetition's builds with their median and interval.
fn report(what: &str, seconds: &[Vec<f64>; 2], target: f64) {
    let listed = |v: &[f64]| {
        v.iter()
            .map(|s| format!("{s:.2}"))
            .collect::<Vec<_>>()
            .join(" ")
    };
    let (plain, versioned) = (median(seconds[0].clone()), median(seconds[1].clone()));
    println!(
        "{what}: {} {} s (median {plain:.2} s); {} {} s (median {versioned:.2} s)",
        CRATES[0],
        listed(&seconds[0]),
        CRATES[1],
        listed(&seconds[1])
    );
    let ratio = versioned / plain;
    println!(
        "{what}: versioned / plain = {ratio:.3} (median of {}; target <= {target}: {})",
        seconds[0].len(),
        if ratio <= target {
            "met"
        } else {
            "below target"
        }
    );
    let ratios: Vec<f64> = seconds[1]
        .iter()
        .zip(&seconds[0])
        .map(|(v, p)| v / p)
        .collect();
    println!(
        "{what}: per repetition, versioned / plain: {}",
        per_round(&ratios)
    );
}

/// Lines and tokens of each crate expanded by rustc, and the difference per model.
fn expansion(options: &Args, dir: &Path) -> Result<(), String> {
    let mut counts = Vec::new();
    for name in CRATES {
        let output = Command::new("cargo")
            .args(["rustc", "--offline", "-q", "-p", name, "--lib", "--"])
            .args(["-Zunpretty=expanded"])
            .env("RUSTC_BOOTSTRAP", "1")
            .current_dir(dir)
            .output()
            .map_err(|e| format!("cargo rustc: {e}"))?;
        if !output.status.success() {
            return Err(format!(
                "cargo rustc -Zunpretty=expanded -p {name} failed:\n{}",
                String::from_utf8_lossy(&output.stderr)
            ));
        }
        let text = String::from_utf8_lossy(&output.stdout);
        let lines = text.lines().filter(|l| !l.trim().is_empty()).count();
        let tokens = generate::tokens(&text);
        counts.push((lines, tokens));
    }
    let models = options.shape.models as f64;
    let [(plain_lines, plain_tokens), (lines, tokens)] = [counts[0], counts[1]];
    println!(
        "expanded code (rustc -Zunpretty=expanded, non-blank lines / tokens): {} {plain_lines} / {plain_tokens}, \
         {} {lines} / {tokens}",
        CRATES[0], CRATES[1]
    );
    println!(
        "expanded code per model: {} (its table! and Diesel's derives) {:.0} lines / {:.0} tokens; \
         #[derive(Versioned)] adds {:.0} lines / {:.0} tokens",
        CRATES[0],
        plain_lines as f64 / models,
        plain_tokens as f64 / models,
        (lines as f64 - plain_lines as f64) / models,
        (tokens as f64 - plain_tokens as f64) / models,
    );
    Ok(())
}

/// Seconds `f` took.
fn timed(f: impl FnOnce() -> Result<(), String>) -> Result<f64, String> {
    let started = Instant::now();
    f()?;
    Ok(Duration::as_secs_f64(&started.elapsed()))
}

/// Runs `cargo ARGS --offline -q` in `dir`; its error output on failure.
fn cargo(dir: &Path, args: &[&str]) -> Result<(), String> {
    let output = Command::new("cargo")
        .args(args)
        .args(["--offline", "-q"])
        .current_dir(dir)
        .output()
        .map_err(|e| format!("cargo: {e}"))?;
    if output.status.success() {
        Ok(())
    } else {
        Err(format!(
            "cargo {} failed:\n{}",
            args.join(" "),
            String::from_utf8_lossy(&output.stderr)
        ))
    }
}
