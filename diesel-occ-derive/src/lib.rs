//! Implementation detail of [`diesel-occ`](https://docs.rs/diesel-occ): the
//! `#[derive(Versioned)]` macro. Depend on `diesel-occ`, which re-exports it.
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

/// Derives `diesel_occ::Versioned`. See the runtime crate for the attribute reference.
#[proc_macro_derive(Versioned, attributes(occ, diesel))]
pub fn derive_versioned(input: TokenStream) -> TokenStream {
    let input = parse_macro_input!(input as DeriveInput);
    expand::derive(&input).into()
}
