//! A table's SQL name as Diesel renders it, so that `#[sql_name]` and a schema in
//! `table!` (`app.stock`) are honoured where diesel-occ names a table: the schema
//! check's query, conflicts and errors, and the hot-row memory.

use std::any::TypeId;
use std::collections::HashMap;
use std::sync::{OnceLock, PoisonError, RwLock};

use crate::bypass_guard::GuardTable;

/// A table's SQL names.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct TableName {
    /// The schema `table!` names, if any.
    pub(crate) schema: Option<&'static str>,
    /// The table's own SQL name.
    pub(crate) table: &'static str,
    /// `schema.table`, or `table` alone.
    pub(crate) qualified: &'static str,
}

/// The SQL names of table `T`, or `None` if Diesel renders it in an unexpected form.
///
/// Rendered once per table type and kept for the life of the process (a few bytes per
/// table a program declares), so that conflicts can name the table by a `&'static str`.
pub(crate) fn of<T: GuardTable + 'static>() -> Option<TableName> {
    type Names = HashMap<TypeId, Option<TableName>>;
    static NAMES: OnceLock<RwLock<Names>> = OnceLock::new();
    let names = NAMES.get_or_init(Default::default);
    let id = TypeId::of::<T>();
    // The map holds no invariant a panicking holder could break: keep using it.
    if let Some(name) = names
        .read()
        .unwrap_or_else(PoisonError::into_inner)
        .get(&id)
    {
        return *name;
    }
    let name = T::sql_names().map(|(schema, table, _keys)| {
        let qualified = match &schema {
            Some(schema) => format!("{schema}.{table}"),
            None => table.clone(),
        };
        TableName {
            schema: schema.map(leak),
            table: leak(table),
            qualified: leak(qualified),
        }
    });
    *names
        .write()
        .unwrap_or_else(PoisonError::into_inner)
        .entry(id)
        .or_insert(name)
}

fn leak(name: String) -> &'static str {
    Box::leak(name.into_boxed_str())
}
