//! Code generation for an entity with a version token (`#[occ(version)]`):
//! `impl diesel_occ::Versioned` and `impl diesel_occ::VersionedParts` describing the
//! entity, plus `impl diesel_occ::Tracking` under `#[occ(track)]`.

use proc_macro2::TokenStream;
use quote::{format_ident, quote, quote_spanned};
use syn::Ident;
use syn::spanned::Spanned;

use crate::ast::{Entity, Field};
use crate::fragment::{
    TrackedFields, TrackedUpdate, block_header, bound, column_checks, key_columns, key_filter,
    key_shape, refuse_diesel_changeset, sql_names, tracked_fields, tracking_impl,
};

/// The whole expansion of a valid entity with a token field, in one `const _` block.
pub(crate) fn expand(entity: &Entity<'_>) -> TokenStream {
    let token_entity = TokenEntity::new(entity);
    let block_header = block_header(entity);
    let refuse_diesel_changeset = refuse_diesel_changeset(token_entity.ident);
    let column_checks = token_entity.column_checks();
    let precision_check = token_entity.precision_check();
    let versioned_parts = token_entity.versioned_parts_impl();
    let assigned_token = token_entity.assigned_token_impl();
    let returning_statement = token_entity.full_save_returning_statement();
    let tracking = entity.track.then(|| token_entity.tracking_impl());
    let versioned = token_entity.versioned_impl();
    quote! {
        const _: () = {
            #block_header

            #refuse_diesel_changeset
            #column_checks
            #precision_check

            #versioned_parts

            #assigned_token
            #returning_statement
            #tracking

            #versioned
        };
    }
}

/// What the impls of a token entity are built from, read once from the entity.
struct TokenEntity<'e, 'a> {
    entity: &'e Entity<'a>,
    ident: &'e syn::Ident,
    table: &'e syn::Path,
    token: &'e Field<'a>,
    keys: Vec<&'e Field<'a>>,
    /// The fields a save writes: neither key nor token nor skipped.
    written: Vec<&'e Field<'a>>,
    /// `#[occ(version, generated)]`: the database assigns the token, and an UPDATE reads
    /// it back with `RETURNING` instead of writing a fresh one.
    generated: bool,
    /// The full save's `SET`: one `(type, expression)` per written field.
    changes: Vec<(TokenStream, TokenStream)>,
}

impl<'e, 'a> TokenEntity<'e, 'a> {
    fn new(entity: &'e Entity<'a>) -> Self {
        let dsl = quote!(__occ::diesel::dsl);
        let token = entity.token();
        let written = entity.written();
        let changes = written
            .iter()
            .map(|f| change(&entity.table, f, &dsl))
            .collect();
        TokenEntity {
            entity,
            ident: &entity.input.ident,
            table: &entity.table,
            token,
            keys: entity.key_fields(),
            written,
            generated: token.attrs.generated.is_some(),
            changes,
        }
    }

    /// The token field's type, spanned on it, so "`String` cannot be a concurrency
    /// token" points there.
    fn token_ty(&self) -> TokenStream {
        let ty = self.token.ty;
        quote_spanned!(ty.span()=> #ty)
    }

    /// The token as a bind parameter of the token column.
    fn token_bound(&self) -> TokenStream {
        bound(self.table, &self.token.column, self.token.ty)
    }

    fn change_tys(&self) -> Vec<&TokenStream> {
        self.changes.iter().map(|(ty, _)| ty).collect()
    }

    fn change_exprs(&self) -> Vec<&TokenStream> {
        self.changes.iter().map(|(_, expr)| expr).collect()
    }

    /// The key, token and written columns, each with the type bound to it.
    fn column_checks(&self) -> TokenStream {
        let columns = self
            .keys
            .iter()
            .chain([&self.token])
            .map(|f| (&f.column, f.ty))
            .chain(self.written.iter().map(|f| (&f.column, written_type(f))));
        column_checks(self.table, columns)
    }

    /// `precision = N`: a free constant, evaluated even by `cargo check`, that rejects a
    /// token that is not a timestamp.
    fn precision_check(&self) -> Option<TokenStream> {
        let token_ty = self.token_ty();
        self.token.attrs.precision.map(|(_, span)| {
            quote_spanned! {span=>
                const _: () = ::std::assert!(
                    ::std::matches!(
                        <#token_ty as __occ::VersionToken>::KIND,
                        __occ::TokenKind::Timestamp
                    ),
                    "`precision` applies to timestamp tokens only: remove it from this token"
                );
            }
        })
    }

    /// `TOKEN_PRECISION`, declared only when written, so that a token type without a
    /// precision keeps the trait's default.
    fn precision_const(&self) -> Option<TokenStream> {
        self.token.attrs.precision.map(|(digits, span)| {
            quote_spanned! {span=>
                const TOKEN_PRECISION: u8 = #digits;
            }
        })
    }

    /// A checked insert writes the token: not one the database generates.
    fn assigned_token_impl(&self) -> Option<TokenStream> {
        let ident = self.ident;
        (!self.generated).then(|| {
            quote! {
                #[automatically_derived]
                impl __occ::AssignedToken for #ident {}
            }
        })
    }

    /// `impl VersionedParts`: the guarded row, the token's assignment and the upsert's
    /// `DO UPDATE SET`, from which the statements of `impl Versioned` are built.
    fn versioned_parts_impl(&self) -> TokenStream {
        let (ident, table, token_col) = (self.ident, self.table, &self.token.column);
        let guarded_expr = self.guarded_expr();
        let (assignment_ty, assignment_expr) = self.token_assignment();
        let (changes_ty, changes_expr) = self.upsert_changes();
        let conflict_target = key_columns(table, &self.keys);
        let generated = self.generated;
        let changes_text_cached = self.changes_text_cached();
        let insert_text_cached = self.insert_text_cached();
        quote! {
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

                #[inline]
                fn changes_text_cached(&self) -> bool {
                    #changes_text_cached
                }

                #[inline]
                fn insert_text_cached(&self) -> bool {
                    #insert_text_cached
                }
            }
        }
    }

    /// The row found by key, and `token = <original>`, which on SQLite also matches the
    /// other text forms of a timestamp token.
    fn guarded_expr(&self) -> TokenStream {
        let (table, token_col, token_field) = (self.table, &self.token.column, self.token.ident);
        quote! {
            <Self as __occ::Versioned>::find_query(
                <Self as __occ::Versioned>::key(self),
            )
            .filter(__occ::TokenEq::new(
                #table::#token_col,
                ::std::clone::Clone::clone(&self.#token_field),
                <Self as __occ::Versioned>::token_text_forms,
            ))
        }
    }

    /// `token = <fresh>`, its type and its expression; a generated token is never
    /// assigned.
    fn token_assignment(&self) -> (TokenStream, TokenStream) {
        if self.generated {
            return not_assigned();
        }
        let dsl = quote!(__occ::diesel::dsl);
        let (table, token_col) = (self.table, &self.token.column);
        let token_bound = self.token_bound();
        (
            quote!(#dsl::Eq<#table::#token_col, #token_bound>),
            quote!(#table::#token_col.eq(<#token_bound>::new(::std::clone::Clone::clone(fresh)))),
        )
    }

    /// Every written column and the fresh token: the `DO UPDATE SET` of an upsert. A
    /// generated token has none, so an upsert of such an entity does not compile.
    fn upsert_changes(&self) -> (TokenStream, TokenStream) {
        if self.generated {
            return not_assigned();
        }
        let parts = quote!(__occ::VersionedParts);
        let (change_tys, change_exprs) = (self.change_tys(), self.change_exprs());
        (
            quote!((#(#change_tys,)* <Self as #parts>::TokenAssignment,)),
            quote!((#(#change_exprs,)* <Self as #parts>::token_assignment(fresh),)),
        )
    }

    /// The full save's UPDATE, its type and its expression over `fresh`. A generated
    /// token is never assigned: the UPDATE reads it back with RETURNING. Otherwise the
    /// save is the upsert's `SET` on the guarded row: both come from the parts.
    fn update_statement(&self) -> (TokenStream, TokenStream) {
        let parts = quote!(__occ::VersionedParts);
        if self.generated {
            let (table, token_col) = (self.table, &self.token.column);
            let ident = self.ident;
            let change_exprs = self.change_exprs();
            return (
                quote!(__occ::ReturningUpdate<#ident>),
                quote! {
                    let _ = fresh;
                    __occ::ReturningUpdate::new(
                        __occ::diesel::update(#parts::guarded(self))
                            .set((#(#change_exprs,)*))
                            .returning(#table::#token_col),
                    )
                },
            );
        }
        (
            quote! {
                __occ::CachedUpdate<
                    <Self as #parts>::Guarded,
                    <Self as #parts>::Changes,
                >
            },
            quote! {
                __occ::CachedUpdate::new(#parts::guarded(self), #parts::changes(self, fresh))
                    .cached_if(#parts::changes_text_cached(self))
            },
        )
    }

    /// Whether the full save's text is kept prepared: an `Option` field skipped as
    /// `None` leaves its column out of the text, so only the texts with all of them or
    /// none of them are, and an entity adds at most two prepared statements to a
    /// connection.
    fn changes_text_cached(&self) -> TokenStream {
        let skippable = self
            .written
            .iter()
            .filter(|f| !std::ptr::eq(written_type(f), f.ty))
            .map(|f| f.ident);
        all_or_none(skippable)
    }

    /// Whether an upsert's insert of the entity is kept prepared: SQLite leaves a `None`
    /// field's column out of an INSERT, so the same rule over every `Option` field.
    fn insert_text_cached(&self) -> TokenStream {
        let optional = self
            .entity
            .fields
            .iter()
            .filter(|f| f.option_inner().is_some())
            .map(|f| f.ident);
        all_or_none(optional)
    }

    /// `impl ReturningStatement<AllFields>` of a generated token: the full save's type.
    fn full_save_returning_statement(&self) -> Option<TokenStream> {
        self.generated
            .then(|| self.returning_statement(quote!(__occ::AllFields), &self.change_tys()))
    }

    /// `impl ReturningStatement<Which>` for an entity with a database-generated token: the
    /// type of its `UPDATE ... SET <changes> WHERE <guard> RETURNING token`.
    fn returning_statement(
        &self,
        which: TokenStream,
        change_tys: &[impl quote::ToTokens],
    ) -> TokenStream {
        let dsl = quote!(__occ::diesel::dsl);
        let (ident, table, token_col) = (self.ident, self.table, &self.token.column);
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

    /// `impl Versioned`: the types, the names, the token's accessors and the key; the
    /// statements come from [`TokenEntity::statement_methods`].
    fn versioned_impl(&self) -> TokenStream {
        let dsl = quote!(__occ::diesel::dsl);
        let parts = quote!(__occ::VersionedParts);
        let (ident, table) = (self.ident, self.table);
        let (token_col, token_field) = (&self.token.column, self.token.ident);
        let token_ty = self.token_ty();
        let key = key_shape(&self.keys);
        let (key_ty, key_methods) = (&key.ty, &key.methods);
        let (key_filter_ty, key_filter_expr) = key_filter(self.entity, &self.keys, &dsl);
        let (update_ty, update_expr) = self.update_statement();
        let values_row = self.values_row();
        let sql_names = sql_names(table, token_col, &self.keys);
        let precision = self.precision_const();
        let statement_methods = self.statement_methods(&update_expr, &key_filter_expr);
        quote! {
            #[automatically_derived]
            impl __occ::Versioned for #ident {
                type Table = #table::table;
                type Token = #token_ty;
                type Key = #key_ty;
                type UpdateStatement = #update_ty;
                type DeleteStatement = #dsl::delete<<Self as #parts>::Guarded>;
                type TokenQuery = #dsl::Select<Self::FindQuery, #table::#token_col>;
                type FindQuery = #dsl::Filter<#table::table, #key_filter_ty>;
                #values_row

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

                #key_methods
                #statement_methods
            }
        }
    }

    /// The methods of `impl Versioned` that build its statements: the full save
    /// (`update_expr` over `fresh`), the delete, the token's query and the row's (by
    /// `key_filter_expr` over `key`).
    fn statement_methods(
        &self,
        update_expr: &TokenStream,
        key_filter_expr: &TokenStream,
    ) -> TokenStream {
        let parts = quote!(__occ::VersionedParts);
        let (table, token_col) = (self.table, &self.token.column);
        quote! {
            #[inline]
            fn update_statement(&self, fresh: &Self::Token) -> Self::UpdateStatement {
                #update_expr
            }

            #[inline]
            fn delete_statement(&self) -> Self::DeleteStatement {
                __occ::diesel::delete(#parts::guarded(self))
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
    }

    /// `type ValuesRow`, `VALUES_COLUMNS` and `values_row`: the entity's row in a batch's
    /// `VALUES` list, its binds typed by their columns as the single save's are, in the
    /// order `(keys, written columns, expected token, fresh token)`. A generated token is
    /// read back per entity: such a batch runs one UPDATE each, and has no row.
    fn values_row(&self) -> TokenStream {
        if self.generated {
            return quote!(
                type ValuesRow = ();
            );
        }
        let (token_field, token_name) = (self.token.ident, self.column_name(&self.token.column));
        let token_bound = self.token_bound();
        let (key_tys, key_exprs) = self.key_binds();
        let key_names = self.keys.iter().map(|f| self.column_name(&f.column));
        let WrittenBinds {
            tys: value_tys,
            exprs: value_exprs,
            columns: written_columns,
        } = self.written_binds();
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

    /// The column's SQL name, `Column::NAME`.
    fn column_name(&self, col: &syn::Ident) -> TokenStream {
        let table = self.table;
        quote!(<#table::#col as __occ::diesel::Column>::NAME)
    }

    /// The key's binds in a batch row: their types and their expressions over `self`.
    fn key_binds(&self) -> (Vec<TokenStream>, Vec<TokenStream>) {
        self.keys
            .iter()
            .map(|f| {
                let (ident, bound) = (f.ident, bound(self.table, &f.column, f.ty));
                (
                    bound.clone(),
                    quote!(<#bound>::new(::std::clone::Clone::clone(&self.#ident))),
                )
            })
            .unzip()
    }

    /// The written fields' binds in a batch row. An `Option` field whose `None` leaves
    /// its column alone is a `Skippable` (a presence flag and the value).
    fn written_binds(&self) -> WrittenBinds {
        let table = self.table;
        let mut binds = WrittenBinds::default();
        for f in &self.written {
            let (ident, col, span) = (f.ident, &f.column, f.ty.span());
            let value_ty = written_type(f);
            let column = self.column_name(col);
            let ty = if std::ptr::eq(value_ty, f.ty) {
                binds
                    .columns
                    .push(quote!(__occ::WrittenColumn::always(#column)));
                bound(table, col, value_ty)
            } else {
                binds
                    .columns
                    .push(quote!(__occ::WrittenColumn::unless_none(#column)));
                quote_spanned!(span=> __occ::SkippableOf<#table::#col, #value_ty>)
            };
            binds
                .exprs
                .push(quote_spanned!(span=> <#ty>::new(::std::clone::Clone::clone(&self.#ident))));
            binds.tys.push(ty);
        }
        binds
    }

    /// `impl diesel_occ::Tracking` (`#[occ(track)]`): per-field comparison, copy, and the
    /// guarded UPDATE of a chosen set of fields, which assigns the fresh token or, for a
    /// generated one, reads it back.
    fn tracking_impl(&self) -> TokenStream {
        let dsl = quote!(__occ::diesel::dsl);
        let fields = tracked_fields(self.table, &self.written, &dsl);
        let (update, returning) = if self.generated {
            (
                self.tracked_returning_update(&fields),
                self.returning_statement(quote!(__occ::ChosenFields), &fields.set_tys),
            )
        } else {
            (self.tracked_cached_update(&fields), TokenStream::new())
        };
        let tracking = tracking_impl(self.ident, &self.written, &fields.compares, update);
        quote! {
            #returning

            #tracking
        }
    }

    /// A tracked save with a generated token: `UPDATE ... RETURNING token`.
    fn tracked_returning_update(&self, fields: &TrackedFields) -> TrackedUpdate {
        let (ident, table, token_col) = (self.ident, self.table, &self.token.column);
        let parts = quote!(__occ::VersionedParts);
        let set_exprs = &fields.set_exprs;
        TrackedUpdate {
            ty: quote!(__occ::ReturningUpdate<#ident, __occ::ChosenFields>),
            body: quote! {
                // The guard's token is the original one: a save leaves it untouched.
                let _ = (original, fields);
                let _ = fresh;
                __occ::ReturningUpdate::new(
                    __occ::diesel::update(#parts::guarded(self))
                        .set((#(#set_exprs,)*))
                        .returning(#table::#token_col),
                )
            },
            more: TokenStream::new(),
        }
    }

    /// A tracked save that assigns the fresh token, kept prepared for the full set of
    /// fields only (one text per set).
    fn tracked_cached_update(&self, fields: &TrackedFields) -> TrackedUpdate {
        let parts = quote!(__occ::VersionedParts);
        let (set_tys, set_exprs) = (&fields.set_tys, &fields.set_exprs);
        TrackedUpdate {
            ty: quote! {
                __occ::CachedUpdate<<Self as #parts>::Guarded, (#(#set_tys,)* <Self as #parts>::TokenAssignment,)>
            },
            body: quote! {
                // The guard's token is the original one: a save leaves it untouched.
                let _ = (original, fields);
                __occ::CachedUpdate::new(
                    #parts::guarded(self),
                    (#(#set_exprs,)* <Self as #parts>::token_assignment(fresh),),
                )
                .cached_if(fields == __occ::Fields::all())
            },
            more: TokenStream::new(),
        }
    }
}

/// The binds of the written fields in a batch row: their types, their expressions over
/// `self`, and how each column is written (`WrittenColumn`).
#[derive(Default)]
struct WrittenBinds {
    tys: Vec<TokenStream>,
    exprs: Vec<TokenStream>,
    columns: Vec<TokenStream>,
}

/// `NotAssigned` and its expression over `fresh`: the type of a token assignment or an
/// upsert that must not compile.
fn not_assigned() -> (TokenStream, TokenStream) {
    (
        quote!(__occ::NotAssigned),
        quote!({
            let _ = fresh;
            __occ::NotAssigned
        }),
    )
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

/// True when the `Option` fields named are all `Some` or all `None` (true for none):
/// a statement that leaves out its `None` fields then has one of two texts.
fn all_or_none<'a>(fields: impl Iterator<Item = &'a Ident>) -> TokenStream {
    let fields: Vec<_> = fields.collect();
    if fields.is_empty() {
        return quote!(true);
    }
    quote! {
        let present = [#(::std::option::Option::is_some(&self.#fields)),*];
        present.iter().all(|p| *p) || !present.iter().any(|p| *p)
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
