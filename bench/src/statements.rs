//! What one successful save costs in statements, counted by Diesel's instrumentation,
//! and whether diesel-occ runs the statements a careful hand-written version would.

use std::sync::{Arc, Mutex};

use diesel::connection::InstrumentationEvent;

use crate::backend::Backend;
#[cfg(feature = "mysql")]
use crate::mysql;
use crate::report::Summary;
use crate::strategy::Strategy;
use crate::{pg, sqlite};

/// What Diesel's instrumentation saw of successful saves.
#[derive(Debug, Clone, Default)]
pub(crate) struct Statements {
    pub(crate) saves: usize,
    /// Statements diesel-occ's saves added to the prepared statement cache.
    pub(crate) cached: usize,
    /// The same for the hand-written statements.
    pub(crate) hand_cached: usize,
    /// The same for `handwritten-prepared`.
    pub(crate) prepared_cached: usize,
    pub(crate) statements: usize,
    pub(crate) occ_read: String,
    pub(crate) occ_update: String,
    pub(crate) handwritten_read: String,
    pub(crate) handwritten_update: String,
    pub(crate) prepared_update: String,
}

/// A query's text as instrumentation prints it, without the bind values.
pub(crate) fn strip_binds(sql: &str) -> String {
    sql.split(" -- binds:")
        .next()
        .unwrap_or(sql)
        .trim()
        .to_owned()
}

/// The statements a connection ran, from Diesel's instrumentation: each query's text,
/// and `CACHE <sql>` for each statement prepared into the connection's cache.
#[derive(Debug, Clone)]
pub(crate) struct QueryLog(Arc<Mutex<Vec<String>>>);

impl QueryLog {
    /// Starts recording what `conn` runs.
    pub(crate) fn attach(conn: &mut impl diesel::Connection) -> QueryLog {
        let log: Arc<Mutex<Vec<String>>> = Arc::default();
        let sink = Arc::clone(&log);
        conn.set_instrumentation(move |event: InstrumentationEvent<'_>| match event {
            InstrumentationEvent::StartQuery { query, .. } => {
                sink.lock().unwrap().push(query.to_string());
            }
            InstrumentationEvent::CacheQuery { sql, .. } => {
                sink.lock().unwrap().push(format!("CACHE {sql}"));
            }
            _ => {}
        });
        QueryLog(log)
    }

    /// What was recorded since the last call.
    pub(crate) fn take(&self) -> Vec<String> {
        std::mem::take(&mut *self.0.lock().unwrap())
    }

    /// Whether a recorded line is a statement prepared into the cache.
    pub(crate) fn cached(line: &str) -> bool {
        line.starts_with("CACHE ")
    }
}

/// Runs 100 saves each way on a fresh table and records their statements.
pub(crate) fn measure(backend: Backend, url: &str) -> Result<Statements, String> {
    macro_rules! measure {
        ($m:ident) => {{
            let mut conn = $m::connect(url, Strategy::Atomic)?;
            $m::reset(&mut conn, 100).map_err(|e| e.to_string())?;
            $m::statements(&mut conn, 100)
        }};
    }
    match backend {
        Backend::Postgres => measure!(pg),
        Backend::Sqlite => measure!(sqlite),
        #[cfg(feature = "mysql")]
        Backend::Mysql => measure!(mysql),
        #[cfg(not(feature = "mysql"))]
        Backend::Mysql => Err("MySQL needs `--features mysql`".into()),
    }
}

/// Prints what [`measure`] found.
pub(crate) fn report(summary: &mut Summary, measured: &Statements) {
    summary.say(format!(
        "statements per successful save: {} ({} statements for {} saves, Diesel instrumentation)",
        crate::rounds::ratio(measured.statements as f64, measured.saves as f64),
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
