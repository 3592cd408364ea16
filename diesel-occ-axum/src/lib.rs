#![doc = include_str!("../README.md")]
//!
//! # Where to find things
//!
//! | item | what |
//! |---|---|
//! | [`IfMatch`] | the required `If-Match` of a write: 428 without it, strong comparison, `*` |
//! | [`IfNoneMatch`] | the optional `If-None-Match` of a read: weak comparison, 304 |
//! | [`ETag`] | an entity-tag, made from a version token; a response part |
//! | [`Problem`] | `application/problem+json` responses, `From<diesel_occ::Error>`; the [status table](problem#status-codes) |
//! | [`Settings`] | whether `If-Match: *` is accepted |
//! | [`parse`] | the header grammar, on its own (the fuzz target's entry) |
#![forbid(unsafe_code)]

mod etag;
mod extract;
pub mod parse;
pub mod problem;
mod settings;

pub use etag::ETag;
pub use extract::{IfMatch, IfNoneMatch};
pub use problem::Problem;
pub use settings::Settings;
