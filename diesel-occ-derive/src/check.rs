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
use crate::fragment::{
    TrackedUpdate, block_header, column_checks, key_columns, key_filter, key_shape,
    refuse_diesel_changeset, sql_names, tracked_fields, tracking_impl,
};

/// The whole expansion of a valid entity guarded by its check columns, in one `const _`
/// block.
pub(crate) fn expand(entity: &Entity<'_>) -> TokenStream {
    let check_entity = CheckEntity::new(entity);
    let block_header = block_header(entity);
    let refuse_diesel_changeset = refuse_diesel_changeset(check_entity.ident);
    let column_checks = check_entity.column_checks();
    let guard = check_entity.guard_items();
    let values_type = check_entity.values_type();
    let version_token = check_entity.version_token_impl();
    let queryable = check_entity.queryable_impl();
    let versioned_parts = check_entity.versioned_parts_impl();
    let tracking = check_entity.tracking_impl();
    let versioned = check_entity.versioned_impl();
    quote! {
        const _: () = {
            #block_header

            #refuse_diesel_changeset
            #column_checks

            #guard

            #values_type
            #version_token
            #queryable

            #versioned_parts

            #tracking

            #versioned

        };
    }
}

/// What the impls of an entity guarded by its check columns are built from, read once
/// from the entity.
struct CheckEntity<'e, 'a> {
    entity: &'e Entity<'a>,
    ident: &'e syn::Ident,
    table: &'e syn::Path,
    /// The `#[occ(check)]` fields, at least one (the entity would not be versionless).
    checks: Vec<&'e Field<'a>>,
    keys: Vec<&'e Field<'a>>,
    /// The fields a tracked save writes: neither key nor skipped.
    written: Vec<&'e Field<'a>>,
    /// `__OccCheckValues`: the check columns' values, the entity's token type.
    values: syn::Ident,
}

impl<'e, 'a> CheckEntity<'e, 'a> {
    fn new(entity: &'e Entity<'a>) -> Self {
        CheckEntity {
            entity,
            ident: &entity.input.ident,
            table: &entity.table,
            checks: entity.check_fields(),
            keys: entity.key_fields(),
            written: entity.written(),
            values: format_ident!("__OccCheckValues"),
        }
    }

    /// The first check column: it stands for the token column in the traits that name
    /// one.
    fn first_check(&self) -> &'e syn::Ident {
        &self
            .checks
            .first()
            .expect("versionless: a check field")
            .column
    }

    fn check_tys(&self) -> Vec<&'a syn::Type> {
        self.checks.iter().map(|f| f.ty).collect()
    }

    fn check_cols(&self) -> Vec<&'e syn::Ident> {
        self.checks.iter().map(|f| &f.column).collect()
    }

    /// `col_a = key.0 AND ...`: its type and its expression over `key`.
    fn key_filter(&self) -> (TokenStream, TokenStream) {
        key_filter(self.entity, &self.keys, &quote!(__occ::diesel::dsl))
    }

    /// The key, check and written columns, each with its field's type.
    fn column_checks(&self) -> TokenStream {
        let columns = self
            .keys
            .iter()
            .chain(&self.checks)
            .chain(&self.written)
            .map(|f| (&f.column, f.ty));
        column_checks(self.table, columns)
    }

    /// The free functions and the type of the guarded row: found by key, and holding the
    /// check columns' values of the entity given.
    fn guard_items(&self) -> TokenStream {
        let dsl = quote!(__occ::diesel::dsl);
        let (ident, table) = (self.ident, self.table);
        let key_ty = key_shape(&self.keys).ty;
        let (key_filter_ty, key_filter_expr) = self.key_filter();
        let (filter_ty, filter_expr) = self.check_filter();
        quote! {
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
                    .filter(__occ_key_filter(<#ident as __occ::Versioned>::key(values)))
                    .filter(__occ_check_filter(values))
            }
        }
    }

    /// `c1 IS NOT DISTINCT FROM values.c1 AND ...`: its type and its expression over a
    /// `values` binding. On SQLite a timestamp value also matches its other text forms.
    fn check_filter(&self) -> (TokenStream, TokenStream) {
        // Interpolated, not written in `quote_spanned!`: `__occ` keeps the call site's span.
        let private = quote!(__occ);
        let dsl = quote!(#private::diesel::dsl);
        let table = self.table;
        // NULL-safe, and on SQLite matching every text form of a timestamp value.
        let mut parts = self.checks.iter().map(|f| {
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

    /// The type standing for the token.
    fn values_type(&self) -> TokenStream {
        let (values, check_tys) = (&self.values, self.check_tys());
        quote! {
            /// The check columns' values, standing for the token: `None` for "the
            /// entity's own fields", which the entity cannot lend by reference.
            #[doc(hidden)]
            #[derive(Clone, PartialEq, Debug)]
            pub struct #values(::std::option::Option<(#(#check_tys,)*)>);
        }
    }

    /// `impl VersionToken` for the check values: every value is "as read" until a
    /// conflict loads the row's, and there is no token a client could send back.
    fn version_token_impl(&self) -> TokenStream {
        let values = &self.values;
        let to_value = self.token_value();
        let no_client_token = no_client_token_methods();
        quote! {
            #[automatically_derived]
            impl __occ::VersionToken for #values {
                const KIND: __occ::TokenKind = __occ::TokenKind::Columns;

                #[inline]
                fn initial() -> Self {
                    #values(::std::option::Option::None)
                }

                #[inline]
                fn next_token(&self) -> Self {
                    #values(::std::option::Option::None)
                }

                #[inline]
                fn to_value(&self) -> __occ::TokenValue {
                    #to_value
                }

                #[inline]
                fn from_value(_: &__occ::TokenValue) -> ::std::option::Option<Self> {
                    ::std::option::Option::None
                }

                #no_client_token
            }
        }
    }

    /// The body of `to_value`: each check column's name and value as read, or "as read"
    /// when the values are the entity's own.
    fn token_value(&self) -> TokenStream {
        let table = self.table;
        let check_cols = self.check_cols();
        let bindings: Vec<_> = (0..self.checks.len())
            .map(|i| format_ident!("__occ_value_{}", i))
            .collect();
        quote! {
            __occ::TokenValue::Columns(match &self.0 {
                ::std::option::Option::Some((#(#bindings,)*)) => __occ::CheckValues::new(::std::vec![
                    #((
                        <#table::#check_cols as __occ::diesel::Column>::NAME,
                        ::std::format!("{:?}", #bindings),
                    )),*
                ]),
                ::std::option::Option::None => __occ::CheckValues::as_read(),
            })
        }
    }

    /// `impl Queryable` for the check values: loaded from the check columns when a write
    /// conflicts.
    fn queryable_impl(&self) -> TokenStream {
        let diesel = quote!(__occ::diesel);
        let (values, table) = (&self.values, self.table);
        let (check_tys, check_cols) = (self.check_tys(), self.check_cols());
        quote! {
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
        }
    }

    /// `impl VersionedParts`: the guarded row, and no token to assign.
    fn versioned_parts_impl(&self) -> TokenStream {
        let (ident, table) = (self.ident, self.table);
        let first_check = self.first_check();
        let key_columns = key_columns(table, &self.keys);
        quote! {
            #[automatically_derived]
            impl __occ::VersionedParts for #ident {
                type TokenColumn = #table::#first_check;
                type Guarded = __OccGuarded;
                type TokenAssignment = __occ::NotAssigned;
                // No token to assign: an upsert does not compile.
                type Changes = __occ::NotAssigned;
                type KeyColumns = #key_columns;
                const GENERATED_TOKEN: bool = false;

                #[inline]
                fn guarded(&self) -> Self::Guarded {
                    __occ_guarded(self)
                }

                #[inline]
                fn token_assignment(_: &Self::Token) -> Self::TokenAssignment {
                    __occ::NotAssigned
                }

                #[inline]
                fn changes(&self, _: &Self::Token) -> Self::Changes {
                    __occ::NotAssigned
                }
            }
        }
    }

    /// `impl diesel_occ::Tracking`: as for a token entity, but the UPDATE assigns no
    /// token and is guarded by the check columns of the entity as read.
    fn tracking_impl(&self) -> TokenStream {
        let values = &self.values;
        let fields = tracked_fields(self.table, &self.written, &quote!(__occ::diesel::dsl));
        let (set_tys, set_exprs) = (&fields.set_tys, &fields.set_exprs);
        let check_idents = self.checks.iter().map(|f| f.ident);
        let update = TrackedUpdate {
            ty: quote!(__occ::CachedUpdate<__OccGuarded, (#(#set_tys,)*)>),
            body: quote! {
                // No token to assign: the check columns as read guard the write.
                let _ = fresh;
                __occ::CachedUpdate::new(__occ_guarded(original), (#(#set_exprs,)*))
                    // One text per set of fields: only the full set is kept prepared.
                    .cached_if(fields == __occ::Fields::all())
            },
            more: quote! {
                #[inline]
                fn expected_token(&self) -> Self::Token {
                    #values(::std::option::Option::Some((#(::std::clone::Clone::clone(&self.#check_idents),)*)))
                }
            },
        };
        tracking_impl(self.ident, &self.written, &fields.compares, update)
    }

    /// `impl Versioned`: the check values as the token, no full save (a tracked save
    /// writes the entity), and the statements of [`CheckEntity::statement_methods`].
    fn versioned_impl(&self) -> TokenStream {
        let dsl = quote!(__occ::diesel::dsl);
        let (ident, table, values) = (self.ident, self.table, &self.values);
        let check_cols = self.check_cols();
        let key = key_shape(&self.keys);
        let (key_ty, key_methods) = (&key.ty, &key.methods);
        let (key_filter_ty, _) = self.key_filter();
        let sql_names = sql_names(table, self.first_check(), &self.keys);
        let statement_methods = self.statement_methods();
        quote! {
            #[automatically_derived]
            impl __occ::Versioned for #ident {
                type Table = #table::table;
                type Token = #values;
                type Key = #key_ty;
                type UpdateStatement = __occ::SaveThroughTracked;
                type DeleteStatement = #dsl::delete<__OccGuarded>;
                type TokenQuery = #dsl::Select<
                    #dsl::Filter<#table::table, #key_filter_ty>,
                    (#(#table::#check_cols,)*),
                >;
                type FindQuery = #dsl::Filter<#table::table, #key_filter_ty>;
                type ValuesRow = ();

                #sql_names

                #[inline]
                fn token(&self) -> &Self::Token {
                    static AS_READ: #values = #values(::std::option::Option::None);
                    &AS_READ
                }

                #[inline]
                fn set_token(&mut self, _: Self::Token) {}

                #key_methods
                #statement_methods
            }
        }
    }

    /// The methods of `impl Versioned` that build its statements: no full save, the
    /// guarded delete, the check columns' query and the row's.
    fn statement_methods(&self) -> TokenStream {
        let table = self.table;
        let check_cols = self.check_cols();
        quote! {
            #[inline]
            fn update_statement(&self, _: &Self::Token) -> Self::UpdateStatement {
                __occ::SaveThroughTracked
            }

            #[inline]
            fn delete_statement(&self) -> Self::DeleteStatement {
                __occ::diesel::delete(__occ_guarded(self))
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
    }
}

/// The methods of `VersionToken` for a token no client can hold: there is no ETag to
/// send, and none is accepted.
fn no_client_token_methods() -> TokenStream {
    quote! {
        #[inline]
        fn validate(&self) -> ::std::result::Result<(), __occ::InvalidToken> {
            ::std::result::Result::Err(__occ::no_client_token())
        }

        /// Nothing a client could send back: there is no ETag.
        #[inline]
        fn encode(&self) -> ::std::string::String {
            ::std::string::String::new()
        }

        #[inline]
        fn decode(_: &str) -> ::std::result::Result<Self, __occ::InvalidToken> {
            ::std::result::Result::Err(__occ::no_client_token())
        }
    }
}
