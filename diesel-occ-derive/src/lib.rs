//! Implementation detail of [`diesel-occ`](https://docs.rs/diesel-occ): the
//! `#[derive(Versioned)]` macro, documented on [`Versioned`](macro@Versioned). Depend on
//! `diesel-occ`, which re-exports it; the generated code names `::diesel_occ` items.
//!
//! The derive only *describes* the entity (table, key, token column, changeset and the
//! typed statements built from them); every decision about saving, conflicts and
//! retries lives in the runtime crate.
#![forbid(unsafe_code)]

mod ast;
mod attr;
mod expand;
mod fallback;
mod valid;

use proc_macro::TokenStream;
use syn::{DeriveInput, parse_macro_input};

// The reference lives in a file of its own so that the runtime crate can run its
// example as a doctest: a proc-macro crate cannot depend on the crate that re-exports it
// without building Diesel a second time, for the host, with other features.
#[doc = include_str!("versioned.md")]
#[proc_macro_derive(Versioned, attributes(occ, diesel))]
pub fn derive_versioned(input: TokenStream) -> TokenStream {
    let input = parse_macro_input!(input as DeriveInput);
    expand::derive(&input).into()
}
