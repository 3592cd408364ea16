//! Trigger names and quoted identifiers: what a backend accepts, and a stable hash.

use std::fmt;

use super::*;

impl fmt::Display for NamePart {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            NamePart::Schema => "schema",
            NamePart::Table => "table",
            NamePart::TokenColumn => "token column",
            NamePart::KeyColumn => "key column",
        })
    }
}

impl fmt::Display for NameProblem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            NameProblem::Empty => "is empty",
            NameProblem::ContainsNul => "contains a NUL character",
            NameProblem::TooLong => {
                "is longer than the backend's identifier limit (PostgreSQL: 63 bytes, \
                 MySQL: 64 characters)"
            }
        })
    }
}

/// What keeps `name` from being an identifier on `backend`, if anything.
pub(super) fn name_problem(backend: Dialect, name: &str) -> Option<NameProblem> {
    let too_long = match backend {
        Dialect::Postgres => name.len() > 63,
        Dialect::Mysql => name.chars().count() > 64,
        Dialect::Sqlite => false,
    };
    if name.is_empty() {
        Some(NameProblem::Empty)
    } else if name.contains('\0') {
        Some(NameProblem::ContainsNul)
    } else if too_long {
        Some(NameProblem::TooLong)
    } else {
        None
    }
}

/// FNV-1a (64 bits) of the length-prefixed SQL names, so that no two different
/// (table, column) pairs share an input: `("order_items", "version")` and
/// `("order", "items_version")` hash differently. Fixed forever: installed triggers
/// are found again by this name.
pub(super) fn name_hash(table: &str, column: &str) -> u64 {
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    for part in [table, column] {
        let len = u64::try_from(part.len()).unwrap_or(u64::MAX);
        for &byte in len.to_le_bytes().iter().chain(part.as_bytes()) {
            hash ^= u64::from(byte);
            hash = hash.wrapping_mul(0x0000_0100_0000_01b3);
        }
    }
    hash
}

/// A dollar-quote tag that does not occur in `body`, so no name inside the function
/// body can end it early.
pub(super) fn dollar_tag(body: &str) -> String {
    let mut tag = "$occ$".to_owned();
    let mut n = 0_u64;
    while body.contains(&tag) {
        n = n.wrapping_add(1);
        tag = format!("$occ{n}$");
    }
    tag
}

/// An identifier, quoted for the backend (embedded quotes doubled).
pub(super) fn quote(backend: Dialect, ident: &str) -> String {
    match backend {
        Dialect::Mysql => format!("`{}`", ident.replace('`', "``")),
        Dialect::Postgres | Dialect::Sqlite => {
            format!("\"{}\"", ident.replace('"', "\"\""))
        }
    }
}
