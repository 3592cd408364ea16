#![doc = include_str!("../README.md")]
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
