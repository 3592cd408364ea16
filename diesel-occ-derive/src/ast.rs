//! A typed view of the derive input: the struct, its table and its columns.

use proc_macro2::TokenStream;
use quote::{ToTokens, quote};
use syn::{Data, DeriveInput, Fields, FieldsNamed, Ident, Path, Type};

use crate::attr::{self, ContainerAttrs, FieldAttrs};

pub(crate) struct Entity<'a> {
    pub(crate) input: &'a DeriveInput,
    /// The table's module as the generated code names it: its last segment when
    /// [`Entity::table_import`] brings it into the generated block's scope.
    pub(crate) table: Path,
    /// The full path of a table named from the crate root, `self` or `super`
    /// (`crate::schema::users`): the generated block imports it once (see
    /// [`Entity::table_import`]) instead of spelling it out at every column.
    table_import: Option<Path>,
    /// Primary key columns as Diesel names them, in declaration order.
    pub(crate) primary_key: Vec<Ident>,
    /// No `primary_key(...)` was given: the key is Diesel's default, `id`.
    pub(crate) default_key: bool,
    pub(crate) fields: Vec<Field<'a>>,
    /// An `#[occ(...)]` was misplaced or malformed (and already reported).
    pub(crate) invalid_occ: bool,
    /// `#[occ(track)]`: also implement `diesel_occ::Tracking`.
    pub(crate) track: bool,
}

pub(crate) struct Field<'a> {
    pub(crate) ident: &'a Ident,
    pub(crate) ty: &'a Type,
    /// The Diesel column: `#[diesel(column_name = ...)]` or the field's own name.
    pub(crate) column: Ident,
    pub(crate) attrs: FieldAttrs,
    pub(crate) treat_none_as_null: bool,
}

impl<'a> Field<'a> {
    pub(crate) fn is_token(&self) -> bool {
        self.attrs.version.is_some()
    }

    /// `#[occ(check)]`: a column whose value as read guards a versionless entity's writes.
    pub(crate) fn is_check(&self) -> bool {
        self.attrs.check.is_some()
    }

    /// Reads a named field and its attributes; `treat_none_as_null` is the struct's.
    fn from_syn(
        field: &'a syn::Field,
        treat_none_as_null: bool,
        errors: &mut Vec<syn::Error>,
    ) -> Self {
        let ident = field.ident.as_ref().expect("named fields have identifiers");
        let attrs = attr::field(&field.attrs, errors);
        Field {
            ident,
            ty: &field.ty,
            column: attrs.column_name.clone().unwrap_or_else(|| ident.clone()),
            treat_none_as_null: attrs.treat_none_as_null.unwrap_or(treat_none_as_null),
            attrs,
        }
    }

    /// `Some(T)` when the field is `Option<T>` (matched syntactically, as Diesel does).
    pub(crate) fn option_inner(&self) -> Option<&'a Type> {
        option_inner(self.ty)
    }
}

impl<'a> Entity<'a> {
    /// Reads the input; shape errors (enum, tuple struct) end the derive early.
    pub(crate) fn from_input(
        input: &'a DeriveInput,
        errors: &mut Vec<syn::Error>,
    ) -> Result<Self, syn::Error> {
        let named = named_fields(input)?;
        let ContainerAttrs {
            table_name,
            primary_key,
            treat_none_as_null,
            track,
            misplaced_occ,
        } = attr::container(&input.attrs, errors);
        let (table, table_import) = table_in_scope(
            table_name.unwrap_or_else(|| infer_table_name(&input.ident)),
            input,
        );
        let default_key = primary_key.is_none();
        let primary_key = primary_key.unwrap_or_else(|| vec![Ident::new("id", input.ident.span())]);
        let fields = named
            .named
            .iter()
            .map(|field| Field::from_syn(field, treat_none_as_null, errors))
            .collect::<Vec<_>>();
        let invalid_occ = misplaced_occ || fields.iter().any(|f| f.attrs.invalid_occ);
        Ok(Entity {
            input,
            table,
            table_import,
            primary_key,
            default_key,
            fields,
            invalid_occ,
            track: track.is_some(),
        })
    }

    /// `use crate::schema::users;`: the import of [`Entity::table`] that opens each block of
    /// generated code naming the table, or nothing when the path is used whole.
    pub(crate) fn table_import(&self) -> TokenStream {
        match &self.table_import {
            Some(path) => quote!(use #path;),
            None => TokenStream::new(),
        }
    }

    /// No `#[occ(version)]` field, and `#[occ(check)]` fields instead: the entity is
    /// guarded by its check columns' values as read, and always tracked.
    pub(crate) fn is_versionless(&self) -> bool {
        !self.fields.iter().any(Field::is_token) && self.fields.iter().any(Field::is_check)
    }

    /// The `#[occ(check)]` fields, in declaration order.
    pub(crate) fn check_fields(&self) -> Vec<&Field<'a>> {
        self.fields.iter().filter(|f| f.is_check()).collect()
    }

    /// `#[occ(track)]`, or implied by `#[occ(check)]`: implement `diesel_occ::Tracking`.
    pub(crate) fn is_tracked(&self) -> bool {
        self.track || self.is_versionless()
    }

    pub(crate) fn token(&self) -> &Field<'a> {
        self.fields
            .iter()
            .find(|f| f.is_token())
            .expect("validated: exactly one token field")
    }

    /// Key fields, in the order of `primary_key(...)`.
    pub(crate) fn key_fields(&self) -> Vec<&Field<'a>> {
        self.primary_key
            .iter()
            .filter_map(|key| self.fields.iter().find(|f| &f.column == key))
            .collect()
    }

    pub(crate) fn is_key(&self, field: &Field<'_>) -> bool {
        self.primary_key.contains(&field.column)
    }

    /// The fields a checked save writes: neither key nor token nor skipped.
    pub(crate) fn written(&self) -> Vec<&Field<'a>> {
        self.fields
            .iter()
            .filter(|f| {
                !f.is_token()
                    && !self.is_key(f)
                    && !f.attrs.skip_update
                    && f.attrs.occ_skip.is_none()
            })
            .collect()
    }
}

/// The struct's named fields, or an error pointing at the tuple fields, or at
/// `struct Name` / `enum Name` / `union Name`.
fn named_fields(input: &DeriveInput) -> Result<&FieldsNamed, syn::Error> {
    let ident = &input.ident;
    match &input.data {
        Data::Struct(data) => match &data.fields {
            Fields::Named(named) => Ok(named),
            Fields::Unnamed(unnamed) => Err(not_named(unnamed)),
            Fields::Unit => {
                let keyword = &data.struct_token;
                Err(not_named(quote!(#keyword #ident)))
            }
        },
        Data::Enum(data) => {
            let keyword = &data.enum_token;
            Err(not_named(quote!(#keyword #ident)))
        }
        Data::Union(data) => {
            let keyword = &data.union_token;
            Err(not_named(quote!(#keyword #ident)))
        }
    }
}

fn not_named(tokens: impl ToTokens) -> syn::Error {
    syn::Error::new_spanned(
        tokens,
        "#[derive(Versioned)] supports only structs with named fields\n\
         help: declare the entity as `struct Name { id: i32, #[occ(version)] version: i32, .. }`",
    )
}

/// The short name of a table path that means the same in every edition and every scope
/// (it starts with `crate`, `self`, `super` or `::`), and the path to import. Other
/// paths are kept whole, since a `use` of them could resolve elsewhere, and so is a
/// table whose name the struct also uses for itself, in its generics or in a field's
/// type, which the import would shadow.
fn table_in_scope(table: Path, input: &DeriveInput) -> (Path, Option<Path>) {
    let rooted = table.leading_colon.is_some()
        || table.segments.first().is_some_and(|first| {
            first.ident == "crate" || first.ident == "self" || first.ident == "super"
        });
    let short = match table.segments.last() {
        Some(last) if rooted && table.segments.len() > 1 && last.arguments.is_none() => {
            last.ident.clone()
        }
        _ => return (table, None),
    };
    let shadows = input.ident == short
        || mentions(input.generics.to_token_stream(), &short)
        || match &input.data {
            Data::Struct(data) => data
                .fields
                .iter()
                .any(|field| mentions(field.ty.to_token_stream(), &short)),
            _ => true,
        };
    if shadows {
        (table, None)
    } else {
        (short.into(), Some(table))
    }
}

/// `tokens` hold the identifier `ident`, at any depth.
fn mentions(tokens: TokenStream, ident: &Ident) -> bool {
    tokens.into_iter().any(|tree| match tree {
        proc_macro2::TokenTree::Ident(found) => found == *ident,
        proc_macro2::TokenTree::Group(group) => mentions(group.stream(), ident),
        _ => false,
    })
}

/// Diesel's default: the struct name in snake case with an `s` appended.
fn infer_table_name(ident: &Ident) -> Path {
    let mut snake = String::new();
    for (i, ch) in ident.to_string().chars().enumerate() {
        if ch.is_uppercase() {
            if i > 0 {
                snake.push('_');
            }
            snake.extend(ch.to_lowercase());
        } else {
            snake.push(ch);
        }
    }
    snake.push('s');
    Ident::new(&snake, ident.span()).into()
}

fn option_inner(mut ty: &Type) -> Option<&Type> {
    while let Type::Group(syn::TypeGroup { elem, .. }) | Type::Paren(syn::TypeParen { elem, .. }) =
        ty
    {
        ty = elem;
    }
    let Type::Path(path) = ty else { return None };
    let last = path.path.segments.last()?;
    if last.ident != "Option" {
        return None;
    }
    match &last.arguments {
        syn::PathArguments::AngleBracketed(args) if args.args.len() == 1 => match &args.args[0] {
            syn::GenericArgument::Type(inner) => Some(inner),
            _ => None,
        },
        _ => None,
    }
}
