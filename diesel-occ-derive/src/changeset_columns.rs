//! `#[derive(ChangesetColumns)]`: names the columns a `#[derive(AsChangeset)]` struct
//! assigns, so that diesel-occ's checked writes can prove at compile time that it
//! leaves the token column alone.
//!
//! Diesel's derive hides the columns inside its changeset type (`Assign` is not
//! nameable outside Diesel), so nothing can tell from a form's type which columns it
//! writes. This derive reads the same attributes Diesel's does and states them as the
//! one thing diesel-occ checks changesets with: `ValidGrouping` against "every column
//! but the token" (`ColumnsOtherThan`), which a tuple of the form's columns satisfies
//! exactly when none of them is the token column.

use proc_macro2::TokenStream;
use quote::{quote, quote_spanned};
use syn::DeriveInput;
use syn::spanned::Spanned;

use crate::ast::Entity;

/// `impl ValidGrouping<ColumnsOtherThan<Token>>` for the changeset, or the errors.
pub(crate) fn derive(input: &DeriveInput) -> TokenStream {
    match read_changeset(input) {
        Ok(entity) => grouping_impl(input, &entity),
        Err(errors) => errors.iter().map(syn::Error::to_compile_error).collect(),
    }
}

/// The changeset's table and columns, or its mistakes: a wrong shape alone, otherwise
/// every attribute error.
fn read_changeset(input: &DeriveInput) -> Result<Entity<'_>, Vec<syn::Error>> {
    let mut errors = Vec::new();
    let entity = Entity::from_input(input, &mut errors).map_err(|shape| vec![shape])?;
    // `#[occ(...)]` keys mean nothing on a changeset: report them rather than ignore.
    for field in &entity.fields {
        if let Some(span) = field.attrs.version.or(field.attrs.occ_skip) {
            errors.push(syn::Error::new(
                span,
                "`#[occ(...)]` belongs on the entity deriving `Versioned`, not on a changeset",
            ));
        }
    }
    if errors.is_empty() {
        Ok(entity)
    } else {
        Err(errors)
    }
}

/// What Diesel's `AsChangeset` assigns, as a tuple: every field but the primary key's
/// and the `skip_update` ones; an embedded changeset brings its own columns.
fn assigned_columns(entity: &Entity<'_>) -> TokenStream {
    let table = &entity.table;
    let assigned = entity
        .fields
        .iter()
        .filter(|f| !f.attrs.skip_update && !entity.primary_key.contains(&f.column))
        .map(|f| {
            if f.attrs.embed.is_some() {
                let ty = f.ty;
                quote_spanned!(ty.span()=> #ty)
            } else {
                let column = &f.column;
                quote_spanned!(f.ident.span()=> #table::#column)
            }
        });
    quote!((#(#assigned,)*))
}

/// True when a field assigned by Diesel's `AsChangeset` is an `Option` whose `None`
/// leaves its column out of the `SET` list (no `treat_none_as_null`).
fn has_optional_part(entity: &Entity<'_>) -> bool {
    entity.fields.iter().any(|f| {
        !f.attrs.skip_update
            && f.attrs.embed.is_none()
            && !entity.primary_key.contains(&f.column)
            && !f.treat_none_as_null
            && f.option_inner().is_some()
    })
}

/// The impl, over the struct's generics and a parameter for the token column, bounded
/// by the assigned columns' own `ValidGrouping`.
fn grouping_impl(input: &DeriveInput, entity: &Entity<'_>) -> TokenStream {
    let diesel = quote!(::diesel_occ::__private::diesel);
    let table_import = entity.table_import();
    let columns = assigned_columns(entity);
    let ident = &input.ident;
    // A copy without `Clone` (syn's `clone-impls` is off): printed and parsed back.
    let generics = &input.generics;
    let mut with_token: syn::Generics = syn::parse_quote!(#generics);
    with_token.params.push(syn::parse_quote!(__OccTokenColumn));
    let (impl_generics, _, _) = with_token.split_for_impl();
    let (_, ty_generics, where_clause) = input.generics.split_for_impl();
    let mut predicates = where_clause
        .map(|w| w.predicates.iter().map(|p| quote!(#p)).collect::<Vec<_>>())
        .unwrap_or_default();
    let grouping = quote! {
        #diesel::expression::ValidGrouping<::diesel_occ::__private::ColumnsOtherThan<__OccTokenColumn>>
    };
    predicates.push(quote!(#columns: #grouping));
    let mut is_aggregate = quote!(<#columns as #grouping>::IsAggregate);
    if has_optional_part(entity) {
        // A `None` leaves its column out: the form's text varies (see
        // `diesel_occ::statement::fixed_text`).
        let mixed =
            quote!(#diesel::expression::MixedAggregates<::diesel_occ::__private::HasOptionalParts>);
        predicates.push(quote!(#is_aggregate: #mixed));
        is_aggregate = quote!(<#is_aggregate as #mixed>::Output);
    }
    quote! {
        const _: () = {
            #table_import
            #[automatically_derived]
            impl #impl_generics #grouping for #ident #ty_generics
            where #(#predicates,)*
            {
                type IsAggregate = #is_aggregate;
            }
        };
    }
}
