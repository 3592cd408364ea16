//! What one successful save costs in statements, counted by Diesel's instrumentation,
//! and whether diesel-occ runs the statements a careful hand-written version would.

use diesel_occ_bench::backend::Backend;
use diesel_occ_bench::for_backend;
use diesel_occ_bench::measures::Statements;
use diesel_occ_bench::stats::ratio;
use diesel_occ_bench::strategies::blocking;
use diesel_occ_bench::strategies::database::Database;
use diesel_occ_bench::strategies::sql::StockSql;
use diesel_occ_bench::strategy::Strategy;
use diesel_occ_bench::summary::Summary;

/// Runs 100 saves each way on a fresh table and records their statements.
pub(crate) fn measure(backend: Backend, url: &str) -> Result<Statements, String> {
    for_backend!(backend, D => {
        let mut conn = D::connect(url, Strategy::Atomic)?;
        conn.reset(100).map_err(|e| e.to_string())?;
        blocking::statements(&mut conn, 100)
    })
}

/// Prints what [`measure`] found.
pub(crate) fn report(summary: &mut Summary, measured: &Statements) {
    summary.say(format!(
        "statements per successful save: {} ({} statements for {} saves, Diesel instrumentation)",
        ratio(measured.statements as f64, measured.saves as f64),
        measured.statements,
        measured.saves
    ));
    summary.say(format!(
        "  statements prepared into the cache by {} saves: diesel-occ {} (its UPDATE, once, then reused), \
         hand-written {} (Diesel prepares its own UPDATE again for every execution), \
         hand-written prepared {} (its UPDATE as a CachedUpdate)",
        measured.saves, measured.cached, measured.hand_cached, measured.prepared_cached
    ));
    summary.say(format!("  diesel-occ read:    {}", measured.occ_read));
    summary.say(format!(
        "  hand-written read:  {}",
        measured.handwritten_read
    ));
    summary.say(format!("  diesel-occ update:  {}", measured.occ_update));
    summary.say(format!(
        "  hand-written update: {}",
        measured.handwritten_update
    ));
    summary.say(format!(
        "  hand-written prepared update: {}",
        measured.prepared_update
    ));
    // Diesel puts parentheses around a plain `.eq()` but not around diesel-occ's token
    // comparison: the same SQL, grouped differently.
    let ungrouped = |sql: &str| sql.replace(['(', ')'], "");
    summary.say(format!(
        "  same statements (ignoring grouping parentheses): {}",
        ungrouped(&measured.occ_read) == ungrouped(&measured.handwritten_read)
            && ungrouped(&measured.occ_update) == ungrouped(&measured.handwritten_update)
            && measured.prepared_update == measured.handwritten_update
    ));
}
