//! [`CheckValues`]: what stands for the token of an entity without a version column,
//! whose checked writes compare the values of its check columns (`#[occ(check)]`).

use std::fmt;

use super::{InvalidToken, InvalidTokenReason};

/// The values of an entity's check columns (`#[occ(check)]`), by column, each rendered
/// with `Debug`: what a conflict of an entity without a version column expected and
/// found ([`TokenValue::Columns`](crate::TokenValue::Columns)).
///
/// They are the row's data, not a token: `Display` and `Debug` name the columns only
/// (`(label=…, qty=…)`), so a conflict in a log line or a response carries no column
/// value, as for every error of this crate. Read them with [`get`](Self::get) and
/// [`columns`](Self::columns).
///
/// An entity's own values are those "as read": an entity keeps no copy of them, so a
/// plain [`delete_checked`](crate::EntityDsl::delete_checked) expects
/// [`as_read`](Self::as_read); a [`Tracked`](crate::Tracked) save names them.
///
/// ```
/// use diesel_occ::CheckValues;
///
/// let now = CheckValues::new(vec![("label", "Some(\"red\")".into()), ("qty", "3".into())]);
/// assert_eq!(now.get("qty"), Some("3"));
/// assert_eq!(now.to_string(), "(label=…, qty=…)");
/// assert!(!format!("{now:?}").contains("red"));
/// assert_eq!(CheckValues::as_read().to_string(), "(the values as read)");
/// ```
#[derive(Clone, PartialEq, Eq, Hash, Default)]
pub struct CheckValues {
    columns: Vec<(&'static str, String)>,
}

impl CheckValues {
    /// Each check column's SQL name with its value rendered with `Debug`.
    pub fn new(columns: Vec<(&'static str, String)>) -> Self {
        CheckValues { columns }
    }

    /// The values an entity was read with, which it does not keep apart from its fields.
    pub fn as_read() -> Self {
        CheckValues::default()
    }

    /// True for [`as_read`](Self::as_read): no values are named.
    pub fn is_as_read(&self) -> bool {
        self.columns.is_empty()
    }

    /// The columns and their rendered values, in declaration order.
    pub fn columns(&self) -> impl Iterator<Item = (&'static str, &str)> {
        self.columns
            .iter()
            .map(|(name, value)| (*name, value.as_str()))
    }

    /// The rendered value of one column.
    pub fn get(&self, column: &str) -> Option<&str> {
        self.columns()
            .find(|(name, _)| *name == column)
            .map(|(_, value)| value)
    }
}

impl fmt::Display for CheckValues {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.is_as_read() {
            return f.write_str("(the values as read)");
        }
        f.write_str("(")?;
        for (i, (column, _)) in self.columns().enumerate() {
            if i > 0 {
                f.write_str(", ")?;
            }
            write!(f, "{column}=…")?;
        }
        f.write_str(")")
    }
}

/// The columns only, as `Display`: the values are the row's data.
impl fmt::Debug for CheckValues {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "CheckValues{self}")
    }
}

/// The refusal of a client token for an entity without a version column: there is none
/// to send (no ETag), whatever the text. Not public API: the derive's token type calls it.
#[doc(hidden)]
pub fn no_client_token() -> InvalidToken {
    InvalidToken::new(InvalidTokenReason::Versionless)
}
