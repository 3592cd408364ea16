//! What the measurements of statements record: the statements of successful saves,
//! from Diesel's instrumentation.

use std::sync::{Arc, Mutex, PoisonError};

use diesel::connection::{Instrumentation, InstrumentationEvent};

/// A query's text as instrumentation prints it, without the bind values.
pub fn strip_binds(sql: &str) -> String {
    sql.split(" -- binds:")
        .next()
        .unwrap_or(sql)
        .trim()
        .to_owned()
}

/// The statements a connection ran, from Diesel's instrumentation: each query's text,
/// and `CACHE <sql>` for each statement prepared into the connection's cache. Clones
/// share the record.
#[derive(Debug, Clone, Default)]
pub struct QueryLog(Arc<Mutex<Vec<String>>>);

impl QueryLog {
    /// Starts recording what `conn` runs.
    pub fn attach(conn: &mut impl diesel::Connection) -> QueryLog {
        let log = QueryLog::default();
        conn.set_instrumentation(log.clone());
        log
    }

    /// What was recorded since the last call.
    pub fn take(&self) -> Vec<String> {
        std::mem::take(&mut *self.0.lock().unwrap_or_else(PoisonError::into_inner))
    }

    /// Whether a recorded line is a statement prepared into the cache.
    pub fn cached(line: &str) -> bool {
        line.starts_with("CACHE ")
    }
}

impl Instrumentation for QueryLog {
    fn on_connection_event(&mut self, event: InstrumentationEvent<'_>) {
        let line = match event {
            InstrumentationEvent::StartQuery { query, .. } => query.to_string(),
            InstrumentationEvent::CacheQuery { sql, .. } => format!("CACHE {sql}"),
            _ => return,
        };
        self.0
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .push(line);
    }
}
