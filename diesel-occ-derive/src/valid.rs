//! The rules a `Versioned` entity must follow, each reported at the offending span.

use crate::ast::{Entity, Field};

/// The width of `diesel_occ::Fields`, a bit set.
const MAX_TRACKED_FIELDS: usize = 64;

/// Every broken rule, in a fixed order (the struct, its token, each field, the tracked
/// fields' count, the key): independent mistakes are all reported.
pub(crate) fn validate(entity: &Entity<'_>, errors: &mut Vec<syn::Error>) {
    if !entity.input.generics.params.is_empty() {
        errors.push(syn::Error::new_spanned(
            &entity.input.generics,
            "#[derive(Versioned)] does not support generic structs\n\
             help: derive it on a concrete entity type",
        ));
    }
    let has_token = validate_token_count(entity, errors);
    for field in &entity.fields {
        validate_check(entity, field, has_token, errors);
        validate_token(entity, field, errors);
        validate_token_options(field, errors);
        if let Some(span) = field.attrs.embed {
            errors.push(syn::Error::new(
                span,
                "#[diesel(embed)] fields are not supported by #[derive(Versioned)]\n\
                 help: flatten the embedded columns into the entity",
            ));
        }
    }
    validate_tracked_count(entity, errors);
    validate_key_columns(entity, errors);
}

/// One token field, or none with check columns; whether there is one.
fn validate_token_count(entity: &Entity<'_>, errors: &mut Vec<syn::Error>) -> bool {
    let tokens: Vec<_> = entity.fields.iter().filter(|f| f.is_token()).collect();
    match tokens.as_slice() {
        // A malformed `#[occ(...)]` was probably meant to mark the token: one error is enough.
        [] if entity.invalid_occ || entity.is_versionless() => {}
        [] => errors.push(syn::Error::new(
            entity.input.ident.span(),
            "no field is marked as the concurrency token\n\
             help: add `#[occ(version)]` to exactly one field, e.g. `#[occ(version)] version: i32`, \
             or, without a version column, `#[occ(check)]` to the fields whose concurrent \
             change must be detected",
        )),
        [_first, rest @ ..] => {
            for extra in rest {
                errors.push(syn::Error::new(
                    extra.attrs.version.expect("token field"),
                    "only one field can be the concurrency token\n\
                     help: remove `#[occ(version)]` from all fields but one",
                ));
            }
        }
    }
    !tokens.is_empty()
}

/// `#[occ(check)]`: only without a token, and never on a key column.
fn validate_check(
    entity: &Entity<'_>,
    field: &Field<'_>,
    has_token: bool,
    errors: &mut Vec<syn::Error>,
) {
    let Some(span) = field.attrs.check else {
        return;
    };
    if has_token {
        errors.push(syn::Error::new(
            span,
            "`check` is for an entity without a version column, and this one has \
             `#[occ(version)]`\n\
             help: remove `#[occ(check)]`: the version column already detects every change",
        ));
    } else if entity.is_key(field) {
        errors.push(syn::Error::new(
            span,
            format!(
                "the key column `{}` cannot be a check column\n\
                 help: remove `#[occ(check)]`: the key is in every checked write's `WHERE` already",
                field.ident
            ),
        ));
    }
}

/// `#[occ(version)]`: not on a key column, not an `Option`, not skipped.
fn validate_token(entity: &Entity<'_>, field: &Field<'_>, errors: &mut Vec<syn::Error>) {
    let Some(span) = field.attrs.version else {
        return;
    };
    if entity.is_key(field) {
        errors.push(syn::Error::new(
            span,
            format!(
                "the concurrency token `{}` cannot be part of the primary key\n\
                 help: keep the key stable and store the token in its own column",
                field.ident
            ),
        ));
    }
    if field.option_inner().is_some() {
        errors.push(syn::Error::new_spanned(
            field.ty,
            "the concurrency token cannot be an `Option`\n\
             help: make the token column NOT NULL and use the plain type",
        ));
    }
    if field.attrs.occ_skip.is_some() {
        errors.push(syn::Error::new(
            span,
            "the concurrency token cannot be `#[occ(skip)]`\n\
             help: remove `skip`: every checked save writes a fresh token",
        ));
    }
}

/// `generated` and `precision` describe the token: only beside `version`, and not
/// together.
fn validate_token_options(field: &Field<'_>, errors: &mut Vec<syn::Error>) {
    if let (Some(span), None) = (field.attrs.generated, field.attrs.version) {
        errors.push(syn::Error::new(
            span,
            "`generated` marks a database-generated concurrency token\n\
             help: write `#[occ(version, generated)]` on the token field",
        ));
    }
    if let Some((_, span)) = field.attrs.precision {
        if field.attrs.version.is_none() {
            errors.push(syn::Error::new(
                span,
                "`precision` describes the concurrency token's column\n\
                 help: write `#[occ(version, precision = N)]` on the token field",
            ));
        } else if field.attrs.generated.is_some() {
            errors.push(syn::Error::new(
                span,
                "a database-generated token has no precision to declare\n\
                 help: remove `precision`: the database assigns the token",
            ));
        }
    }
}

/// A tracked entity's written fields fit in `diesel_occ::Fields`.
fn validate_tracked_count(entity: &Entity<'_>, errors: &mut Vec<syn::Error>) {
    if entity.is_tracked() && entity.written().len() > MAX_TRACKED_FIELDS {
        errors.push(syn::Error::new(
            entity.input.ident.span(),
            format!(
                "#[occ(track)] supports at most {MAX_TRACKED_FIELDS} written fields\n\
                 help: split the entity, or mark columns the application never writes \
                 with `#[occ(skip)]`"
            ),
        ));
    }
}

/// Every primary key column is a field's column.
fn validate_key_columns(entity: &Entity<'_>, errors: &mut Vec<syn::Error>) {
    let ident = &entity.input.ident;
    for key in &entity.primary_key {
        if entity.fields.iter().any(|f| &f.column == key) {
            continue;
        }
        let message = if entity.default_key {
            format!(
                "`{ident}` has no `id` field, Diesel's default primary key\n\
                 help: name the key columns with `#[diesel(primary_key(...))]`"
            )
        } else {
            format!(
                "primary key column `{key}` is not a field of `{ident}`\n\
                 help: add a field for `{key}`, or put `#[diesel(column_name = {key})]` \
                 on the field that holds it"
            )
        };
        errors.push(syn::Error::new(key.span(), message));
    }
}
