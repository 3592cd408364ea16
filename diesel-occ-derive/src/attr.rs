//! Attribute parsing: our own `#[occ(...)]` strictly, Diesel's `#[diesel(...)]` leniently.

use proc_macro2::Span;
use syn::meta::ParseNestedMeta;
use syn::{Attribute, Ident, LitBool, Path, Token};

/// What the container's attributes say.
#[derive(Default)]
pub(crate) struct ContainerAttrs {
    pub(crate) table_name: Option<Path>,
    pub(crate) primary_key: Option<Vec<Ident>>,
    pub(crate) treat_none_as_null: bool,
}

/// What one field's attributes say.
#[derive(Default)]
pub(crate) struct FieldAttrs {
    /// Span of the `version` key of `#[occ(version)]`, when present.
    pub(crate) version: Option<Span>,
    /// `#[occ(skip)]`: the column is never written by a checked save.
    pub(crate) occ_skip: bool,
    pub(crate) column_name: Option<Ident>,
    pub(crate) skip_update: bool,
    pub(crate) treat_none_as_null: Option<bool>,
    /// Span of `#[diesel(embed)]`, which has no single column.
    pub(crate) embed: Option<Span>,
}

const OCC_FIELD_KEYS: &str = "`version`, `skip`";

pub(crate) fn container(attrs: &[Attribute], errors: &mut Vec<syn::Error>) -> ContainerAttrs {
    let mut out = ContainerAttrs::default();
    for attr in attrs {
        if attr.path().is_ident("diesel") {
            let parsed = attr.parse_nested_meta(|meta| {
                if meta.path.is_ident("table_name") {
                    out.table_name = Some(meta.value()?.parse()?);
                } else if meta.path.is_ident("primary_key") {
                    let mut keys = Vec::new();
                    meta.parse_nested_meta(|key| {
                        keys.push(key.path.require_ident()?.clone());
                        Ok(())
                    })?;
                    out.primary_key = Some(keys);
                } else if meta.path.is_ident("treat_none_as_null") {
                    out.treat_none_as_null = meta.value()?.parse::<LitBool>()?.value;
                } else {
                    skip_value(&meta)?;
                }
                Ok(())
            });
            errors.extend(parsed.err());
        } else if attr.path().is_ident("occ") {
            errors.push(syn::Error::new_spanned(
                attr,
                "#[occ(...)] has no container keys\n\
                 help: put `#[occ(version)]` on the token field instead",
            ));
        }
    }
    out
}

pub(crate) fn field(attrs: &[Attribute], errors: &mut Vec<syn::Error>) -> FieldAttrs {
    let mut out = FieldAttrs::default();
    for attr in attrs {
        if attr.path().is_ident("occ") {
            let parsed = attr.parse_nested_meta(|meta| {
                if meta.path.is_ident("version") {
                    out.version = Some(meta.path.require_ident()?.span());
                } else if meta.path.is_ident("skip") {
                    out.occ_skip = true;
                } else {
                    let key = meta
                        .path
                        .get_ident()
                        .map_or_else(|| "this key".to_owned(), |i| format!("`{i}`"));
                    return Err(meta.error(format!(
                        "unknown key {key} in #[occ(...)]: expected one of {OCC_FIELD_KEYS}\n\
                         help: mark the concurrency token with `#[occ(version)]`"
                    )));
                }
                Ok(())
            });
            errors.extend(parsed.err());
        } else if attr.path().is_ident("diesel") {
            let parsed = attr.parse_nested_meta(|meta| {
                if meta.path.is_ident("column_name") {
                    out.column_name = Some(meta.value()?.parse()?);
                } else if meta.path.is_ident("skip_update") {
                    out.skip_update = true;
                } else if meta.path.is_ident("treat_none_as_null") {
                    out.treat_none_as_null = Some(meta.value()?.parse::<LitBool>()?.value);
                } else if meta.path.is_ident("embed") {
                    out.embed = Some(meta.path.require_ident()?.span());
                } else {
                    skip_value(&meta)?;
                }
                Ok(())
            });
            errors.extend(parsed.err());
        }
    }
    out
}

/// Consumes the value of a `#[diesel(...)]` key we do not own (`key = value` or
/// `key(...)`), so Diesel stays the judge of its own attributes.
fn skip_value(meta: &ParseNestedMeta<'_>) -> syn::Result<()> {
    if meta.input.peek(Token![=]) {
        meta.input.parse::<Token![=]>()?;
        meta.input.step(|cursor| {
            let mut rest = *cursor;
            while let Some((tt, next)) = rest.token_tree() {
                if matches!(&tt, proc_macro2::TokenTree::Punct(p) if p.as_char() == ',') {
                    return Ok(((), rest));
                }
                rest = next;
            }
            Ok(((), rest))
        })
    } else if meta.input.peek(syn::token::Paren) {
        let content;
        syn::parenthesized!(content in meta.input);
        content.parse::<proc_macro2::TokenStream>()?;
        Ok(())
    } else {
        Ok(())
    }
}
