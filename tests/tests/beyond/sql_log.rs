//! The SQL text of every statement a connection runs, through Diesel's instrumentation:
//! to prove which columns a statement writes and how many statements an operation runs.

use std::sync::{Arc, Mutex};

use diesel::connection::{Connection, InstrumentationEvent};

/// Records the statements started on one connection.
#[derive(Debug, Clone, Default)]
pub(crate) struct SqlLog(Arc<Mutex<Vec<String>>>);

impl SqlLog {
    /// Installs a fresh log on `conn`.
    pub(crate) fn install<C: Connection>(conn: &mut C) -> Self {
        let log = SqlLog::default();
        let seen = Arc::clone(&log.0);
        conn.set_instrumentation(move |event: InstrumentationEvent<'_>| {
            if let InstrumentationEvent::StartQuery { query, .. } = event {
                seen.lock().unwrap().push(query.to_string());
            }
        });
        log
    }

    /// Installs a fresh log on an async connection.
    pub(crate) fn install_async<C: diesel_async::AsyncConnection>(conn: &mut C) -> Self {
        let log = SqlLog::default();
        let seen = Arc::clone(&log.0);
        conn.set_instrumentation(move |event: InstrumentationEvent<'_>| {
            if let InstrumentationEvent::StartQuery { query, .. } = event {
                seen.lock().unwrap().push(query.to_string());
            }
        });
        log
    }

    /// The statements since the last call, in order.
    pub(crate) fn take(&self) -> Vec<String> {
        std::mem::take(&mut *self.0.lock().unwrap())
    }
}

/// The statements that are UPDATEs.
pub(crate) fn updates(statements: &[String]) -> Vec<&String> {
    statements
        .iter()
        .filter(|s| s.trim_start().to_ascii_uppercase().starts_with("UPDATE"))
        .collect()
}

/// The SQL text before its bind list (Diesel's Display appends `-- binds: [...]`).
pub(crate) fn sql_only(statement: &str) -> &str {
    statement.split("-- binds").next().unwrap_or(statement)
}
