//! Counting the statements a connection runs, with Diesel's instrumentation.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use diesel::connection::{Connection, InstrumentationEvent};

/// Counts `StartQuery` events on one connection.
#[derive(Debug, Clone, Default)]
pub struct StatementCounter(Arc<AtomicUsize>);

impl StatementCounter {
    /// Installs a fresh counter on `conn`.
    pub fn install<C: Connection>(conn: &mut C) -> Self {
        let counter = StatementCounter::default();
        let seen = Arc::clone(&counter.0);
        conn.set_instrumentation(move |event: InstrumentationEvent<'_>| {
            if let InstrumentationEvent::StartQuery { .. } = event {
                seen.fetch_add(1, Ordering::SeqCst);
            }
        });
        counter
    }

    /// Statements started since the last call (or since installation).
    pub fn take(&self) -> usize {
        self.0.swap(0, Ordering::SeqCst)
    }
}
