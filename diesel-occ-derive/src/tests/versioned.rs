//! `#[derive(Versioned)]`: one case per token kind and per attribute, and the invalid
//! inputs with the stubs of `fallback.rs`.

use proc_macro2::TokenStream;
use quote::quote;

fn check(name: &str, input: TokenStream) {
    super::expand_with(name, "Versioned", crate::derive_versioned_inner, input);
}

/// The smallest entity, with `token` as the type of its token field.
fn stock(token: TokenStream) -> TokenStream {
    quote! {
        #[diesel(table_name = stock)]
        struct Stock {
            id: i32,
            available: i32,
            #[occ(version)]
            version: #token,
        }
    }
}

// Token kinds: the expansion is the same code over the field's type, except for a
// database-generated token and a declared precision.

#[test]
fn token_i16() {
    check("token_i16", stock(quote!(i16)));
}

#[test]
fn token_i32() {
    check("token_i32", stock(quote!(i32)));
}

#[test]
fn token_i64() {
    check("token_i64", stock(quote!(i64)));
}

#[test]
fn token_uuid() {
    check("token_uuid", stock(quote!(uuid::Uuid)));
}

#[test]
fn token_uuid_token() {
    check("token_uuid_token", stock(quote!(diesel_occ::UuidToken)));
}

#[test]
fn token_naive_datetime() {
    check("token_naive_datetime", stock(quote!(chrono::NaiveDateTime)));
}

/// `precision = N`: `TOKEN_PRECISION` and a constant that rejects a non-timestamp token.
#[test]
fn token_datetime_utc_with_precision() {
    check(
        "token_datetime_utc_with_precision",
        quote! {
            #[diesel(table_name = stock)]
            struct Stock {
                id: i32,
                available: i32,
                #[occ(version, precision = 6)]
                updated_at: chrono::DateTime<chrono::Utc>,
            }
        },
    );
}

/// `generated`: the UPDATE reads the token back with `RETURNING` and never assigns it.
#[test]
fn token_xmin_generated() {
    check(
        "token_xmin_generated",
        quote! {
            #[diesel(table_name = stock)]
            struct Stock {
                id: i32,
                available: i32,
                #[occ(version, generated)]
                xmin: diesel_occ::xmin::XminToken,
            }
        },
    );
}

// Container attributes.

/// No `table_name` and no `primary_key`: Diesel's defaults, `stock_items` and `id`.
#[test]
fn defaults_table_name_and_key() {
    check(
        "defaults_table_name_and_key",
        quote! {
            struct StockItem {
                id: i32,
                available: i32,
                #[occ(version)]
                version: i32,
            }
        },
    );
}

#[test]
fn table_name_path() {
    check(
        "table_name_path",
        quote! {
            #[diesel(table_name = crate::schema::stock)]
            struct Stock {
                id: i32,
                available: i32,
                #[occ(version)]
                version: i32,
            }
        },
    );
}

/// A table named from the crate root is imported once and named by its last segment,
/// unless a field's type or a generic bound names a module of that name, which the
/// import would shadow.
#[test]
fn table_import_unless_the_struct_names_it_elsewhere() {
    let imported = crate::derive_versioned_inner(quote! {
        #[diesel(table_name = crate::schema::stock)]
        struct Stock { id: i32, #[occ(version)] version: i32 }
    })
    .to_string();
    assert!(
        imported.contains("use crate :: schema :: stock ;"),
        "{imported}"
    );
    assert!(imported.contains("stock :: version"), "{imported}");

    let whole = crate::derive_versioned_inner(quote! {
        #[diesel(table_name = crate::schema::kinds)]
        struct Kind { id: i32, kind: kinds::Kind, #[occ(version)] version: i32 }
    })
    .to_string();
    assert!(!whole.contains("use crate :: schema :: kinds"), "{whole}");
    assert!(
        whole.contains("crate :: schema :: kinds :: version"),
        "{whole}"
    );

    let relative = crate::derive_versioned_inner(quote! {
        #[diesel(table_name = schema::stock)]
        struct Stock { id: i32, #[occ(version)] version: i32 }
    })
    .to_string();
    assert!(!relative.contains("use schema"), "{relative}");

    let bounded = crate::derive_changeset_columns_inner(quote! {
        #[diesel(table_name = crate::schema::kinds)]
        struct KindForm<T: kinds::Named> { name: T }
    })
    .to_string();
    assert!(
        !bounded.contains("use crate :: schema :: kinds"),
        "{bounded}"
    );
    assert!(
        bounded.contains("crate :: schema :: kinds :: name"),
        "{bounded}"
    );
}

/// A single key that is not `id`.
#[test]
fn primary_key_named() {
    check(
        "primary_key_named",
        quote! {
            #[diesel(table_name = stock, primary_key(sku))]
            struct Stock {
                sku: String,
                available: i32,
                #[occ(version)]
                version: i32,
            }
        },
    );
}

/// A composite key: the key is a tuple, in the order of `primary_key(...)`.
#[test]
fn primary_key_composite() {
    check(
        "primary_key_composite",
        quote! {
            #[diesel(table_name = stock, primary_key(warehouse, sku))]
            struct Stock {
                sku: String,
                warehouse: i32,
                available: i32,
                #[occ(version)]
                version: i64,
            }
        },
    );
}

/// `Option` fields: `None` leaves the column alone, so the save's text varies and only
/// the texts with all or none of them are kept prepared.
#[test]
fn option_fields() {
    check(
        "option_fields",
        quote! {
            #[diesel(table_name = notes)]
            struct Note {
                id: i32,
                title: Option<String>,
                body: Option<String>,
                #[occ(version)]
                version: i32,
            }
        },
    );
}

/// `treat_none_as_null` on the struct, overridden on one field.
#[test]
fn treat_none_as_null() {
    check(
        "treat_none_as_null",
        quote! {
            #[diesel(table_name = notes, treat_none_as_null = true)]
            struct Note {
                id: i32,
                title: Option<String>,
                #[diesel(treat_none_as_null = false)]
                body: Option<String>,
                #[occ(version)]
                version: i32,
            }
        },
    );
}

/// `#[occ(track)]`: also `Tracking`.
#[test]
fn track() {
    check(
        "track",
        quote! {
            #[diesel(table_name = notes)]
            #[occ(track)]
            struct Note {
                id: i32,
                title: String,
                tag: Option<String>,
                #[occ(version)]
                version: i64,
            }
        },
    );
}

/// No version column: `#[occ(check)]` fields, compared NULL-safely with the values as
/// read; tracked without `#[occ(track)]`, no full save, no token assignment.
#[test]
fn check_columns_without_version() {
    check(
        "check_columns_without_version",
        quote! {
            #[diesel(table_name = shelves)]
            struct Shelf {
                id: i32,
                #[occ(check)]
                label: Option<String>,
                #[occ(check)]
                qty: i32,
                note: String,
            }
        },
    );
}

/// `#[occ(track)]` with a database-generated token: the tracked UPDATE returns it too.
#[test]
fn track_generated_token() {
    check(
        "track_generated_token",
        quote! {
            #[diesel(table_name = notes)]
            #[occ(track)]
            struct Note {
                id: i32,
                title: String,
                #[occ(version, generated)]
                xmin: diesel_occ::xmin::XminToken,
            }
        },
    );
}

/// Diesel keys the derive does not own are skipped whole, values with commas included.
#[test]
fn foreign_diesel_keys() {
    check(
        "foreign_diesel_keys",
        quote! {
            #[diesel(table_name = stock, check_for_backend(diesel::pg::Pg, diesel::sqlite::Sqlite))]
            struct Stock {
                id: i32,
                #[diesel(serialize_as = Wrapper<i32, u8>, deserialize_as = Wrapper<i32, u8>)]
                available: i32,
                #[occ(version)]
                version: i32,
            }
        },
    );
}

// Field attributes.

/// `column_name` on a written field, the key and the token: the SQL names come from the
/// columns (`Column::NAME`, which carries a `table!`'s `#[sql_name]`).
#[test]
fn column_name() {
    check(
        "column_name",
        quote! {
            #[diesel(table_name = stock, primary_key(stock_id))]
            struct Stock {
                #[diesel(column_name = stock_id)]
                id: i32,
                #[diesel(column_name = qty)]
                available: i32,
                #[occ(version)]
                #[diesel(column_name = rev)]
                revision: i32,
            }
        },
    );
}

/// `#[occ(skip)]` and `#[diesel(skip_update)]`: read, never written by a save.
#[test]
fn skipped_columns() {
    check(
        "skipped_columns",
        quote! {
            #[diesel(table_name = stock)]
            struct Stock {
                id: i32,
                available: i32,
                #[occ(skip)]
                views: i64,
                #[diesel(skip_update)]
                created_by: String,
                #[occ(version)]
                version: i32,
            }
        },
    );
}

// Invalid inputs: the errors and the stubs of `fallback.rs`.

#[test]
fn error_unknown_occ_key() {
    check(
        "error_unknown_occ_key",
        quote! {
            #[diesel(table_name = stock)]
            struct Stock {
                id: i32,
                available: i32,
                #[occ(verison)]
                version: i32,
            }
        },
    );
}

#[test]
fn error_no_token_field() {
    check(
        "error_no_token_field",
        quote! {
            #[diesel(table_name = stock)]
            struct Stock {
                id: i32,
                available: i32,
                version: i32,
            }
        },
    );
}

#[test]
fn error_two_token_fields() {
    check(
        "error_two_token_fields",
        quote! {
            #[diesel(table_name = stock)]
            struct Stock {
                id: i32,
                #[occ(version)]
                available: i32,
                #[occ(version)]
                version: i32,
            }
        },
    );
}

/// Independent mistakes are all reported, in one expansion.
#[test]
fn error_several_mistakes() {
    check(
        "error_several_mistakes",
        quote! {
            #[diesel(table_name = stock, primary_key(id, version))]
            #[occ(tracked)]
            struct Stock {
                id: i32,
                #[occ(version, precision = 9)]
                available: i32,
                #[occ(version)]
                version: Option<i32>,
            }
        },
    );
}

/// A generic struct: the stubs carry its generics.
#[test]
fn error_generic_struct() {
    check(
        "error_generic_struct",
        quote! {
            #[diesel(table_name = stock)]
            struct Stock<T: Clone> where T: Send {
                id: i32,
                available: T,
                #[occ(version)]
                version: i32,
            }
        },
    );
}

#[test]
fn error_enum() {
    check(
        "error_enum",
        quote! {
            enum Stock {
                InStock { id: i32, version: i32 },
            }
        },
    );
}
