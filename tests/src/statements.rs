//! Watching what a connection runs, with Diesel's instrumentation: the statements it
//! starts and the ones it prepares and keeps in its statement cache.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, PoisonError};

use diesel::connection::{Connection, Instrumentation, InstrumentationEvent};

/// Counts the statements a connection starts and records the SQL of those it caches.
/// One works for blocking and diesel-async connections alike.
#[derive(Debug, Clone, Default)]
pub struct StatementCounter {
    started: Arc<AtomicUsize>,
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

    /// The SQL of the statements prepared into the connection's statement cache since
    /// the last call: a statement shows up once, when it is first prepared.
    pub fn take_cached(&self) -> Vec<String> {
        std::mem::take(&mut *self.cached.lock().unwrap_or_else(PoisonError::into_inner))
    }
}

impl Instrumentation for StatementCounter {
    fn on_connection_event(&mut self, event: InstrumentationEvent<'_>) {
        match event {
            InstrumentationEvent::StartQuery { .. } => {
                self.started.fetch_add(1, Ordering::SeqCst);
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
