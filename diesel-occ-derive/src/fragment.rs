//! Fragments of generated code that both kinds of entity emit, a token entity
//! (`expand.rs`) and an entity guarded by its check columns (`check.rs`): the block's
//! header, the column checks, the key's type and filter, the SQL names, and the parts of
//! `impl diesel_occ::Tracking` that do not depend on how the write is guarded.
//!
//! Every path starts from `__occ`, the runtime's `__private` module as [`block_header`]
//! imports it.

use proc_macro2::TokenStream;
use quote::{quote, quote_spanned};
use syn::spanned::Spanned;

use crate::ast::{Entity, Field};

/// The `use`s that open a block of generated code: the runtime as `__occ`, Diesel's
/// expression methods, and the table when [`Entity::table_import`] names it by its last
/// segment. Spelled out at every use, these paths were a third of the derive's tokens.
pub(crate) fn block_header(entity: &Entity<'_>) -> TokenStream {
    let table_import = entity.table_import();
    quote! {
        use ::diesel_occ::__private as __occ;
        use ::diesel_occ::__private::diesel::prelude::{
            BoolExpressionMethods as _, ExpressionMethods as _, QueryDsl as _,
        };
        #table_import
    }
}

/// A compile error when the entity (or a reference to it) is also Diesel's
/// `AsChangeset`: Diesel's `save_changes` and `update(&entity).set(&entity)` would write
/// it without the token check and store the token it read, winding the row's token
/// back. The error names the trait below, which names `save_checked`.
///
/// The check is the "ambiguous if implemented" trick of the runtime's trait: `check`
/// resolves to the one impl for every type, or is ambiguous (a compile error) when the
/// second impl applies too.
pub(crate) fn refuse_diesel_changeset(ident: &syn::Ident) -> TokenStream {
    let refused = quote!(
        __occ::versioned_entities_are_written_with_save_checked_not_AsChangeset<
            _,
        >
    );
    quote! {
        #[allow(dead_code)]
        fn __occ_refuse_diesel_changeset() {
            <#ident as #refused>::check();
            <&'static #ident as #refused>::check();
        }
    }
}

/// `T` as a bind parameter of its column's SQL type.
///
/// The SQL type comes from the column, not from `T: AsExpression<_>`, so the generated
/// types stay well-formed when `T` does not fit the column and that mistake is reported
/// once, by [`column_checks`], instead of by every statement that binds it. For the types
/// Diesel maps, this is the very type `T: AsExpression<_>` names (see
/// `diesel_occ::__private::Bound`).
pub(crate) fn bound(table: &syn::Path, col: &syn::Ident, ty: &syn::Type) -> TokenStream {
    quote_spanned!(ty.span()=> __occ::Bound<#table::#col, #ty>)
}

/// One check per bound column, spanned on the field's type: a field whose type does not
/// fit its column is reported there, once, with a message saying so.
pub(crate) fn column_checks<'a>(
    table: &syn::Path,
    columns: impl Iterator<Item = (&'a syn::Ident, &'a syn::Type)>,
) -> TokenStream {
    let checks = columns
        .map(|(col, ty)| quote_spanned!(ty.span()=> __occ::check_column::<#ty, #table::#col>();));
    quote! {
        const _: fn() = || {
            #(#checks)*
        };
    }
}

/// The key's Diesel columns: a column, or a tuple of them for a composite key.
pub(crate) fn key_columns(table: &syn::Path, keys: &[&Field<'_>]) -> TokenStream {
    let columns: Vec<_> = keys.iter().map(|f| &f.column).collect();
    if let [only] = columns.as_slice() {
        quote!(#table::#only)
    } else {
        quote!((#(#table::#columns,)*))
    }
}

/// The key's Rust type (a field's type, or a tuple of them for a composite key), and
/// the `key` and `key_values` methods of `impl Versioned` that read it.
pub(crate) struct KeyShape {
    pub(crate) ty: TokenStream,
    pub(crate) methods: TokenStream,
}

/// The key's type, and its methods: `key` reads it from `self`, `key_values` prints its
/// parts.
pub(crate) fn key_shape(keys: &[&Field<'_>]) -> KeyShape {
    let (ty, read, parts) = if let [only] = keys {
        let (ty, ident) = (only.ty, only.ident);
        (
            quote!(#ty),
            quote!(::std::clone::Clone::clone(&self.#ident)),
            vec![quote!(key)],
        )
    } else {
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
    };
    let methods = quote! {
        #[inline]
        fn key(&self) -> Self::Key {
            #read
        }

        #[inline]
        fn key_values(key: &Self::Key) -> ::std::vec::Vec<::std::string::String> {
            __occ::key_values(&[#(#parts),*])
        }
    };
    KeyShape { ty, methods }
}

/// `col_a = key.0 AND col_b = key.1 ...`, its type and its expression over `key`.
pub(crate) fn key_filter(
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
        let bound = bound(table, col, ty);
        (
            quote!(#dsl::Eq<#table::#col, #bound>),
            quote!(#table::#col.eq(<#bound>::new(#value))),
        )
    });
    let (mut ty, mut expr) = parts.next().expect("validated: at least one key column");
    for (part_ty, part_expr) in parts {
        ty = quote!(#dsl::And<#ty, #part_ty>);
        expr = quote!(#expr.and(#part_expr));
    }
    (ty, expr)
}

/// The names `impl Versioned` states: `TABLE_NAME` (the table module's), the token and
/// key columns' `Column::NAME` (their `#[sql_name]`), and the table's SQL name, which
/// only a rendering of the table gives (its `#[sql_name]` and schema), done by the
/// runtime.
pub(crate) fn sql_names(
    table: &syn::Path,
    token_col: &syn::Ident,
    keys: &[&Field<'_>],
) -> TokenStream {
    let table_name = table
        .segments
        .last()
        .map(|s| s.ident.to_string())
        .unwrap_or_default();
    let column = quote!(__occ::diesel::Column);
    let key_cols = keys.iter().map(|f| &f.column);
    quote! {
        const TABLE_NAME: &'static str = #table_name;
        const TOKEN_COLUMN: &'static str = <#table::#token_col as #column>::NAME;
        const KEY_COLUMNS: &'static [&'static str] = &[#(<#table::#key_cols as #column>::NAME),*];

        fn sql_table() -> __occ::TableName {
            static NAME: ::std::sync::OnceLock<__occ::RenderedTableName> =
                ::std::sync::OnceLock::new();
            NAME.get_or_init(|| {
                __occ::render_table_name::<#table::table>(<Self as __occ::Versioned>::TABLE_NAME)
            })
            .names()
        }
    }
}

/// What a `Tracking` impl builds per written field: the comparison with the original
/// that marks it changed, and the assignment a tracked save makes when the field is
/// among those it writes (its type and its expression).
pub(crate) struct TrackedFields {
    pub(crate) compares: Vec<TokenStream>,
    pub(crate) set_tys: Vec<TokenStream>,
    pub(crate) set_exprs: Vec<TokenStream>,
}

/// The [`TrackedFields`] of `written`, in order: the `i`-th is bit `i` of `Fields`.
pub(crate) fn tracked_fields(
    table: &syn::Path,
    written: &[&Field<'_>],
    dsl: &TokenStream,
) -> TrackedFields {
    let mut compares = Vec::new();
    let mut set_tys = Vec::new();
    let mut set_exprs = Vec::new();
    for (i, f) in written.iter().enumerate() {
        let (field, col, ty) = (f.ident, &f.column, f.ty);
        // Spanned on the field's type: a type without `PartialEq` is reported there.
        compares.push(quote_spanned! {ty.span()=>
            if !<#ty as ::std::cmp::PartialEq>::eq(&self.#field, &original.#field) {
                // `#i` counts the written fields, at most 64 (valid.rs): never an error.
                changed = changed.with_index(#i).unwrap_or(changed);
            }
        });
        let bound = bound(table, col, ty);
        set_tys.push(
            quote_spanned!(ty.span()=> ::std::option::Option<#dsl::Eq<#table::#col, #bound>>),
        );
        set_exprs.push(quote_spanned!(ty.span()=> fields.contains_index(#i).then(|| #table::#col.eq(<#bound>::new(::std::clone::Clone::clone(&self.#field))))));
    }
    TrackedFields {
        compares,
        set_tys,
        set_exprs,
    }
}

/// How a tracked save of some fields is written, which differs between the two kinds
/// of entity: the statement's type, the body of `fields_update_statement` (over
/// `original`, `fields` and `fresh`), and any further items of the impl.
pub(crate) struct TrackedUpdate {
    pub(crate) ty: TokenStream,
    pub(crate) body: TokenStream,
    pub(crate) more: TokenStream,
}

/// `impl diesel_occ::Tracking`: the written fields' names, their comparison and copy,
/// and the guarded UPDATE of a chosen set of them as `update` writes it.
pub(crate) fn tracking_impl(
    ident: &syn::Ident,
    written: &[&Field<'_>],
    compares: &[TokenStream],
    update: TrackedUpdate,
) -> TokenStream {
    let names = written.iter().map(|f| f.ident.to_string());
    let indices: Vec<_> = (0..written.len()).collect();
    let idents: Vec<_> = written.iter().map(|f| f.ident).collect();
    let TrackedUpdate { ty, body, more } = update;
    quote! {
        #[automatically_derived]
        impl __occ::Tracking for #ident {
            const FIELDS: &'static [&'static str] = &[#(#names),*];
            type FieldsUpdateStatement = #ty;

            #[allow(unused_mut)]
            #[inline]
            fn changed_from(&self, original: &Self) -> __occ::Fields<Self> {
                let _ = original;
                let mut changed = __occ::Fields::<Self>::none();
                #(#compares)*
                changed
            }

            #[inline]
            fn copy_fields(&mut self, from: &Self, fields: __occ::Fields<Self>) {
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
                fields: __occ::Fields<Self>,
                fresh: &Self::Token,
            ) -> Self::FieldsUpdateStatement {
                #body
            }

            #more
        }
    }
}
