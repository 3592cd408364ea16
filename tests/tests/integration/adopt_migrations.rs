//! The guide's recipe for adding a token column to tables that hold rows, as the
//! `adopt_migrations` binary runs it in CI (`diesel_occ_tests::adopt`): `SchemaCheck`
//! refuses the legacy tables naming each fix, passes after the migrations, and a
//! backfilled row of every table saves.

use diesel_occ_tests::Backend;
use diesel_occ_tests::adopt;

/// Runs the recipe on `backend`; the lines must cover every table.
fn schema_check_passes_after_the_recipe(backend: Backend, tables: &[&str]) {
    let lines = match adopt::run(backend) {
        Ok(Some(lines)) => lines,
        Ok(None) => return,
        Err((lines, error)) => panic!("{}\n{backend}: FAILED: {error}", lines.join("\n")),
    };
    let all = lines.join("\n");
    for table in tables {
        let prefix = format!("{backend} {table}: 3 rows ");
        let passed = |line: &&String| line.ends_with("SchemaCheck ok, save_checked ok");
        let line = lines.iter().filter(passed).find(|l| l.starts_with(&prefix));
        assert!(line.is_some(), "no line for {table}:\n{all}");
    }
}

const TABLES: [&str; 5] = [
    "adopt_integer",
    "adopt_uuid",
    "adopt_stamp_seconds",
    "adopt_stamp_micros",
    "adopt_lines",
];

#[test]
fn postgres_schema_check_passes_after_the_recipe() {
    let mut tables = TABLES.to_vec();
    tables.push("adopt_xmin");
    schema_check_passes_after_the_recipe(Backend::Postgres, &tables);
}

#[cfg(feature = "mysql")]
#[test]
fn mysql_schema_check_passes_after_the_recipe() {
    schema_check_passes_after_the_recipe(Backend::Mysql, &TABLES);
}

#[test]
fn sqlite_schema_check_passes_after_the_recipe() {
    schema_check_passes_after_the_recipe(Backend::Sqlite, &TABLES);
}
