//! Watching what a connection runs, with Diesel's instrumentation: the statements it
//! starts (how many, and their SQL) and the ones it prepares and keeps in its statement
//! cache.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, PoisonError};

use diesel::connection::{Connection, Instrumentation, InstrumentationEvent};

/// Counts the statements a connection starts, records their SQL, and records the SQL of
/// those it caches. One works for blocking and diesel-async connections alike.
#[derive(Debug, Clone, Default)]
pub struct StatementCounter {
    started: Arc<AtomicUsize>,
    sql: Arc<Mutex<Vec<String>>>,
    cached: Arc<Mutex<Vec<String>>>,
}

impl StatementCounter {
    /// Installs a fresh counter on a blocking connection.
    pub fn install<C: Connection>(conn: &mut C) -> Self {
        let counter = StatementCounter::default();
        conn.set_instrumentation(counter.clone());
        counter
    }

    /// Installs a fresh counter on an async connection.
    pub fn install_async<C: diesel_async::AsyncConnection>(conn: &mut C) -> Self {
        let counter = StatementCounter::default();
        conn.set_instrumentation(counter.clone());
        counter
    }

    /// Statements started since the last call (or since installation).
    pub fn take(&self) -> usize {
        self.started.swap(0, Ordering::SeqCst)
    }

    /// The statements started since the last call, in order, each as Diesel displays
    /// it: the SQL, then `-- binds: [...]` (see [`sql_only`]).
    pub fn take_sql(&self) -> Vec<String> {
        std::mem::take(&mut *self.sql.lock().unwrap_or_else(PoisonError::into_inner))
    }

    /// The SQL of the statements prepared into the connection's statement cache since
    /// the last call: a statement shows up once, when it is first prepared.
    pub fn take_cached(&self) -> Vec<String> {
        std::mem::take(&mut *self.cached.lock().unwrap_or_else(PoisonError::into_inner))
    }
}

impl Instrumentation for StatementCounter {
    fn on_connection_event(&mut self, event: InstrumentationEvent<'_>) {
        match event {
            InstrumentationEvent::StartQuery { query, .. } => {
                self.started.fetch_add(1, Ordering::SeqCst);
                self.sql
                    .lock()
                    .unwrap_or_else(PoisonError::into_inner)
                    .push(query.to_string());
            }
            InstrumentationEvent::CacheQuery { sql, .. } => self
                .cached
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .push(sql.to_owned()),
            _ => {}
        }
    }
}

/// The statements that are UPDATEs.
pub fn updates(statements: &[String]) -> Vec<&String> {
    statements
        .iter()
        .filter(|s| s.trim_start().to_ascii_uppercase().starts_with("UPDATE"))
        .collect()
}

/// The SQL text before its bind list (Diesel's `Display` appends `-- binds: [...]`).
pub fn sql_only(statement: &str) -> &str {
    statement.split("-- binds").next().unwrap_or(statement)
}
