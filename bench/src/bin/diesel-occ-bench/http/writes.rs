//! The three writes the clients make, the body they send, and what a run of one saw.

use std::time::Instant;

/// A way to write an article whose ETag the client holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Write {
    /// `PUT` with `If-Match`: one conditional UPDATE, no read.
    IfMatch,
    /// `PATCH` with `If-Match`: the read with the token, then the checked save.
    LoadSave,
    /// `PUT` on the benchmark's route: one UPDATE by key, no token.
    Unconditional,
}

impl Write {
    pub(crate) const ALL: [Write; 3] = [Write::IfMatch, Write::LoadSave, Write::Unconditional];

    pub(crate) fn name(self) -> &'static str {
        match self {
            Write::IfMatch => "put-if-match",
            Write::LoadSave => "patch-load-save",
            Write::Unconditional => "put-unconditional",
        }
    }
}

/// The text every write sends as the article's body (about 200 bytes).
pub(crate) const BODY_TEXT: &str = "Optimistic concurrency control: the client sends back the ETag it \
    read, and the write succeeds only if the article still holds it. Nothing is locked \
    between the read and the write, and no update is ever lost.";

/// What one run of one write saw.
#[derive(Debug, Clone, Default)]
pub(crate) struct HttpTally {
    pub(crate) ok: u64,
    pub(crate) precondition_failed: u64,
    pub(crate) conflicts: u64,
    pub(crate) rereads: u64,
    pub(crate) errors: u64,
    pub(crate) latencies: Vec<u64>,
    pub(crate) first_error: Option<String>,
}

impl HttpTally {
    pub(crate) fn merge(&mut self, other: HttpTally) {
        self.ok += other.ok;
        self.precondition_failed += other.precondition_failed;
        self.conflicts += other.conflicts;
        self.rereads += other.rereads;
        self.errors += other.errors;
        self.latencies.extend(other.latencies);
        if self.first_error.is_none() {
            self.first_error = other.first_error;
        }
    }

    pub(crate) fn error(&mut self, text: String) {
        self.errors += 1;
        self.first_error.get_or_insert(text);
    }

    /// A successful write that began at `began`.
    pub(crate) fn latency(&mut self, began: Instant) {
        let nanos = began.elapsed().as_nanos();
        self.latencies
            .push(u64::try_from(nanos).unwrap_or(u64::MAX));
    }
}
