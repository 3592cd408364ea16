//! The versionless entity of these scenarios, shared by both flavours of `scenarios.rs`.

use diesel::prelude::{Insertable, Queryable, Selectable};
use diesel_occ::{CheckValues, ConcurrencyConflict, ConflictState, TokenValue, Versioned};

use super::schema;

/// `shelf_items` has no version column: `label` (nullable) and `qty` are checked,
/// `note` is not.
#[derive(Debug, Clone, PartialEq, Queryable, Selectable, Insertable, Versioned)]
#[diesel(table_name = schema::shelf_items)]
pub(super) struct Item {
    pub(super) id: i32,
    #[occ(check)]
    pub(super) label: Option<String>,
    #[occ(check)]
    pub(super) qty: i32,
    pub(super) note: String,
}

pub(super) fn item(label: Option<&str>, qty: i32) -> Item {
    Item {
        id: 1,
        label: label.map(Into::into),
        qty,
        note: "as seeded".into(),
    }
}

pub(super) use diesel_occ_tests::expect_conflict;

/// The check columns' values a stale conflict names as the row's current ones.
pub(super) fn current_values(conflict: &ConcurrencyConflict) -> &CheckValues {
    match conflict.state() {
        ConflictState::Stale {
            current: TokenValue::Columns(values),
        } => values,
        other => panic!("expected a stale conflict naming the check columns, got {other:?}"),
    }
}

/// The check columns' values a conflict says the write expected.
pub(super) fn expected_values(conflict: &ConcurrencyConflict) -> &CheckValues {
    match conflict.expected_value() {
        TokenValue::Columns(values) => values,
        other => panic!("expected the check columns' values, got {other:?}"),
    }
}
