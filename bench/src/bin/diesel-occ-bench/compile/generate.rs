//! The generated workspace: two crates of the same models, one with
//! `#[derive(Versioned)]` beside Diesel's derives.

use std::fmt::Write as _;
use std::path::Path;

/// The crates, plain first.
pub(crate) const CRATES: [&str; 2] = ["gen-plain", "gen-versioned"];

/// How many models of how many columns.
#[derive(Debug, Clone, Copy, clap::Args)]
pub(crate) struct Shape {
    /// Models per crate
    #[arg(long, default_value = "50", value_parser = diesel_occ_bench::cli::count)]
    pub(crate) models: usize,
    /// Columns per model, the key and the token included (at least 3)
    #[arg(long, default_value = "8", value_parser = diesel_occ_bench::cli::count)]
    pub(crate) columns: usize,
}

/// Writes the workspace into `dir`: its manifest, `workspace`'s lock file (the same
/// versions, offline) and both crates.
pub(crate) fn write(dir: &Path, workspace: &Path, shape: Shape) -> Result<(), String> {
    let diesel_occ = workspace.join("diesel-occ");
    let manifest = format!(
        "[workspace]\nmembers = [\"{}\", \"{}\"]\nresolver = \"2\"\n\n\
         [workspace.dependencies]\n\
         diesel = {{ version = \"2\", default-features = false, features = [\"sqlite\"] }}\n\
         diesel-occ = {{ path = {:?}, default-features = false, features = [\"derive\", \"sqlite\"] }}\n",
        CRATES[0],
        CRATES[1],
        diesel_occ.display().to_string()
    );
    put(&dir.join("Cargo.toml"), &manifest)?;
    let lock = std::fs::read_to_string(workspace.join("Cargo.lock"))
        .map_err(|e| format!("{}: {e}", workspace.join("Cargo.lock").display()))?;
    put(&dir.join("Cargo.lock"), &lock)?;
    for (name, versioned) in [(CRATES[0], false), (CRATES[1], true)] {
        write_crate(&dir.join(name), name, shape, versioned)?;
    }
    Ok(())
}

fn put(path: &Path, text: &str) -> Result<(), String> {
    if let Some(parent) = path.parent() {
        std::fs::create_dir_all(parent).map_err(|e| format!("{}: {e}", parent.display()))?;
    }
    // Unchanged files are left alone, so that a second run builds incrementally.
    if std::fs::read_to_string(path).is_ok_and(|old| old == text) {
        return Ok(());
    }
    std::fs::write(path, text).map_err(|e| format!("{}: {e}", path.display()))
}

/// The SQL and Rust types of the data column `index` (they cycle).
fn column_type(index: usize) -> (&'static str, &'static str) {
    match index % 3 {
        0 => ("Text", "String"),
        1 => ("Integer", "i32"),
        _ => ("Nullable<Text>", "Option<String>"),
    }
}

fn write_crate(dir: &Path, name: &str, shape: Shape, versioned: bool) -> Result<(), String> {
    let manifest = format!(
        "[package]\nname = \"{name}\"\nversion = \"0.1.0\"\nedition = \"2021\"\npublish = false\n\n\
         [dependencies]\ndiesel.workspace = true\ndiesel-occ.workspace = true\n"
    );
    put(&dir.join("Cargo.toml"), &manifest)?;
    let data = shape.columns - 2;
    let mut schema = String::new();
    let mut lib = String::from("#![allow(dead_code)]\n\npub mod schema;\n");
    for model in 0..shape.models {
        let _ = write!(
            schema,
            "diesel::table! {{\n    t{model} (id) {{\n        id -> Integer,\n"
        );
        for column in 0..data {
            let _ = writeln!(schema, "        c{column} -> {},", column_type(column).0);
        }
        schema.push_str("        version -> Integer,\n    }\n}\n\n");
        let _ = writeln!(lib, "pub mod m{model};");
        put(
            &dir.join(format!("src/m{model}.rs")),
            &model_file(model, data, versioned),
        )?;
    }
    put(&dir.join("src/schema.rs"), &schema)?;
    put(&dir.join("src/lib.rs"), &lib)
}

fn model_file(model: usize, data: usize, versioned: bool) -> String {
    let (derive, token) = if versioned {
        (", diesel_occ::Versioned", "    #[occ(version)]\n")
    } else {
        ("", "")
    };
    let mut text = format!(
        "use diesel::prelude::*;\n\n\
         #[derive(Debug, Clone, Queryable, Selectable, Identifiable, Insertable{derive})]\n\
         #[diesel(table_name = crate::schema::t{model})]\n\
         pub struct Model{model} {{\n    pub id: i32,\n"
    );
    for column in 0..data {
        let _ = writeln!(text, "    pub c{column}: {},", column_type(column).1);
    }
    let _ = write!(text, "{token}    pub version: i32,\n}}\n");
    text
}

/// Edits model 0 of `name` (a comment that changes with `mark`): what a developer's
/// edit costs the incremental build.
pub(crate) fn edit_one_model(dir: &Path, name: &str, mark: usize) -> Result<(), String> {
    let path = dir.join(name).join("src/m0.rs");
    let text = std::fs::read_to_string(&path).map_err(|e| format!("{}: {e}", path.display()))?;
    let kept: String = text
        .lines()
        .filter(|l| !l.starts_with("// edit "))
        .map(|l| format!("{l}\n"))
        .collect();
    put(&path, &format!("{kept}// edit {mark}\n"))
}

/// Tokens of Rust source, roughly as rustc counts them: identifiers and numbers are
/// one each, string literals one each, every other non-blank character one.
pub(crate) fn tokens(text: &str) -> usize {
    let mut count = 0;
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        if c.is_whitespace() {
            continue;
        }
        count += 1;
        if c.is_alphanumeric() || c == '_' {
            while chars
                .next_if(|n| n.is_alphanumeric() || *n == '_')
                .is_some()
            {}
        } else if c == '"' {
            let mut escaped = false;
            for n in chars.by_ref() {
                match (escaped, n) {
                    (false, '\\') => escaped = true,
                    (false, '"') => break,
                    _ => escaped = false,
                }
            }
        }
    }
    count
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokens_count_words_literals_and_punctuation() {
        assert_eq!(tokens("pub fn f(x: i32) -> i32 { x }"), 14);
        assert_eq!(tokens("let s = \"a b \\\" c\";"), 5);
    }

    #[test]
    fn models_have_the_token_only_when_versioned() {
        let plain = model_file(3, 2, false);
        assert!(plain.contains("pub struct Model3") && !plain.contains("Versioned"));
        let versioned = model_file(3, 2, true);
        assert!(
            versioned.contains("diesel_occ::Versioned") && versioned.contains("#[occ(version)]")
        );
    }
}
