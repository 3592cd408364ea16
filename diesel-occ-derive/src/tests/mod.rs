//! Snapshot tests: every token kind and every attribute the derives read, as an input and
//! its expansion, printed by prettyplease and compared by [`insta`] with the committed
//! file in `src/tests/snapshots/`. A change to the generated code fails here with a line
//! diff, and the accepted change shows in review as a diff of the snapshot files.
//!
//! After an intended change (no `cargo insta` needed):
//!
//! ```sh
//! INSTA_UPDATE=always cargo test -p diesel-occ-derive
//! git diff diesel-occ-derive/src/tests/snapshots
//! ```
//!
//! Without `INSTA_UPDATE`, a differing expansion is written beside its snapshot as
//! `<name>.snap.new` (outside CI): read it, and rename it over the `.snap` to accept it,
//! or delete it. A new case's first run writes its snapshot the same way.
//! See `CONTRIBUTING.md`.

mod changeset_columns;
mod versioned;

use proc_macro2::TokenStream;

/// Expands `input` with `derive` (a derive's `_inner` function) and compares the input
/// and its expansion with the snapshot `src/tests/snapshots/{name}.snap`.
fn expand_with(
    name: &str,
    derive_name: &str,
    derive: fn(TokenStream) -> TokenStream,
    input: TokenStream,
) {
    let expansion = derive(input.clone());
    let snapshot = format!(
        "// Input of #[derive({derive_name})]:\n\n{}\n// Expansion:\n\n{}",
        pretty(input),
        pretty(expansion)
    );
    let mut settings = insta::Settings::clone_current();
    // `token_i32.snap`, not `diesel_occ_derive__tests__token_i32.snap`.
    settings.set_prepend_module_to_snapshot(false);
    settings.set_omit_expression(true);
    settings.bind(|| insta::assert_snapshot!(name, snapshot));
}

fn pretty(tokens: TokenStream) -> String {
    let file: syn::File = syn::parse2(tokens).expect("the tokens form items");
    prettyplease::unparse(&file)
}
