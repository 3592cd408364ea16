//! Attribute parsing: our own `#[occ(...)]` strictly, Diesel's `#[diesel(...)]` leniently.

use proc_macro2::{Spacing, Span, TokenStream, TokenTree};
use quote::quote;
use syn::meta::ParseNestedMeta;
use syn::punctuated::Punctuated;
use syn::{Attribute, Ident, LitBool, LitInt, Path, Token};

/// What the container's attributes say.
#[derive(Default)]
pub(crate) struct ContainerAttrs {
    pub(crate) table_name: Option<Path>,
    pub(crate) primary_key: Option<Vec<Ident>>,
    pub(crate) treat_none_as_null: bool,
    /// Span of `track` in `#[occ(track)]`: also derive `diesel_occ::Tracking`.
    pub(crate) track: Option<Span>,
    /// An `#[occ(...)]` on the struct itself failed to parse (already reported).
    pub(crate) misplaced_occ: bool,
}

/// What one field's attributes say.
#[derive(Default)]
pub(crate) struct FieldAttrs {
    /// Span of the `version` key of `#[occ(version)]`, when present.
    pub(crate) version: Option<Span>,
    /// Span of `check` in `#[occ(check)]`: an entity without a version column compares
    /// this column's value as read in its checked writes.
    pub(crate) check: Option<Span>,
    /// Span of `skip` in `#[occ(skip)]`: the column is never written by a checked save.
    pub(crate) occ_skip: Option<Span>,
    /// Span of `generated` in `#[occ(version, generated)]`: the database assigns the
    /// token (PostgreSQL `xmin`, a trigger), which is read back with `RETURNING`.
    pub(crate) generated: Option<Span>,
    /// `precision = N` in `#[occ(version, precision = N)]`: the fractional digits of a
    /// second the timestamp token's column stores, with the literal's span.
    pub(crate) precision: Option<(u8, Span)>,
    pub(crate) column_name: Option<Ident>,
    pub(crate) skip_update: bool,
    pub(crate) treat_none_as_null: Option<bool>,
    /// Span of `#[diesel(embed)]`, which has no single column.
    pub(crate) embed: Option<Span>,
    /// An `#[occ(...)]` on this field failed to parse (already reported).
    pub(crate) invalid_occ: bool,
}

const OCC_FIELD_KEYS: &str = "`version`, `check`, `generated`, `precision`, `skip`";
const OCC_CONTAINER_KEYS: &str = "`track`";

/// The struct's `#[diesel(...)]` keys we read and its `#[occ(...)]`; errors are pushed
/// to `errors`.
pub(crate) fn container(attrs: &[Attribute], errors: &mut Vec<syn::Error>) -> ContainerAttrs {
    let mut out = ContainerAttrs::default();
    for attr in attrs {
        if attr.path().is_ident("diesel") {
            container_diesel(attr, &mut out, errors);
        } else if attr.path().is_ident("occ") {
            container_occ(attr, &mut out, errors);
        }
    }
    out
}

/// `#[diesel(table_name = ..., primary_key(...), treat_none_as_null = ...)]`, other keys
/// skipped.
fn container_diesel(attr: &Attribute, out: &mut ContainerAttrs, errors: &mut Vec<syn::Error>) {
    let parsed = attr.parse_nested_meta(|meta| {
        if meta.path.is_ident("table_name") {
            out.table_name = Some(meta.value()?.parse()?);
        } else if meta.path.is_ident("primary_key") {
            out.primary_key = Some(primary_key(&meta, errors)?);
        } else if meta.path.is_ident("treat_none_as_null") {
            out.treat_none_as_null = meta.value()?.parse::<LitBool>()?.value;
        } else {
            skip_value(&meta)?;
        }
        Ok(())
    });
    errors.extend(parsed.err());
}

/// The columns of `primary_key(a, b)`; an empty list is reported and kept.
fn primary_key(
    meta: &ParseNestedMeta<'_>,
    errors: &mut Vec<syn::Error>,
) -> syn::Result<Vec<Ident>> {
    let content;
    syn::parenthesized!(content in meta.input);
    let keys: Vec<Ident> = Punctuated::<Ident, Token![,]>::parse_terminated(&content)?
        .into_iter()
        .collect();
    if keys.is_empty() {
        errors.push(meta.error(
            "`primary_key(...)` names no column\n\
             help: list the key columns, e.g. `#[diesel(primary_key(id))]`",
        ));
    }
    Ok(keys)
}

/// `#[occ(track)]` on the struct; a field's key there is misplaced.
fn container_occ(attr: &Attribute, out: &mut ContainerAttrs, errors: &mut Vec<syn::Error>) {
    let parsed = attr.parse_nested_meta(|meta| {
        if meta.path.is_ident("track") {
            expect_no_value(&meta, "track")?;
            set_once(&mut out.track, &meta, "track", errors)
        } else if meta.path.is_ident("version")
            || meta.path.is_ident("skip")
            || meta.path.is_ident("check")
        {
            Err(meta.error(
                "`#[occ(version)]`, `#[occ(check)]` and `#[occ(skip)]` belong on a field, not on the struct\n\
                 help: put `#[occ(version)]` on the token field instead",
            ))
        } else {
            let key = meta
                .path
                .get_ident()
                .map_or_else(|| "this key".to_owned(), |i| format!("`{i}`"));
            Err(meta.error(format!(
                "unknown key {key} in #[occ(...)] on a struct: expected {OCC_CONTAINER_KEYS}\n\
                 help: write `#[occ(track)]` to derive `diesel_occ::Tracking` too"
            )))
        }
    });
    if let Err(error) = parsed {
        out.misplaced_occ = true;
        errors.push(error);
    }
}

/// A field's `#[occ(...)]` and the `#[diesel(...)]` keys we read; errors are pushed to
/// `errors`.
pub(crate) fn field(attrs: &[Attribute], errors: &mut Vec<syn::Error>) -> FieldAttrs {
    let mut out = FieldAttrs::default();
    for attr in attrs {
        if attr.path().is_ident("occ") {
            field_occ(attr, &mut out, errors);
        } else if attr.path().is_ident("diesel") {
            field_diesel(attr, &mut out, errors);
        }
    }
    out
}

/// `#[occ(version, check, generated, precision = N, skip)]` on a field.
fn field_occ(attr: &Attribute, out: &mut FieldAttrs, errors: &mut Vec<syn::Error>) {
    let parsed = attr.parse_nested_meta(|meta| {
        if meta.path.is_ident("version") {
            expect_no_value(&meta, "version")?;
            set_once(&mut out.version, &meta, "version", errors)?;
        } else if meta.path.is_ident("skip") {
            expect_no_value(&meta, "skip")?;
            set_once(&mut out.occ_skip, &meta, "skip", errors)?;
        } else if meta.path.is_ident("check") {
            expect_no_value(&meta, "check")?;
            set_once(&mut out.check, &meta, "check", errors)?;
        } else if meta.path.is_ident("generated") {
            expect_no_value(&meta, "generated")?;
            set_once(&mut out.generated, &meta, "generated", errors)?;
        } else if meta.path.is_ident("precision") {
            precision(&meta, &mut out.precision, errors)?;
        } else if meta.path.is_ident("track") {
            return Err(meta.error(
                "`track` belongs on the struct, not on a field\n\
                 help: write `#[occ(track)]` above `struct`",
            ));
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
    if let Err(error) = parsed {
        out.invalid_occ = true;
        errors.push(error);
    }
}

/// `precision = N`, `N` from 0 to [`MAX_PRECISION`], given once.
fn precision(
    meta: &ParseNestedMeta<'_>,
    out: &mut Option<(u8, Span)>,
    errors: &mut Vec<syn::Error>,
) -> syn::Result<()> {
    let literal: LitInt = meta.value().map_err(|_| precision_error(meta))?.parse()?;
    match literal.base10_parse::<u8>() {
        Ok(_) if out.is_some() => {
            errors.push(duplicate(meta, "precision", "keep one `precision = N`"));
            Ok(())
        }
        Ok(digits) if digits <= MAX_PRECISION => {
            *out = Some((digits, literal.span()));
            Ok(())
        }
        _ => Err(syn::Error::new(
            literal.span(),
            format!(
                "`precision` is the number of fractional digits of a second \
                 the column stores, 0 to {MAX_PRECISION}\n\
                 help: write `#[occ(version, precision = 0)]` for `DATETIME`, \
                 `precision = 6` for `DATETIME(6)` or PostgreSQL's `timestamp`"
            ),
        )),
    }
}

/// `#[diesel(column_name = ..., skip_update, treat_none_as_null = ..., embed)]` on a
/// field, other keys skipped.
fn field_diesel(attr: &Attribute, out: &mut FieldAttrs, errors: &mut Vec<syn::Error>) {
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

/// Consumes the value of a `#[diesel(...)]` key we do not own (`key = value` or
/// `key(...)`), so Diesel stays the judge of its own attributes. Returns what it consumed.
///
/// A value ends at the first `,` outside angle brackets, so types such as
/// `deserialize_as = Wrapper<A, B>` are skipped whole.
fn skip_value(meta: &ParseNestedMeta<'_>) -> syn::Result<TokenStream> {
    meta.input.step(|cursor| {
        let mut skipped = TokenStream::new();
        let mut rest = *cursor;
        let mut angle_depth = 0_usize;
        let mut after_dash = false;
        while let Some((tt, next)) = rest.token_tree() {
            if let TokenTree::Punct(punct) = &tt {
                match punct.as_char() {
                    ',' if angle_depth == 0 => break,
                    '<' => angle_depth += 1,
                    // The `>` of `->` closes nothing.
                    '>' if !after_dash => angle_depth = angle_depth.saturating_sub(1),
                    _ => {}
                }
                after_dash = punct.as_char() == '-' && punct.spacing() == Spacing::Joint;
            } else {
                after_dash = false;
            }
            skipped.extend([tt]);
            rest = next;
        }
        Ok((skipped, rest))
    })
}

/// The finest precision a timestamp column stores: microseconds.
const MAX_PRECISION: u8 = 6;

fn precision_error(meta: &ParseNestedMeta<'_>) -> syn::Error {
    meta.error(
        "`precision` takes the number of fractional digits the column stores\n\
         help: write `#[occ(version, precision = 0)]`",
    )
}

/// Records the span of a flag key, or reports it when the same attribute list, or an
/// earlier `#[occ(...)]` on the same item, already gave it. Parsing goes on: the key
/// itself is valid, so later keys are still checked.
fn set_once(
    slot: &mut Option<Span>,
    meta: &ParseNestedMeta<'_>,
    key: &str,
    errors: &mut Vec<syn::Error>,
) -> syn::Result<()> {
    if slot.is_some() {
        errors.push(duplicate(meta, key, &format!("remove this `{key}`")));
    } else {
        *slot = Some(meta.path.require_ident()?.span());
    }
    Ok(())
}

/// `key` given twice on one item, spanned on the second one.
fn duplicate(meta: &ParseNestedMeta<'_>, key: &str, help: &str) -> syn::Error {
    meta.error(format!(
        "duplicate `{key}` in #[occ(...)]: each key is given once\n\
         help: {help}"
    ))
}

/// Rejects a value after one of our flag keys (`version = true`, `skip(..)`).
fn expect_no_value(meta: &ParseNestedMeta<'_>, key: &str) -> syn::Result<()> {
    if meta.input.is_empty() || meta.input.peek(Token![,]) {
        return Ok(());
    }
    let path = &meta.path;
    let value = skip_value(meta)?;
    Err(syn::Error::new_spanned(
        quote!(#path #value),
        format!(
            "`{key}` in #[occ(...)] takes no value\n\
             help: write `#[occ({key})]`"
        ),
    ))
}
