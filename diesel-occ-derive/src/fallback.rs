//! What the derive emits when the input is invalid: the errors, plus a stub of every
//! trait the derive implements, so that code using the entity (`Entity::find`,
//! `save_checked`, a `T: Versioned` bound, `Tracked::new`) adds nothing to them.
//!
//! A stub with plain types such as `()` would quiet "`Versioned` is not implemented"
//! but not the calls whose `where` clauses constrain the generated types (`find` needs
//! its query to be a Diesel query): each would report that `()` is not a query. So every
//! associated type is a name imported from a path that does not exist. rustc recovers an
//! unresolved import as an error type, which satisfies every bound without a word, and
//! does not report the import itself in a module where a macro failed, as ours just did
//! with `compile_error!`. The user reads the derive's errors and nothing else
//! (`tests/ui/fail/unknown_occ_key_on_used_entity.rs` pins that).

use proc_macro2::TokenStream;
use quote::quote;
use syn::DeriveInput;

/// `errors` is not empty: the `compile_error!`s are what keeps the stub's unresolved
/// import quiet.
pub(crate) fn expand(input: &DeriveInput, errors: Vec<syn::Error>) -> TokenStream {
    let errors = errors.into_iter().map(|e| e.to_compile_error());
    let invalid = quote!(__OccInvalid);
    let versioned = versioned_stub(input, &invalid);
    let versioned_parts = versioned_parts_stub(input, &invalid);
    let tracking = tracking_stub(input, &invalid);
    let returning_statement = returning_statement_stub(input, &invalid);
    quote! {
        #(#errors)*
        const _: () = {
            use self::__occ_derive_failed as #invalid;

            // The bodies never run: the program does not compile.
            #versioned

            #versioned_parts

            // Whether or not `#[occ(track)]` was (validly) given: it may be the
            // misspelled key, and the entity's tracked saves should stay quiet too.
            #tracking

            // Implemented for a database-generated token: it may be the broken field.
            #returning_statement
        };
    }
}

/// `Versioned`, every associated type the unresolved import.
fn versioned_stub(input: &DeriveInput, invalid: &TokenStream) -> TokenStream {
    let ident = &input.ident;
    let (impl_generics, ty_generics, where_clause) = input.generics.split_for_impl();
    quote! {
        #[automatically_derived]
        impl #impl_generics ::diesel_occ::__private::Versioned for #ident #ty_generics #where_clause {
            type Table = #invalid;
            type Token = #invalid;
            type Key = #invalid;
            type UpdateStatement = #invalid;
            type DeleteStatement = #invalid;
            type TokenQuery = #invalid;
            type FindQuery = #invalid;
            type ValuesRow = #invalid;
            const TABLE_NAME: &'static str = "";
            const TOKEN_COLUMN: &'static str = "";
            const KEY_COLUMNS: &'static [&'static str] = &[];
            fn token(&self) -> &Self::Token { ::std::unreachable!() }
            fn set_token(&mut self, _: Self::Token) { ::std::unreachable!() }
            fn key(&self) -> Self::Key { ::std::unreachable!() }
            fn key_values(_: &Self::Key) -> ::std::vec::Vec<::std::string::String> { ::std::unreachable!() }
            fn update_statement(&self, _: &Self::Token) -> Self::UpdateStatement { ::std::unreachable!() }
            fn delete_statement(&self) -> Self::DeleteStatement { ::std::unreachable!() }
            fn token_query(_: Self::Key) -> Self::TokenQuery { ::std::unreachable!() }
            fn find_query(_: Self::Key) -> Self::FindQuery { ::std::unreachable!() }
        }
    }
}

/// `VersionedParts`, which the runtime's checked writes name.
fn versioned_parts_stub(input: &DeriveInput, invalid: &TokenStream) -> TokenStream {
    let ident = &input.ident;
    let (impl_generics, ty_generics, where_clause) = input.generics.split_for_impl();
    quote! {
        #[automatically_derived]
        impl #impl_generics ::diesel_occ::__private::VersionedParts for #ident #ty_generics #where_clause {
            type TokenColumn = #invalid;
            type Guarded = #invalid;
            type TokenAssignment = #invalid;
            type Changes = #invalid;
            type KeyColumns = #invalid;
            const GENERATED_TOKEN: bool = false;
            fn guarded(&self) -> Self::Guarded { ::std::unreachable!() }
            fn token_assignment(_: &Self::Token) -> Self::TokenAssignment { ::std::unreachable!() }
            fn changes(&self, _: &Self::Token) -> Self::Changes { ::std::unreachable!() }
        }
    }
}

/// `Tracking`, which `Tracked` and the tracked saves name.
fn tracking_stub(input: &DeriveInput, invalid: &TokenStream) -> TokenStream {
    let ident = &input.ident;
    let (impl_generics, ty_generics, where_clause) = input.generics.split_for_impl();
    quote! {
        #[automatically_derived]
        impl #impl_generics ::diesel_occ::__private::Tracking for #ident #ty_generics #where_clause {
            const FIELDS: &'static [&'static str] = &[];
            type FieldsUpdateStatement = #invalid;
            fn changed_from(&self, _: &Self) -> ::diesel_occ::__private::Fields<Self> { ::std::unreachable!() }
            fn copy_fields(&mut self, _: &Self, _: ::diesel_occ::__private::Fields<Self>) { ::std::unreachable!() }
            fn fields_update_statement(
                &self,
                _: &Self,
                _: ::diesel_occ::__private::Fields<Self>,
                _: &Self::Token,
            ) -> Self::FieldsUpdateStatement { ::std::unreachable!() }
        }
    }
}

/// `ReturningStatement<Which>` for every `Which`: the struct's generics and one more.
fn returning_statement_stub(input: &DeriveInput, invalid: &TokenStream) -> TokenStream {
    let ident = &input.ident;
    let (_, ty_generics, where_clause) = input.generics.split_for_impl();
    // A copy without `Clone` (syn's `clone-impls` is off): printed and parsed back.
    let generics = &input.generics;
    let mut with_which: syn::Generics = syn::parse_quote!(#generics);
    with_which.params.push(syn::parse_quote!(__OccWhich));
    let (which_impl_generics, _, _) = with_which.split_for_impl();
    quote! {
        #[automatically_derived]
        impl #which_impl_generics ::diesel_occ::__private::ReturningStatement<__OccWhich> for #ident #ty_generics #where_clause {
            type Statement = #invalid;
        }
    }
}
