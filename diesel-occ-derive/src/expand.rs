//! Code generation: one `impl diesel_occ::Versioned` describing the entity.

use proc_macro2::TokenStream;
use quote::{format_ident, quote, quote_spanned};
use syn::DeriveInput;
use syn::spanned::Spanned;

use crate::ast::{Entity, Field};
use crate::{fallback, valid};

pub(crate) fn derive(input: &DeriveInput) -> TokenStream {
    let mut errors = Vec::new();
    let entity = match Entity::from_input(input, &mut errors) {
        Ok(entity) => entity,
        Err(shape) => {
            errors.insert(0, shape);
            return fallback::expand(input, errors);
        }
    };
    valid::validate(&entity, &mut errors);
    if errors.is_empty() {
        expand(&entity)
    } else {
        fallback::expand(input, errors)
    }
}

fn expand(entity: &Entity<'_>) -> TokenStream {
    let diesel = quote!(::diesel_occ::__private::diesel);
    let dsl = quote!(#diesel::dsl);
    let ident = &entity.input.ident;
    let table = &entity.table;
    let table_name = table
        .segments
        .last()
        .map(|s| s.ident.to_string())
        .unwrap_or_default();

    let token = entity.token();
    let token_field = token.ident;
    let token_col = &token.column;
    let token_col_name = token_col.to_string();
    // Spanned on the field's type, so "`String` cannot be a concurrency token" points there.
    let token_ty = {
        let ty = token.ty;
        quote_spanned!(ty.span()=> #ty)
    };

    let keys = entity.key_fields();
    let key_col_names = keys.iter().map(|f| f.column.to_string());
    let (key_ty, key_expr, key_parts) = key_shape(&keys);
    let (key_filter_ty, key_filter_expr) = key_filter(entity, &keys, &dsl);

    let changes: Vec<_> = entity
        .fields
        .iter()
        .filter(|f| !f.is_token() && !entity.is_key(f) && !f.attrs.skip_update && !f.attrs.occ_skip)
        .map(|f| change(table, f, &dsl))
        .collect();
    let change_tys = changes.iter().map(|(ty, _)| ty);
    let change_exprs = changes.iter().map(|(_, expr)| expr);

    let guarded = quote! {
        #dsl::Filter<#dsl::Filter<#table::table, #key_filter_ty>, #dsl::Eq<#table::#token_col, #token_ty>>
    };

    quote! {
        const _: () = {
            use #diesel::prelude::{BoolExpressionMethods as _, ExpressionMethods as _, QueryDsl as _};

            fn __occ_key_filter(key: #key_ty) -> #key_filter_ty {
                #key_filter_expr
            }

            #[automatically_derived]
            impl ::diesel_occ::Versioned for #ident {
                type Table = #table::table;
                type Token = #token_ty;
                type Key = #key_ty;
                type UpdateStatement = #dsl::Update<
                    #guarded,
                    (#(#change_tys,)* #dsl::Eq<#table::#token_col, #token_ty>,)
                >;
                type DeleteStatement = #dsl::delete<#guarded>;
                type TokenQuery = #dsl::Select<#dsl::Filter<#table::table, #key_filter_ty>, #table::#token_col>;
                type FindQuery = #dsl::Filter<#table::table, #key_filter_ty>;

                const TABLE_NAME: &'static str = #table_name;
                const TOKEN_COLUMN: &'static str = #token_col_name;
                const KEY_COLUMNS: &'static [&'static str] = &[#(#key_col_names),*];

                fn token(&self) -> &Self::Token {
                    &self.#token_field
                }

                fn set_token(&mut self, token: Self::Token) {
                    self.#token_field = token;
                }

                fn key(&self) -> Self::Key {
                    #key_expr
                }

                fn key_values(key: &Self::Key) -> ::std::vec::Vec<::std::string::String> {
                    ::std::vec![#(::std::format!("{:?}", #key_parts)),*]
                }

                fn update_statement(&self, fresh: &Self::Token) -> Self::UpdateStatement {
                    #diesel::update(
                        #table::table
                            .filter(__occ_key_filter(self.key()))
                            .filter(#table::#token_col.eq(::std::clone::Clone::clone(&self.#token_field))),
                    )
                    .set((#(#change_exprs,)* #table::#token_col.eq(::std::clone::Clone::clone(fresh)),))
                }

                fn delete_statement(&self) -> Self::DeleteStatement {
                    #diesel::delete(
                        #table::table
                            .filter(__occ_key_filter(self.key()))
                            .filter(#table::#token_col.eq(::std::clone::Clone::clone(&self.#token_field))),
                    )
                }

                fn token_query(key: Self::Key) -> Self::TokenQuery {
                    #table::table.filter(__occ_key_filter(key)).select(#table::#token_col)
                }

                fn find_query(key: Self::Key) -> Self::FindQuery {
                    #table::table.filter(__occ_key_filter(key))
                }
            }
        };
    }
}

/// The key's type, how to read it from `self`, and its parts from a `key` binding.
fn key_shape(keys: &[&Field<'_>]) -> (TokenStream, TokenStream, Vec<TokenStream>) {
    if let [only] = keys {
        let (ty, ident) = (only.ty, only.ident);
        return (
            quote!(#ty),
            quote!(::std::clone::Clone::clone(&self.#ident)),
            vec![quote!(key)],
        );
    }
    let tys = keys.iter().map(|f| f.ty);
    let idents = keys.iter().map(|f| f.ident);
    let parts = (0..keys.len())
        .map(|i| {
            let index = syn::Index::from(i);
            quote!(&key.#index)
        })
        .collect();
    (
        quote!((#(#tys,)*)),
        quote!((#(::std::clone::Clone::clone(&self.#idents),)*)),
        parts,
    )
}

/// `col_a = key.0 AND col_b = key.1 ...`, its type and its expression over `key`.
fn key_filter(
    entity: &Entity<'_>,
    keys: &[&Field<'_>],
    dsl: &TokenStream,
) -> (TokenStream, TokenStream) {
    let table = &entity.table;
    let single = keys.len() == 1;
    let mut parts = keys.iter().enumerate().map(|(i, f)| {
        let (col, ty) = (&f.column, f.ty);
        let value = if single {
            quote!(key)
        } else {
            let index = syn::Index::from(i);
            quote!(key.#index)
        };
        (
            quote!(#dsl::Eq<#table::#col, #ty>),
            quote!(#table::#col.eq(#value)),
        )
    });
    let (mut ty, mut expr) = parts.next().expect("validated: at least one key column");
    for (part_ty, part_expr) in parts {
        ty = quote!(#dsl::And<#ty, #part_ty>);
        expr = quote!(#expr.and(#part_expr));
    }
    (ty, expr)
}

/// One `SET column = value` of the changeset: its type and its expression.
fn change(table: &syn::Path, field: &Field<'_>, dsl: &TokenStream) -> (TokenStream, TokenStream) {
    let (ident, col, span) = (field.ident, &field.column, field.ty.span());
    match field.option_inner() {
        // Diesel's rule: `None` leaves the column alone unless `treat_none_as_null`.
        Some(inner) if !field.treat_none_as_null => {
            let value = format_ident!("value");
            (
                quote_spanned!(span=> ::std::option::Option<#dsl::Eq<#table::#col, #inner>>),
                quote_spanned!(span=> ::std::clone::Clone::clone(&self.#ident).map(|#value| #table::#col.eq(#value))),
            )
        }
        _ => {
            let ty = field.ty;
            (
                quote_spanned!(span=> #dsl::Eq<#table::#col, #ty>),
                quote_spanned!(span=> #table::#col.eq(::std::clone::Clone::clone(&self.#ident))),
            )
        }
    }
}
