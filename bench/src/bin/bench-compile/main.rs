//! Compile time: what `#[derive(Versioned)]` adds to a crate's build.
//!
//! Writes a Cargo workspace in a temp directory with two generated crates of
//! `--models` models of `--columns` columns each (`table!` and one file per model):
//! `gen-plain` with Diesel's derives only (`Queryable`, `Selectable`, `Identifiable`,
//! `Insertable`) and `gen-versioned` with `#[derive(Versioned)]` beside them, both
//! depending on this workspace's diesel-occ. It builds the dependencies once, then
//! `--repeat` times each crate clean (`cargo clean -p`, then `cargo build`) and after
//! an edit of one model file (incremental), alternating the crates, and prints the
//! medians and the ratios versioned / plain (targets: clean <= 1.15, incremental
//! <= 1.10). It also counts the expanded code per model: the crate expanded by rustc
//! (`-Zunpretty=expanded`, allowed on stable with `RUSTC_BOOTSTRAP=1`: no `cargo
//! expand` needed), lines and tokens of `gen-versioned` less `gen-plain`, per model.
//!
//! ```text
//! cargo run --release -p diesel-occ-bench --bin bench-compile -- --models 50 --columns 8 --repeat 5
//! ```
//!
//! Cargo runs offline, with this workspace's `Cargo.lock`: nothing is fetched.

mod generate;

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use diesel_occ_bench::cli;
use diesel_occ_bench::stats::median;

use crate::generate::{CRATES, Shape};

const USAGE: &str = "usage: bench-compile [options]
  --models N     models per crate (default 50)
  --columns N    columns per model, the key and the token included (default 8, at least 3)
  --repeat N     builds of each kind per crate, medians printed (default 5)
  --dir DIR      where to write the crates (default: bench-compile in the temp directory)
  --expansion-only   only count the expanded code";

#[derive(Debug)]
struct Options {
    shape: Shape,
    repeat: usize,
    dir: PathBuf,
    expansion_only: bool,
}

fn main() {
    let options = match parse() {
        Ok(options) => options,
        Err((message, help)) => cli::exit_with_usage(&message, help),
    };
    if let Err(message) = run(&options) {
        eprintln!("bench-compile: {message}");
        std::process::exit(1);
    }
}

fn parse() -> Result<Options, (String, bool)> {
    let mut options = Options {
        shape: Shape {
            models: 50,
            columns: 8,
        },
        repeat: 5,
        dir: std::env::temp_dir().join("bench-compile"),
        expansion_only: false,
    };
    let mut parser = lexopt::Parser::from_env();
    let fail = |message: String| (format!("{message}\n{USAGE}"), false);
    while let Some(arg) = parser.next().map_err(|e| fail(e.to_string()))? {
        let flag = cli::flag(arg).map_err(fail)?;
        match flag.as_str() {
            "-h" | "--help" => return Err((USAGE.into(), true)),
            "--models" => options.shape.models = cli::parsed(&mut parser, &flag).map_err(fail)?,
            "--columns" => options.shape.columns = cli::parsed(&mut parser, &flag).map_err(fail)?,
            "--repeat" => options.repeat = cli::parsed(&mut parser, &flag).map_err(fail)?,
            "--dir" => options.dir = PathBuf::from(cli::value(&mut parser, &flag).map_err(fail)?),
            "--expansion-only" => options.expansion_only = true,
            _ => return Err(fail(format!("unknown option {flag}"))),
        }
    }
    if options.shape.models == 0 || options.repeat == 0 || options.shape.columns < 3 {
        return Err(fail(
            "--models and --repeat must be at least 1, --columns at least 3".into(),
        ));
    }
    Ok(options)
}

fn run(options: &Options) -> Result<(), String> {
    let workspace = Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .ok_or("no workspace above the bench crate")?;
    generate::write(&options.dir, workspace, options.shape)?;
    let Shape { models, columns } = options.shape;
    println!(
        "-- compile time: {models} models x {columns} columns, crates in {}",
        options.dir.display()
    );
    if options.expansion_only {
        return expansion(options);
    }
    // The dependencies, once: every build below compiles the generated crate alone.
    for name in CRATES {
        cargo(&options.dir, &["build", "-p", name])?;
    }
    let mut clean: [Vec<f64>; 2] = Default::default();
    let mut incremental: [Vec<f64>; 2] = Default::default();
    for repetition in 0..options.repeat {
        // Alternate which crate goes first, so that neither always meets a warmer machine.
        let order: [usize; 2] = if repetition % 2 == 0 { [0, 1] } else { [1, 0] };
        for index in order {
            let name = CRATES[index];
            cargo(&options.dir, &["clean", "-p", name])?;
            let secs = timed(|| cargo(&options.dir, &["build", "-p", name]))?;
            clean[index].push(secs);
        }
        for index in order {
            let name = CRATES[index];
            generate::edit_one_model(&options.dir, name, repetition)?;
            let secs = timed(|| cargo(&options.dir, &["build", "-p", name]))?;
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
    expansion(options)
}

/// Prints each crate's timings, the medians and the ratio against `target`.
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
}

/// Lines and tokens of each crate expanded by rustc, and the difference per model.
fn expansion(options: &Options) -> Result<(), String> {
    let mut counts = Vec::new();
    for name in CRATES {
        let output = Command::new("cargo")
            .args(["rustc", "--offline", "-q", "-p", name, "--lib", "--"])
            .args(["-Zunpretty=expanded"])
            .env("RUSTC_BOOTSTRAP", "1")
            .current_dir(&options.dir)
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
