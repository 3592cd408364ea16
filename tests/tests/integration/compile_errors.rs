//! Compile-fail and compile-pass tests for `#[derive(Versioned)]`.
//!
//! Regenerate the expected output after changing a message with
//! `TRYBUILD=overwrite cargo test -p diesel-occ-tests --test integration compile_errors`, then read every
//! `.stderr`: each error must point at what the user wrote and say what to do.

#[test]
fn derive_diagnostics() {
    let cases = trybuild::TestCases::new();
    cases.compile_fail("ui/fail/*.rs");
    cases.pass("ui/pass/*.rs");
}
