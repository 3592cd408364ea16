//! The apps' command line: `--database-url URL` (or `DATABASE_URL`), else a SQLite file.

use crate::target::Target;

/// Options every app understands, plus the ones it declares.
#[derive(Debug)]
pub struct Args {
    /// Where the data lives.
    pub target: Target,
    /// `--name value` options other than `--database-url`, in order.
    pub options: Vec<(String, String)>,
}

impl Args {
    /// Parses `std::env::args()`; `app` names the default SQLite file and `usage`
    /// describes the app's own options for `--help`.
    ///
    /// Exits with a message on `--help` or on a malformed command line.
    pub fn from_env(app: &str, usage: &str) -> Args {
        match Args::parse(
            app,
            std::env::args().skip(1),
            std::env::var("DATABASE_URL").ok(),
        ) {
            Ok(args) => args,
            Err(message) => {
                let help = format!(
                    "usage: {app} [--database-url URL]{usage}\n\n\
                     URL: postgres://..., mysql://... (feature `mysql`) or a SQLite file path;\n\
                     default: $DATABASE_URL, else {}",
                    Target::default_sqlite(app)
                );
                if message.is_empty() {
                    println!("{help}");
                    std::process::exit(0);
                }
                eprintln!("{app}: {message}\n{help}");
                std::process::exit(2);
            }
        }
    }

    /// Parses `args`; `Err("")` asks for the help text.
    pub fn parse(
        app: &str,
        args: impl IntoIterator<Item = String>,
        env_url: Option<String>,
    ) -> Result<Args, String> {
        let mut url = env_url.filter(|u| !u.trim().is_empty());
        let mut options = Vec::new();
        let mut parser = lexopt::Parser::from_args(args);
        while let Some(arg) = parser.next().map_err(|e| e.to_string())? {
            let name = match arg {
                lexopt::Arg::Long("help") | lexopt::Arg::Short('h') => return Err(String::new()),
                lexopt::Arg::Long(name) => name.to_owned(),
                lexopt::Arg::Short(c) => return Err(format!("unexpected argument `-{c}`")),
                lexopt::Arg::Value(value) => {
                    return Err(format!("unexpected argument `{}`", value.to_string_lossy()));
                }
            };
            let value = parser
                .value()
                .map_err(|_| format!("`--{name}` needs a value"))?
                .into_string()
                .map_err(|_| format!("`--{name}`: not UTF-8"))?;
            if name == "database-url" {
                url = Some(value);
            } else {
                options.push((name, value));
            }
        }
        let target = url.map_or_else(|| Target::default_sqlite(app), |u| Target::parse(&u));
        Ok(Args { target, options })
    }

    /// The value of `--name`, parsed, or `default`; exits with a message if malformed.
    pub fn get<T: std::str::FromStr>(&self, name: &str, default: T) -> T {
        match self.options.iter().rev().find(|(n, _)| n == name) {
            None => default,
            Some((_, value)) => value.parse().unwrap_or_else(|_| {
                eprintln!("--{name}: cannot read `{value}`");
                std::process::exit(2);
            }),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(args: &[&str], env: Option<&str>) -> Result<Args, String> {
        Args::parse(
            "t",
            args.iter().map(|s| s.to_string()),
            env.map(str::to_owned),
        )
    }

    #[test]
    fn the_flag_beats_the_environment() {
        let args = parse(
            &["--database-url", "postgres://a@b/c"],
            Some("mysql://x@y/z"),
        )
        .unwrap();
        assert_eq!(args.target, Target::parse("postgres://a@b/c"));
        let args = parse(&["--buyers=3"], Some("mysql://x@y/z")).unwrap();
        assert_eq!(args.target, Target::parse("mysql://x@y/z"));
        assert_eq!(args.get("buyers", 0_usize), 3);
        assert_eq!(
            parse(&[], None).unwrap().target,
            Target::default_sqlite("t")
        );
    }

    #[test]
    fn malformed_command_lines_are_errors() {
        assert!(parse(&["--buyers"], None).is_err());
        assert!(parse(&["stray"], None).is_err());
        assert_eq!(parse(&["--help"], None).unwrap_err(), "");
    }
}
