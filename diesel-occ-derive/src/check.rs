//! Code generation for an entity without a version column (`#[occ(check)]` fields):
//! its writes are guarded by the check columns' values as read, which only a
//! `diesel_occ::Tracked` keeps once the entity is edited.
//!
//! The "token" is a private type holding those values (`None` for "the entity's own
//! fields"), loaded from the check columns when a write conflicts; there is no full save
//! (`SaveThroughTracked`) and no token assignment (`NotAssigned`), so the writes that
//! need either do not compile.

use proc_macro2::TokenStream;
use quote::{format_ident, quote, quote_spanned};
use syn::spanned::Spanned;

use crate::ast::{Entity, Field};
use crate::expand::{
    block_header, column_checks, key_columns, key_filter, key_shape, refuse_diesel_changeset,
    sql_names, tracked_fields,
};

pub(crate) fn expand(entity: &Entity<'_>) -> TokenStream {
    let private = quote!(__occ);
    let diesel = quote!(#private::diesel);
    let dsl = quote!(#diesel::dsl);
    let ident = &entity.input.ident;
    let table = &entity.table;
    let block_header = block_header(entity);
    let table_name = table
        .segments
        .last()
        .map(|s| s.ident.to_string())
        .unwrap_or_default();

    let checks = entity.check_fields();
    let first_check = &checks.first().expect("versionless: a check field").column;
    let keys = entity.key_fields();
    let (key_ty, key_expr, key_parts) = key_shape(&keys);
    let key_columns = key_columns(table, &keys);
    let sql_names = sql_names(table, first_check, &keys);
    let (key_filter_ty, key_filter_expr) = key_filter(entity, &keys, &dsl);
    let written = entity.written();

    let bound_columns = keys
        .iter()
        .chain(&checks)
        .chain(&written)
        .map(|f| (&f.column, f.ty));
    let column_checks = column_checks(table, bound_columns);

    let check_tys: Vec<_> = checks.iter().map(|f| f.ty).collect();
    let check_cols: Vec<_> = checks.iter().map(|f| &f.column).collect();
    let (filter_ty, filter_expr) = check_filter(entity, &checks);
    let values = format_ident!("__OccCheckValues");
    let bindings: Vec<_> = (0..checks.len())
        .map(|i| format_ident!("__occ_value_{}", i))
        .collect();
    let tracking = tracking(entity, &written, &checks, &values);
    let refuse_diesel_changeset = refuse_diesel_changeset(ident);

    quote! {
        const _: () = {
            #block_header

            #refuse_diesel_changeset
            #column_checks

            #[inline]
            fn __occ_key_filter(key: #key_ty) -> #key_filter_ty {
                #key_filter_expr
            }

            /// `c1 IS NOT DISTINCT FROM <value> AND ...`, the values taken from `values`.
            #[inline]
            fn __occ_check_filter(values: &#ident) -> #filter_ty {
                #filter_expr
            }

            type __OccGuarded = #dsl::Filter<#dsl::Filter<#table::table, #key_filter_ty>, #filter_ty>;

            /// The row with `values`' key, if it still holds `values`' check columns.
            #[inline]
            fn __occ_guarded(values: &#ident) -> __OccGuarded {
                #table::table
                    .filter(__occ_key_filter(<#ident as #private::Versioned>::key(values)))
                    .filter(__occ_check_filter(values))
            }

            /// The check columns' values, standing for the token: `None` for "the
            /// entity's own fields", which the entity cannot lend by reference.
            #[doc(hidden)]
            #[derive(Clone, PartialEq, Debug)]
            pub struct #values(::std::option::Option<(#(#check_tys,)*)>);

            #[automatically_derived]
            impl #private::VersionToken for #values {
                const KIND: #private::TokenKind = #private::TokenKind::Columns;

                #[inline]
                fn initial() -> Self {
                    #values(::std::option::Option::None)
                }

                #[inline]
                fn next_token(&self) -> Self {
                    #values(::std::option::Option::None)
                }

                #[inline]
                fn to_value(&self) -> #private::TokenValue {
                    #private::TokenValue::Columns(match &self.0 {
                        ::std::option::Option::Some((#(#bindings,)*)) => #private::CheckValues::new(::std::vec![
                            #((
                                <#table::#check_cols as #diesel::Column>::NAME,
                                ::std::format!("{:?}", #bindings),
                            )),*
                        ]),
                        ::std::option::Option::None => #private::CheckValues::as_read(),
                    })
                }

                #[inline]
                fn from_value(_: &#private::TokenValue) -> ::std::option::Option<Self> {
                    ::std::option::Option::None
                }

                #[inline]
                fn validate(&self) -> ::std::result::Result<(), #private::InvalidToken> {
                    ::std::result::Result::Err(#private::no_client_token())
                }

                /// Nothing a client could send back: there is no ETag.
                #[inline]
                fn encode(&self) -> ::std::string::String {
                    ::std::string::String::new()
                }

                #[inline]
                fn decode(_: &str) -> ::std::result::Result<Self, #private::InvalidToken> {
                    ::std::result::Result::Err(#private::no_client_token())
                }
            }

            /// Loaded from the check columns when a write conflicts.
            #[automatically_derived]
            impl<__DB> #diesel::deserialize::Queryable<
                (#(<#table::#check_cols as #diesel::Expression>::SqlType,)*),
                __DB,
            > for #values
            where
                __DB: #diesel::backend::Backend,
                (#(#check_tys,)*): #diesel::deserialize::FromStaticSqlRow<
                    (#(<#table::#check_cols as #diesel::Expression>::SqlType,)*),
                    __DB,
                >,
            {
                type Row = (#(#check_tys,)*);

                #[inline]
                fn build(row: Self::Row) -> #diesel::deserialize::Result<Self> {
                    ::std::result::Result::Ok(#values(::std::option::Option::Some(row)))
                }
            }

            #[automatically_derived]
            impl #private::VersionedParts for #ident {
                type TokenColumn = #table::#first_check;
                type Guarded = __OccGuarded;
                type TokenAssignment = #private::NotAssigned;
                // No token to assign: an upsert does not compile.
                type Changes = #private::NotAssigned;
                type KeyColumns = #key_columns;
                const GENERATED_TOKEN: bool = false;

                #[inline]
                fn guarded(&self) -> Self::Guarded {
                    __occ_guarded(self)
                }

                #[inline]
                fn token_assignment(_: &Self::Token) -> Self::TokenAssignment {
                    #private::NotAssigned
                }

                #[inline]
                fn changes(&self, _: &Self::Token) -> Self::Changes {
                    #private::NotAssigned
                }
            }

            #tracking

            #[automatically_derived]
            impl #private::Versioned for #ident {
                type Table = #table::table;
                type Token = #values;
                type Key = #key_ty;
                type UpdateStatement = #private::SaveThroughTracked;
                type DeleteStatement = #dsl::delete<__OccGuarded>;
                type TokenQuery = #dsl::Select<
                    #dsl::Filter<#table::table, #key_filter_ty>,
                    (#(#table::#check_cols,)*),
                >;
                type FindQuery = #dsl::Filter<#table::table, #key_filter_ty>;
                type ValuesRow = ();

                const TABLE_NAME: &'static str = #table_name;
                #sql_names

                #[inline]
                fn token(&self) -> &Self::Token {
                    static AS_READ: #values = #values(::std::option::Option::None);
                    &AS_READ
                }

                #[inline]
                fn set_token(&mut self, _: Self::Token) {}

                #[inline]
                fn key(&self) -> Self::Key {
                    #key_expr
                }

                #[inline]
                fn key_values(key: &Self::Key) -> ::std::vec::Vec<::std::string::String> {
                    #private::key_values(&[#(#key_parts),*])
                }

                #[inline]
                fn update_statement(&self, _: &Self::Token) -> Self::UpdateStatement {
                    #private::SaveThroughTracked
                }

                #[inline]
                fn delete_statement(&self) -> Self::DeleteStatement {
                    #diesel::delete(__occ_guarded(self))
                }

                #[inline]
                fn token_query(key: Self::Key) -> Self::TokenQuery {
                    #table::table
                        .filter(__occ_key_filter(key))
                        .select((#(#table::#check_cols,)*))
                }

                #[inline]
                fn find_query(key: Self::Key) -> Self::FindQuery {
                    #table::table.filter(__occ_key_filter(key))
                }
            }

        };
    }
}

/// `c1 IS NOT DISTINCT FROM values.c1 AND ...`: its type and its expression over a
/// `values` binding. On SQLite a timestamp value also matches its other text forms.
fn check_filter(entity: &Entity<'_>, checks: &[&Field<'_>]) -> (TokenStream, TokenStream) {
    let private = quote!(__occ);
    let dsl = quote!(#private::diesel::dsl);
    let table = &entity.table;
    // NULL-safe, and on SQLite matching every text form of a timestamp value.
    let mut parts = checks.iter().map(|f| {
        let (ident, col, ty) = (f.ident, &f.column, f.ty);
        (
            quote_spanned!(ty.span()=> #private::TokenEq<#table::#col, #ty>),
            quote_spanned!(ty.span()=> #private::TokenEq::null_safe(
                #table::#col,
                ::std::clone::Clone::clone(&values.#ident),
                #private::check_text_forms::<#ty>,
            )),
        )
    });
    let (mut ty, mut expr) = parts.next().expect("versionless: a check field");
    for (part_ty, part_expr) in parts {
        ty = quote!(#dsl::And<#ty, #part_ty>);
        expr = quote!(#expr.and(#part_expr));
    }
    (ty, expr)
}

/// `impl diesel_occ::Tracking`: as for a token entity, but the UPDATE assigns no token
/// and is guarded by the check columns of the entity as read.
fn tracking(
    entity: &Entity<'_>,
    written: &[&Field<'_>],
    checks: &[&Field<'_>],
    values: &syn::Ident,
) -> TokenStream {
    let private = quote!(__occ);
    let dsl = quote!(#private::diesel::dsl);
    let ident = &entity.input.ident;
    let table = &entity.table;
    let names = written.iter().map(|f| f.ident.to_string());
    let indices: Vec<_> = (0..written.len()).collect();
    let idents: Vec<_> = written.iter().map(|f| f.ident).collect();
    let check_idents = checks.iter().map(|f| f.ident);
    let (compares, set_tys, set_exprs) = tracked_fields(table, written, &dsl);
    quote! {
        #[automatically_derived]
        impl #private::Tracking for #ident {
            const FIELDS: &'static [&'static str] = &[#(#names),*];
            type FieldsUpdateStatement = #private::CachedUpdate<__OccGuarded, (#(#set_tys,)*)>;

            #[allow(unused_mut)]
            #[inline]
            fn changed_from(&self, original: &Self) -> #private::Fields<Self> {
                let _ = original;
                let mut changed = #private::Fields::<Self>::none();
                #(#compares)*
                changed
            }

            #[inline]
            fn copy_fields(&mut self, from: &Self, fields: #private::Fields<Self>) {
                let _ = (from, fields);
                #(
                    if fields.contains_index(#indices) {
                        self.#idents = ::std::clone::Clone::clone(&from.#idents);
                    }
                )*
            }

            #[inline]
            fn fields_update_statement(
                &self,
                original: &Self,
                fields: #private::Fields<Self>,
                fresh: &Self::Token,
            ) -> Self::FieldsUpdateStatement {
                // No token to assign: the check columns as read guard the write.
                let _ = fresh;
                #private::CachedUpdate::new(__occ_guarded(original), (#(#set_exprs,)*))
                    // One text per set of fields: only the full set is kept prepared.
                    .cached_if(fields == #private::Fields::all())
            }

            #[inline]
            fn expected_token(&self) -> Self::Token {
                #values(::std::option::Option::Some((#(::std::clone::Clone::clone(&self.#check_idents),)*)))
            }
        }
    }
}
