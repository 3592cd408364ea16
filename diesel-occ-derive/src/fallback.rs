//! What the derive emits when the input is invalid: the errors, plus a stub impl so
//! code that uses the entity does not add a dozen "trait not implemented" errors.

use proc_macro2::TokenStream;
use quote::quote;
use syn::DeriveInput;

pub(crate) fn expand(input: &DeriveInput, errors: Vec<syn::Error>) -> TokenStream {
    let errors = errors.into_iter().map(|e| e.to_compile_error());
    let ident = &input.ident;
    let (impl_generics, ty_generics, where_clause) = input.generics.split_for_impl();
    quote! {
        #(#errors)*
        const _: () = {
            #[automatically_derived]
            impl #impl_generics ::diesel_occ::__private::Versioned for #ident #ty_generics #where_clause {
                type Table = ();
                type Token = i64;
                type Key = ();
                type UpdateStatement = ();
                type DeleteStatement = ();
                type TokenQuery = ();
                type FindQuery = ();
                type ValuesRow = ();
                const TABLE_NAME: &'static str = "";
                const TOKEN_COLUMN: &'static str = "";
                const KEY_COLUMNS: &'static [&'static str] = &[];
                fn token(&self) -> &i64 { unimplemented!() }
                fn set_token(&mut self, _: i64) { unimplemented!() }
                fn key(&self) {}
                fn key_values(_: &()) -> ::std::vec::Vec<::std::string::String> { unimplemented!() }
                fn update_statement(&self, _: &i64) {}
                fn delete_statement(&self) {}
                fn token_query(_: ()) {}
                fn find_query(_: ()) {}
            }
            #[automatically_derived]
            impl #impl_generics ::diesel_occ::__private::VersionedParts for #ident #ty_generics #where_clause {
                type TokenColumn = ();
                type Guarded = ();
                type TokenAssignment = ();
                const GENERATED_TOKEN: bool = false;
                fn guarded(&self) {}
                fn token_assignment(_: &i64) {}
            }
        };
    }
}
