//! A table's SQL name as Diesel renders it, so that `#[sql_name]` and a schema in
//! `table!` (`app.stock`) are honoured where diesel-occ names a table: the schema
//! check's query, conflicts and errors, and the hot-row memory.

/// A table's SQL names, borrowed from where they are kept for the life of the process
/// (a derived entity's own `static`, filled once).
#[doc(hidden)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TableName {
    /// The schema `table!` names, if any.
    pub schema: Option<&'static str>,
    /// The table's own SQL name.
    pub table: &'static str,
    /// `schema.table`, or `table` alone.
    pub qualified: &'static str,
}

impl TableName {
    /// The names of a table whose SQL name is its Rust name, in no schema.
    pub const fn unqualified(name: &'static str) -> Self {
        TableName {
            schema: None,
            table: name,
            qualified: name,
        }
    }
}

/// A table's SQL names as Diesel renders them: what a derived entity keeps in a
/// `static` of its own, so they are rendered once per entity type and borrowed as a
/// [`TableName`] after that. A constant of the type: no caller can change what
/// another sees.
#[doc(hidden)]
#[derive(Debug)]
pub struct RenderedTableName {
    schema: Option<String>,
    table: String,
    qualified: String,
}

impl RenderedTableName {
    /// Diesel's rendering of a table (`rendered`: its schema and SQL name), or
    /// `rust_name` if Diesel rendered it in an unexpected form.
    pub(crate) fn new(rendered: Option<(Option<String>, String)>, rust_name: &str) -> Self {
        let (schema, table) = rendered.unwrap_or((None, rust_name.to_owned()));
        let qualified = match &schema {
            Some(schema) => format!("{schema}.{table}"),
            None => table.clone(),
        };
        RenderedTableName {
            schema,
            table,
            qualified,
        }
    }

    /// The names, borrowed for the life of the process.
    pub fn names(&'static self) -> TableName {
        TableName {
            schema: self.schema.as_deref(),
            table: &self.table,
            qualified: &self.qualified,
        }
    }
}

/// Where diesel-occ reads a table's SQL names ([`SchemaCheck`](crate::schema_check::SchemaCheck),
/// conflicts, the hot-row memory and, with feature `bypass-guard`, `BypassGuard::of`):
/// Diesel's rendering of the table and of its primary key, so `#[sql_name]` and `schema.table` in `table!`
/// are honoured. Implemented for every table `diesel::table!` declares, when at least
/// one of the features `postgres`, `mysql` or `sqlite` is enabled.
///
/// ```
/// # include!(concat!(env!("CARGO_MANIFEST_DIR"), "/src/doctest_setup.rs"));
/// use diesel_occ::schema_check::SqlTable;
///
/// # fn main() {
/// fn guardable<T: SqlTable>() {}
/// guardable::<stock::table>();
/// # }
/// ```
pub trait SqlTable {
    /// The schema (if `table!` names one), the table's SQL name and its primary key
    /// columns' SQL names; `None` if Diesel rendered them in an unexpected form.
    #[doc(hidden)]
    fn sql_names() -> Option<(Option<String>, String, Vec<String>)>;
}

/// The backend whose query builder renders tables for `SqlTable`: any will do,
/// since only the quoted identifiers are read back.
#[cfg(feature = "postgres")]
mod render {
    pub(super) type Backend = diesel::pg::Pg;
    pub(super) const QUOTE: char = '"';
}
#[cfg(all(feature = "mysql", not(feature = "postgres")))]
mod render {
    pub(super) type Backend = diesel::mysql::Mysql;
    pub(super) const QUOTE: char = '`';
}
#[cfg(all(feature = "sqlite", not(any(feature = "postgres", feature = "mysql"))))]
mod render {
    pub(super) type Backend = diesel::sqlite::Sqlite;
    pub(super) const QUOTE: char = '`';
}

#[cfg(any(feature = "postgres", feature = "mysql", feature = "sqlite"))]
impl<T> SqlTable for T
where
    T: diesel::Table + Default,
    T::FromClause: diesel::query_builder::QueryFragment<render::Backend>,
    T::PrimaryKey: diesel::query_builder::QueryFragment<render::Backend>,
{
    fn sql_names() -> Option<(Option<String>, String, Vec<String>)> {
        use diesel::query_builder::{QueryBuilder, QueryFragment};

        fn rendered<F: QueryFragment<render::Backend>>(fragment: &F) -> Option<String> {
            let mut builder =
                <<render::Backend as diesel::backend::Backend>::QueryBuilder>::default();
            fragment
                .to_sql(&mut builder, &render::Backend::default())
                .ok()?;
            Some(builder.finish())
        }

        let table = T::default();
        let mut from = parse_identifier_paths(
            &rendered(&diesel::QuerySource::from_clause(&table))?,
            render::QUOTE,
        )?;
        let (schema, name) = match (from.pop()?, from.is_empty()) {
            (mut path, true) if path.len() == 1 => (None, path.pop()?),
            (mut path, true) if path.len() == 2 => {
                let name = path.pop()?;
                (path.pop(), name)
            }
            _ => return None,
        };
        let keys = parse_identifier_paths(&rendered(&table.primary_key())?, render::QUOTE)?
            .into_iter()
            .map(|mut path| path.pop())
            .collect::<Option<Vec<_>>>()?;
        Some((schema, name, keys))
    }
}

/// Reads `"a"."b", "c"."d"` (identifiers quoted with `quote`, embedded quotes doubled)
/// back into `[[a, b], [c, d]]`; `None` for anything else.
#[cfg_attr(
    not(any(feature = "postgres", feature = "mysql", feature = "sqlite")),
    allow(dead_code)
)]
pub(crate) fn parse_identifier_paths(sql: &str, quote: char) -> Option<Vec<Vec<String>>> {
    let mut paths = Vec::new();
    let mut path = Vec::new();
    let mut chars = sql.chars().peekable();
    loop {
        if chars.next()? != quote {
            return None;
        }
        let mut ident = String::new();
        loop {
            let c = chars.next()?;
            if c != quote {
                ident.push(c);
            } else if chars.peek() == Some(&quote) {
                chars.next();
                ident.push(quote);
            } else {
                break;
            }
        }
        path.push(ident);
        match chars.next() {
            None => {
                paths.push(path);
                return Some(paths);
            }
            Some('.') => {}
            Some(',') => {
                while chars.peek() == Some(&' ') {
                    chars.next();
                }
                paths.push(std::mem::take(&mut path));
            }
            Some(_) => return None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rendered_identifier_paths_are_read_back() {
        assert_eq!(
            parse_identifier_paths("\"s\".\"t\"", '"'),
            Some(vec![vec!["s".to_owned(), "t".to_owned()]])
        );
        assert_eq!(
            parse_identifier_paths("`t`.`a``b`, `t`.`c`", '`'),
            Some(vec![
                vec!["t".to_owned(), "a`b".to_owned()],
                vec!["t".to_owned(), "c".to_owned()]
            ])
        );
        assert_eq!(parse_identifier_paths("t.c", '"'), None);
        assert_eq!(parse_identifier_paths("\"t\" AS x", '"'), None);
        assert_eq!(parse_identifier_paths("\"open", '"'), None);
    }

    #[test]
    fn of_reads_the_sql_names_from_diesel() {
        diesel::table! {
            #[sql_name = "Stock Items"]
            shop.stock_items (id) {
                id -> Integer,
                #[sql_name = "row version"]
                version -> Integer,
            }
        }
        let (schema, table, keys) = <stock_items::table as SqlTable>::sql_names().unwrap();
        assert_eq!(schema.as_deref(), Some("shop"));
        assert_eq!(table, "Stock Items");
        assert_eq!(keys, ["id"]);
        assert_eq!(
            <stock_items::version as diesel::Column>::NAME,
            "row version"
        );
    }
}
