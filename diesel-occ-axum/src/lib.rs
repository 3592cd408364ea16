//! [diesel-occ](https://docs.rs/diesel-occ)'s version tokens on the wire as ETags, in
//! [axum](https://docs.rs/axum), with RFC 9110's conditional requests and RFC 9457's
//! problem documents: a stale writer gets 412 with the current ETag, never a lost update.
//!
//! A handler takes [`Preconditions`] (every conditional header) and runs its write with
//! [`Preconditions::write`] (blocking) or `write_async` (feature `async`): the read, the
//! evaluation of the headers against the row's token and the checked write, in one call
//! inside diesel-occ's retry helper. `?` maps every outcome to its status through
//! [`Problem`]. A `GET` answers with [`Preconditions::respond`] or
//! [`IfNoneMatch::respond`] and [`Validators`].
//!
//! The README (on crates.io and in the repository) has the install line, the features,
//! a whole resource (compiled and driven by `tests/readme.rs`), and the conformance table:
//! each requirement of RFC 9110, RFC 6585 and RFC 9457 on conditional requests and
//! problem details, the status this crate gives, and the test that checks it.
//!
//! # Where to find things
//!
//! | item | what |
//! |---|---|
//! | [`IfMatch`] | the required `If-Match` of a write: 428 without it (`Option<IfMatch>` where it is optional), octet-exact strong comparison, `*` |
//! | [`IfNoneMatch`] | `If-None-Match`, compared weakly: 304 on `GET`/`HEAD`, 412 otherwise |
//! | [`Preconditions`] | every conditional header, evaluated in RFC 9110's order, and the checked write behind them in one call ([`Preconditions::write`], `write_async`) |
//! | [`Validators`] | `ETag`, `Last-Modified` and the cache headers a 200 and its 304 share |
//! | [`ETag`] | an entity-tag, made from a version token; a response part |
//! | [`Problem`] | `application/problem+json` responses, `From<diesel_occ::Error>` and the pool errors; the [status table](problem#status-codes) |
//! | [`Settings`] | whether `If-Match: *` is accepted, and weak tags behind a compressing proxy |
//! | [`parse`] | the header grammar, on its own (the fuzz target's entry) |
#![forbid(unsafe_code)]

mod etag;
mod extract;
pub mod parse;
#[cfg(any(feature = "deadpool", feature = "bb8", feature = "r2d2"))]
mod pool;
mod preconditions;
pub mod problem;
mod settings;
mod validators;
mod write;

pub use etag::ETag;
pub use extract::{IfMatch, IfNoneMatch};
pub use preconditions::Preconditions;
pub use problem::Problem;
pub use settings::Settings;
pub use validators::Validators;
#[cfg(feature = "async")]
#[cfg_attr(docsrs, doc(cfg(feature = "async")))]
pub use write::AsyncWriteFn;
