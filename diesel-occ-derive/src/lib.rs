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
mod changeset_columns;
mod check;
mod expand;
mod fallback;
mod fragment;
mod valid;

#[cfg(test)]
mod tests;

use proc_macro::TokenStream;
use syn::DeriveInput;

use crate::ast::Entity;

// The reference lives in a file of its own so that the runtime crate can run its
// example as a doctest: a proc-macro crate cannot depend on the crate that re-exports it
// without building Diesel a second time, for the host, with other features.
#[doc = include_str!("versioned.md")]
#[proc_macro_derive(Versioned, attributes(occ, diesel))]
pub fn derive_versioned(input: TokenStream) -> TokenStream {
    derive_versioned_inner(input.into()).into()
}

/// States the columns a `#[derive(AsChangeset)]` struct assigns, so diesel-occ's checked
/// writes (`update_by_key`, `soft_delete_checked`, `bulk_update`) accept it and prove at
/// compile time that it leaves the token column alone.
///
/// Derive it beside Diesel's `AsChangeset`; it reads the same `#[diesel(...)]`
/// attributes (`table_name`, `primary_key`, `column_name`, `skip_update`, `embed`). A
/// struct that assigns the token column does not compile where a checked write takes
/// it. See `diesel_occ::guide::checked_writes` for an example.
#[proc_macro_derive(ChangesetColumns, attributes(diesel, occ))]
pub fn derive_changeset_columns(input: TokenStream) -> TokenStream {
    derive_changeset_columns_inner(input.into()).into()
}

/// The derive on `proc_macro2` tokens, as diesel_derives' `_inner` functions: the unit
/// tests call it (the `proc_macro` API only works inside a compiler invocation).
///
/// Decides which expansion applies: the errors with stubs (`fallback.rs`) for an invalid
/// entity, the check columns' (`check.rs`) for one without a version column, the
/// token's (`expand.rs`) otherwise.
fn derive_versioned_inner(input: proc_macro2::TokenStream) -> proc_macro2::TokenStream {
    let input: DeriveInput = match syn::parse2(input) {
        Ok(input) => input,
        Err(error) => return error.to_compile_error(),
    };
    match valid_entity(&input) {
        Ok(entity) if entity.is_versionless() => check::expand(&entity),
        Ok(entity) => expand::expand(&entity),
        Err(errors) => fallback::expand(&input, errors),
    }
}

/// The entity `input` declares, or every mistake found in it: a wrong shape (an enum, a
/// tuple struct), or else the attribute errors and then the broken rules of `valid.rs`.
fn valid_entity(input: &DeriveInput) -> Result<Entity<'_>, Vec<syn::Error>> {
    let mut errors = Vec::new();
    let entity = match Entity::from_input(input, &mut errors) {
        Ok(entity) => entity,
        Err(shape) => {
            errors.insert(0, shape);
            return Err(errors);
        }
    };
    valid::validate(&entity, &mut errors);
    if errors.is_empty() {
        Ok(entity)
    } else {
        Err(errors)
    }
}

/// `#[derive(ChangesetColumns)]` on `proc_macro2` tokens, for the unit tests.
fn derive_changeset_columns_inner(input: proc_macro2::TokenStream) -> proc_macro2::TokenStream {
    match syn::parse2(input) {
        Ok(input) => changeset_columns::derive(&input),
        Err(error) => error.to_compile_error(),
    }
}
