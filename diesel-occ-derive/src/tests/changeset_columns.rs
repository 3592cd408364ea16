//! `#[derive(ChangesetColumns)]`: the columns Diesel's `AsChangeset` assigns, as a tuple
//! that is `ValidGrouping` against "every column but the token" only when the token
//! column is not among them.

use proc_macro2::TokenStream;
use quote::quote;

fn check(name: &str, input: TokenStream) {
    super::expand_with(
        name,
        "ChangesetColumns",
        crate::derive_changeset_columns_inner,
        input,
    );
}

/// A PATCH form: every field is a column it assigns.
#[test]
fn changeset_columns_form() {
    check(
        "changeset_columns_form",
        quote! {
            #[diesel(table_name = counters)]
            struct CounterPatch {
                value: Option<i32>,
                label: Option<Option<String>>,
            }
        },
    );
}

/// The key is skipped as Diesel's `AsChangeset` skips it, a renamed field is named by
/// its column, a `skip_update` field is not assigned, and the lifetime is kept.
#[test]
fn changeset_columns_key_renamed_and_skipped() {
    check(
        "changeset_columns_key_renamed_and_skipped",
        quote! {
            #[diesel(table_name = stock, treat_none_as_null = true)]
            struct StockForm<'a> {
                id: i32,
                #[diesel(column_name = name)]
                title: &'a str,
                note: Option<&'a str>,
                #[diesel(skip_update)]
                version: i32,
            }
        },
    );
}

/// `primary_key(...)` names the skipped columns.
#[test]
fn changeset_columns_primary_key() {
    check(
        "changeset_columns_primary_key",
        quote! {
            #[diesel(table_name = stock, primary_key(warehouse, sku))]
            struct StockForm {
                warehouse: i32,
                sku: String,
                available: i32,
            }
        },
    );
}

/// An embedded changeset brings its own columns: its type stands for them.
#[test]
fn changeset_columns_embed() {
    check(
        "changeset_columns_embed",
        quote! {
            #[diesel(table_name = stock)]
            struct StockForm {
                available: i32,
                #[diesel(embed)]
                price: PriceForm,
            }
        },
    );
}

/// A generic form, a table named from the crate root: the bounds and the `where`
/// clause are kept, and the table is imported.
#[test]
fn changeset_columns_generic_with_table_path() {
    check(
        "changeset_columns_generic_with_table_path",
        quote! {
            #[diesel(table_name = crate::schema::stock)]
            struct StockForm<T: Clone> where T: Send {
                available: T,
            }
        },
    );
}

/// `#[occ(...)]` keys belong on the entity: reported, with nothing else emitted.
#[test]
fn changeset_columns_error_occ_key() {
    check(
        "changeset_columns_error_occ_key",
        quote! {
            #[diesel(table_name = stock)]
            struct StockForm {
                available: i32,
                #[occ(version)]
                version: i32,
            }
        },
    );
}

/// Not a struct with named fields: the shape error alone.
#[test]
fn changeset_columns_error_enum() {
    check(
        "changeset_columns_error_enum",
        quote! {
            enum StockForm {
                Available(i32),
            }
        },
    );
}
