//! Code generation: `impl diesel_occ::Versioned` and `impl diesel_occ::VersionedParts`
//! describing the entity, plus `impl diesel_occ::Tracking` under `#[occ(track)]`.

use proc_macro2::TokenStream;
use quote::{format_ident, quote, quote_spanned};
use syn::DeriveInput;
use syn::spanned::Spanned;

use crate::ast::{Entity, Field};
use crate::{check, fallback, valid};

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
    if errors.is_empty() && entity.is_versionless() {
        check::expand(&entity)
    } else if errors.is_empty() {
        expand(&entity)
    } else {
        fallback::expand(input, errors)
    }
}

fn expand(entity: &Entity<'_>) -> TokenStream {
    let diesel = quote!(__occ::diesel);
    let dsl = quote!(#diesel::dsl);
    let parts = quote!(__occ::VersionedParts);
    let ident = &entity.input.ident;
    let table = &entity.table;
    let block_header = block_header(entity);
    let table_name = table
        .segments
        .last()
        .map(|s| s.ident.to_string())
        .unwrap_or_default();

    let token = entity.token();
    let token_field = token.ident;
    let token_col = &token.column;
    // Spanned on the field's type, so "`String` cannot be a concurrency token" points there.
    let token_ty = {
        let ty = token.ty;
        quote_spanned!(ty.span()=> #ty)
    };

    let token_bound = bound(table, token_col, token.ty);

    let keys = entity.key_fields();
    let (key_ty, key_expr, key_parts) = key_shape(&keys);
    let sql_names = sql_names(table, token_col, &keys);
    let (key_filter_ty, key_filter_expr) = key_filter(entity, &keys, &dsl);

    let written = entity.written();
    let changes: Vec<_> = written.iter().map(|f| change(table, f, &dsl)).collect();
    let change_tys: Vec<_> = changes.iter().map(|(ty, _)| ty).collect();
    let change_exprs: Vec<_> = changes.iter().map(|(_, expr)| expr).collect();
    // An `Option` field skipped as `None` leaves its column out of the full save's text:
    // only the texts with all of them or none of them are kept prepared, so an entity
    // adds at most two prepared statements to a connection.
    let skippable: Vec<_> = written
        .iter()
        .filter(|f| !std::ptr::eq(written_type(f), f.ty))
        .map(|f| f.ident)
        .collect();
    let cached = if skippable.is_empty() {
        TokenStream::new()
    } else {
        quote! {
            .cached_if({
                let present = [#(::std::option::Option::is_some(&self.#skippable)),*];
                present.iter().all(|p| *p) || !present.iter().any(|p| *p)
            })
        }
    };

    let bound_columns = keys
        .iter()
        .chain([&token])
        .map(|f| (&f.column, f.ty))
        .chain(written.iter().map(|f| (&f.column, written_type(f))));
    let column_checks = column_checks(table, bound_columns);

    // The row found by key, and `token = <original>`, which on SQLite also matches the
    // other text forms of a timestamp token.
    let guarded_expr = quote! {
        <Self as __occ::Versioned>::find_query(
            <Self as __occ::Versioned>::key(self),
        )
        .filter(__occ::TokenEq::new(
            #table::#token_col,
            ::std::clone::Clone::clone(&self.#token_field),
            <Self as __occ::Versioned>::token_text_forms,
        ))
    };
    let generated = token.attrs.generated.is_some();
    // Declared only when written, so that a token type without a precision keeps the
    // trait's default.
    let precision = token.attrs.precision.map(|(digits, span)| {
        quote_spanned! {span=>
            const TOKEN_PRECISION: u8 = #digits;
        }
    });
    // A free constant, evaluated even by `cargo check`.
    let precision_check = token.attrs.precision.map(|(_, span)| {
        quote_spanned! {span=>
            const _: () = ::std::assert!(
                ::std::matches!(
                    <#token_ty as __occ::VersionToken>::KIND,
                    __occ::TokenKind::Timestamp
                ),
                "`precision` applies to timestamp tokens only: remove it from this token"
            );
        }
    });

    // A generated token is never assigned: the UPDATE reads it back with RETURNING.
    let (update_ty, update_expr) = if generated {
        (
            quote!(__occ::ReturningUpdate<#ident>),
            quote! {
                let _ = fresh;
                __occ::ReturningUpdate::new(
                    #diesel::update(#parts::guarded(self))
                        .set((#(#change_exprs,)*))
                        .returning(#table::#token_col),
                )
            },
        )
    } else {
        // The save is the upsert's `SET` on the guarded row: both come from the parts.
        (
            quote! {
                __occ::CachedUpdate<
                    <Self as #parts>::Guarded,
                    <Self as #parts>::Changes,
                >
            },
            quote! {
                __occ::CachedUpdate::new(#parts::guarded(self), #parts::changes(self, fresh))
                #cached
            },
        )
    };
    // Every written column and the fresh token: the `DO UPDATE SET` of an upsert. A
    // generated token has none, so an upsert of such an entity does not compile.
    let (changes_ty, changes_expr) = if generated {
        (
            quote!(__occ::NotAssigned),
            quote!({
                let _ = fresh;
                __occ::NotAssigned
            }),
        )
    } else {
        (
            quote!((#(#change_tys,)* <Self as #parts>::TokenAssignment,)),
            quote!((#(#change_exprs,)* <Self as #parts>::token_assignment(fresh),)),
        )
    };
    let conflict_target = key_columns(table, &keys);
    let (assignment_ty, assignment_expr) = if generated {
        (
            quote!(__occ::NotAssigned),
            quote!({
                let _ = fresh;
                __occ::NotAssigned
            }),
        )
    } else {
        (
            quote!(#dsl::Eq<#table::#token_col, #token_bound>),
            quote!(#table::#token_col.eq(<#token_bound>::new(::std::clone::Clone::clone(fresh)))),
        )
    };
    // A generated token is read back per entity: such a batch runs one UPDATE each.
    let values = if generated {
        quote!(
            type ValuesRow = ();
        )
    } else {
        values_row(entity, &keys, &written)
    };
    let returning_statement =
        generated.then(|| returning_statement(entity, quote!(__occ::AllFields), &change_tys));
    let tracking = if entity.track {
        tracking(entity, &written)
    } else {
        TokenStream::new()
    };

    let refuse_diesel_changeset = refuse_diesel_changeset(ident);
    // A checked insert writes the token: not one the database generates.
    let assigned_token = (!generated).then(|| {
        quote! {
            #[automatically_derived]
            impl __occ::AssignedToken for #ident {}
        }
    });

    quote! {
        const _: () = {
            #block_header

            #refuse_diesel_changeset
            #column_checks
            #precision_check

            #[automatically_derived]
            impl __occ::VersionedParts for #ident {
                type TokenColumn = #table::#token_col;
                type Guarded = __occ::KeyGuarded<Self>;
                type TokenAssignment = #assignment_ty;
                type Changes = #changes_ty;
                type KeyColumns = #conflict_target;
                const GENERATED_TOKEN: bool = #generated;

                #[inline]
                fn guarded(&self) -> Self::Guarded {
                    #guarded_expr
                }

                #[inline]
                fn token_assignment(fresh: &Self::Token) -> Self::TokenAssignment {
                    #assignment_expr
                }

                #[inline]
                fn changes(&self, fresh: &Self::Token) -> Self::Changes {
                    #changes_expr
                }
            }

            #assigned_token
            #returning_statement
            #tracking

            #[automatically_derived]
            impl __occ::Versioned for #ident {
                type Table = #table::table;
                type Token = #token_ty;
                type Key = #key_ty;
                type UpdateStatement = #update_ty;
                type DeleteStatement = #dsl::delete<<Self as #parts>::Guarded>;
                type TokenQuery = #dsl::Select<Self::FindQuery, #table::#token_col>;
                type FindQuery = #dsl::Filter<#table::table, #key_filter_ty>;
                #values

                const TABLE_NAME: &'static str = #table_name;
                #sql_names
                #precision

                #[inline]
                fn token(&self) -> &Self::Token {
                    &self.#token_field
                }

                #[inline]
                fn set_token(&mut self, token: Self::Token) {
                    self.#token_field = token;
                }

                #[inline]
                fn key(&self) -> Self::Key {
                    #key_expr
                }

                #[inline]
                fn key_values(key: &Self::Key) -> ::std::vec::Vec<::std::string::String> {
                    __occ::key_values(&[#(#key_parts),*])
                }

                #[inline]
                fn update_statement(&self, fresh: &Self::Token) -> Self::UpdateStatement {
                    #update_expr
                }

                #[inline]
                fn delete_statement(&self) -> Self::DeleteStatement {
                    #diesel::delete(#parts::guarded(self))
                }

                #[inline]
                fn token_query(key: Self::Key) -> Self::TokenQuery {
                    Self::find_query(key).select(#table::#token_col)
                }

                #[inline]
                fn find_query(key: Self::Key) -> Self::FindQuery {
                    #table::table.filter(#key_filter_expr)
                }
            }
        };
    }
}

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

/// `type ValuesRow`, `VALUES_COLUMNS` and `values_row`: the entity's row in a batch's
/// `VALUES` list, its binds typed by their columns as the single save's are, in the
/// order `(keys, written columns, expected token, fresh token)`. An `Option` field whose
/// `None` leaves its column alone is a `Skippable` (a presence flag and the value).
fn values_row(entity: &Entity<'_>, keys: &[&Field<'_>], written: &[&Field<'_>]) -> TokenStream {
    let diesel = quote!(__occ::diesel);
    let table = &entity.table;
    let token = entity.token();
    let (token_field, token_col) = (token.ident, &token.column);
    let token_bound = bound(table, token_col, token.ty);
    let name = |col: &syn::Ident| quote!(<#table::#col as #diesel::Column>::NAME);

    let (key_tys, key_exprs): (Vec<_>, Vec<_>) = keys
        .iter()
        .map(|f| {
            let (ident, bound) = (f.ident, bound(table, &f.column, f.ty));
            (
                bound.clone(),
                quote!(<#bound>::new(::std::clone::Clone::clone(&self.#ident))),
            )
        })
        .unzip();
    let key_names = keys.iter().map(|f| name(&f.column));

    let mut value_tys = Vec::new();
    let mut value_exprs = Vec::new();
    let mut written_columns = Vec::new();
    for f in written {
        let (ident, col, span) = (f.ident, &f.column, f.ty.span());
        let value_ty = written_type(f);
        let column = name(col);
        let ty = if std::ptr::eq(value_ty, f.ty) {
            written_columns.push(quote!(__occ::WrittenColumn::always(#column)));
            bound(table, col, value_ty)
        } else {
            written_columns.push(quote!(__occ::WrittenColumn::unless_none(#column)));
            quote_spanned!(span=> __occ::SkippableOf<#table::#col, #value_ty>)
        };
        value_exprs
            .push(quote_spanned!(span=> <#ty>::new(::std::clone::Clone::clone(&self.#ident))));
        value_tys.push(ty);
    }
    let token_name = name(token_col);

    quote! {
        type ValuesRow = (
            (#(#key_tys,)*),
            (#(#value_tys,)*),
            #token_bound,
            #token_bound,
        );

        const VALUES_COLUMNS: ::std::option::Option<__occ::ValuesColumns> = {
            const KEYS: &[&str] = &[#(#key_names),*];
            const WRITTEN: &[__occ::WrittenColumn] = &[#(#written_columns),*];
            ::std::option::Option::Some(__occ::ValuesColumns::new(
                KEYS,
                WRITTEN,
                #token_name,
            ))
        };

        #[inline]
        fn values_row(&self, fresh: &Self::Token) -> ::std::option::Option<Self::ValuesRow> {
            ::std::option::Option::Some((
                (#(#key_exprs,)*),
                (#(#value_exprs,)*),
                <#token_bound>::new(::std::clone::Clone::clone(&self.#token_field)),
                <#token_bound>::new(::std::clone::Clone::clone(fresh)),
            ))
        }
    }
}

/// What the `Tracking` impls of both kinds of entity (token and versionless) build per
/// written field: the comparison with the original that marks it changed, and the
/// assignment a tracked save makes when the field is among those it writes (its type
/// and its expression).
pub(crate) fn tracked_fields(
    table: &syn::Path,
    written: &[&Field<'_>],
    dsl: &TokenStream,
) -> (Vec<TokenStream>, Vec<TokenStream>, Vec<TokenStream>) {
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
    (compares, set_tys, set_exprs)
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

/// The key's type, how to read it from `self`, and its parts from a `key` binding.
pub(crate) fn key_shape(keys: &[&Field<'_>]) -> (TokenStream, TokenStream, Vec<TokenStream>) {
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

/// One `SET column = value` of the changeset: its type and its expression.
fn change(table: &syn::Path, field: &Field<'_>, dsl: &TokenStream) -> (TokenStream, TokenStream) {
    let (ident, col, span) = (field.ident, &field.column, field.ty.span());
    let value_ty = written_type(field);
    let bound = bound(table, col, value_ty);
    if std::ptr::eq(value_ty, field.ty) {
        (
            quote_spanned!(span=> #dsl::Eq<#table::#col, #bound>),
            quote_spanned!(span=> #table::#col.eq(<#bound>::new(::std::clone::Clone::clone(&self.#ident)))),
        )
    } else {
        // Diesel's rule: `None` leaves the column alone unless `treat_none_as_null`.
        let value = format_ident!("value");
        (
            quote_spanned!(span=> ::std::option::Option<#dsl::Eq<#table::#col, #bound>>),
            quote_spanned!(span=> ::std::clone::Clone::clone(&self.#ident).map(|#value| #table::#col.eq(<#bound>::new(#value)))),
        )
    }
}

/// The type bound to the field's column: the field's type, or `T` of an `Option<T>` whose
/// `None` means "leave the column alone" (no `treat_none_as_null`).
fn written_type<'a>(field: &Field<'a>) -> &'a syn::Type {
    match field.option_inner() {
        Some(inner) if !field.treat_none_as_null => inner,
        _ => field.ty,
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

/// `impl ReturningStatement<Which>` for an entity with a database-generated token: the
/// type of its `UPDATE ... SET <changes> WHERE <guard> RETURNING token`.
fn returning_statement(
    entity: &Entity<'_>,
    which: TokenStream,
    change_tys: &[impl quote::ToTokens],
) -> TokenStream {
    let dsl = quote!(__occ::diesel::dsl);
    let ident = &entity.input.ident;
    let table = &entity.table;
    let token_col = &entity.token().column;
    quote! {
        #[automatically_derived]
        impl __occ::ReturningStatement<#which> for #ident {
            type Statement = #dsl::Returning<
                #dsl::Update<<Self as __occ::VersionedParts>::Guarded, (#(#change_tys,)*)>,
                #table::#token_col,
            >;
        }
    }
}

/// `impl diesel_occ::Tracking` (`#[occ(track)]`): per-field comparison, copy, and the
/// guarded UPDATE of a chosen set of fields.
fn tracking(entity: &Entity<'_>, written: &[&Field<'_>]) -> TokenStream {
    let parts = quote!(__occ::VersionedParts);
    let diesel = quote!(__occ::diesel);
    let dsl = quote!(#diesel::dsl);
    let ident = &entity.input.ident;
    let table = &entity.table;
    let token = entity.token();
    let token_col = &token.column;
    let names = written.iter().map(|f| f.ident.to_string());
    let indices: Vec<_> = (0..written.len()).collect();
    let idents: Vec<_> = written.iter().map(|f| f.ident).collect();
    let (compares, set_tys, set_exprs) = tracked_fields(table, written, &dsl);
    let (statement_ty, statement_expr, returning) = if token.attrs.generated.is_some() {
        (
            quote!(__occ::ReturningUpdate<#ident, __occ::ChosenFields>),
            quote! {
                let _ = fresh;
                __occ::ReturningUpdate::new(
                    #diesel::update(#parts::guarded(self))
                        .set((#(#set_exprs,)*))
                        .returning(#table::#token_col),
                )
            },
            returning_statement(entity, quote!(__occ::ChosenFields), &set_tys),
        )
    } else {
        (
            quote! {
                __occ::CachedUpdate<<Self as #parts>::Guarded, (#(#set_tys,)* <Self as #parts>::TokenAssignment,)>
            },
            quote! {
                // One text per set of fields: only the full set is kept prepared.
                __occ::CachedUpdate::new(
                    #parts::guarded(self),
                    (#(#set_exprs,)* <Self as #parts>::token_assignment(fresh),),
                )
                .cached_if(fields == __occ::Fields::all())
            },
            TokenStream::new(),
        )
    };
    quote! {
        #returning

        #[automatically_derived]
        impl __occ::Tracking for #ident {
            const FIELDS: &'static [&'static str] = &[#(#names),*];
            type FieldsUpdateStatement = #statement_ty;

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
                // The guard's token is the original one: a save leaves it untouched.
                let _ = (original, fields);
                #statement_expr
            }
        }
    }
}

/// The SQL names `table!` declares: the token and key columns' `Column::NAME` (their
/// `#[sql_name]`), and the table's, which only a rendering of the table gives (its
/// `#[sql_name]` and schema), done by the runtime.
pub(crate) fn sql_names(
    table: &syn::Path,
    token_col: &syn::Ident,
    keys: &[&Field<'_>],
) -> TokenStream {
    let column = quote!(__occ::diesel::Column);
    let key_cols = keys.iter().map(|f| &f.column);
    quote! {
        const TOKEN_COLUMN: &'static str = <#table::#token_col as #column>::NAME;
        const KEY_COLUMNS: &'static [&'static str] = &[#(<#table::#key_cols as #column>::NAME),*];

        #[inline]
        fn sql_table_name() -> &'static str {
            __occ::sql_table_name::<#table::table>(
                <Self as __occ::Versioned>::TABLE_NAME,
            )
        }
    }
}
