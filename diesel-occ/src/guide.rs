//! Guides: how the pieces fit together for a task, with examples that run. Each item's
//! own page says what it does; these pages say when to reach for it.
//!
//! - [`checked_writes`]: the entity, the token kinds, the schema check, and what each
//!   checked write runs.
//! - [`diesel_models`]: the Diesel code you already have: which derives to keep, which
//!   Diesel calls to replace, checked inserts, forms and upserts.
//! - [`client_tokens`]: writes from a token a client holds (`ETag` / `If-Match`).
//! - [`after_the_conflict`]: tracked entities and merges, transactions that give tokens
//!   back, batches, aggregates, bulk writes and the bypass-writer guard.
//! - [`retries`]: the retry helper, escalation to a lock, the combiner for hot rows.
//! - [`asynchronous`]: the async API and its twins of the blocking items.
//! - [`tuning`]: choosing how to write a hot row, and setting up the async helper, with
//!   measured figures.

#[doc = include_str!("../guide/checked_writes.md")]
pub mod checked_writes {}

#[doc = include_str!("../guide/diesel_models.md")]
pub mod diesel_models {}

#[doc = include_str!("../guide/client_tokens.md")]
pub mod client_tokens {}

#[doc = include_str!("../guide/after_the_conflict.md")]
pub mod after_the_conflict {}

#[doc = include_str!("../guide/retries.md")]
pub mod retries {}

#[doc = include_str!("../guide/asynchronous.md")]
pub mod asynchronous {}

#[doc = include_str!("../guide/tuning.md")]
pub mod tuning {}
