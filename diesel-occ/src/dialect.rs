//! [`Dialect`]: which of the three supported SQL dialects a Diesel backend type speaks.
//!
//! The statements diesel-occ builds are generic over the backend, so that code generic
//! over it (Diesel's `MultiConnection`) compiles; the few places whose SQL differs
//! recognise the backend by its type, whichever of diesel-occ's features are on.

use std::any::TypeId;

/// The SQL dialect of a backend: which SQL the bypass guard's trigger DDL is written
/// in, and how [`SchemaCheck`](crate::schema_check::SchemaCheck) reads a column type's
/// name.
///
/// ```
/// use diesel_occ::Dialect;
///
/// assert_eq!(Dialect::Postgres.to_string(), "PostgreSQL");
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Dialect {
    /// PostgreSQL (on the bypass guard: a plpgsql function and a `BEFORE UPDATE`
    /// trigger).
    Postgres,
    /// MySQL and MariaDB (a `BEFORE UPDATE` trigger).
    Mysql,
    /// SQLite (an `AFTER UPDATE` trigger that rewrites the token).
    Sqlite,
}

impl std::fmt::Display for Dialect {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Dialect::Postgres => "PostgreSQL",
            Dialect::Mysql => "MySQL",
            Dialect::Sqlite => "SQLite",
        })
    }
}

impl Dialect {
    /// The dialect of `DB`, or `None` for a backend diesel-occ has no SQL for.
    ///
    /// A backend is recognised by its type, never by which of diesel-occ's features are
    /// on: another crate of the application can turn on a Diesel backend that diesel-occ
    /// was built without (diesel-async's `mysql` turns on Diesel's MySQL types), and its
    /// SQL must be the same. The types this build of diesel-occ names are compared by
    /// `TypeId`; any other is recognised by the path Diesel declares it at, which a unit
    /// test pins against the `TypeId` of each of the three.
    pub(crate) fn of<DB: 'static>() -> Option<Dialect> {
        Self::by_type::<DB>().or_else(|| Self::by_name(std::any::type_name::<DB>()))
    }

    /// The dialect of one of the backend types this build names.
    fn by_type<DB: 'static>() -> Option<Dialect> {
        let backend = TypeId::of::<DB>();
        #[cfg(feature = "postgres")]
        if backend == TypeId::of::<diesel::pg::Pg>() {
            return Some(Dialect::Postgres);
        }
        #[cfg(feature = "mysql")]
        if backend == TypeId::of::<diesel::mysql::Mysql>() {
            return Some(Dialect::Mysql);
        }
        #[cfg(feature = "sqlite")]
        if backend == TypeId::of::<diesel::sqlite::Sqlite>() {
            return Some(Dialect::Sqlite);
        }
        let _ = backend;
        None
    }

    /// The dialect of the Diesel backend whose type has this path.
    /// True on a backend where any error inside a transaction aborts it (PostgreSQL):
    /// every later statement fails, and `COMMIT` answers `ROLLBACK` without an error.
    /// There the library's own recoverable errors run in a savepoint, and its commits
    /// check that the transaction was not aborted (`aborted::COMMIT_UNLESS_ABORTED`).
    pub(crate) fn errors_abort_transactions<DB>() -> bool {
        // By name: a `Connection`'s backend is not known to be `'static` in its bounds.
        Self::by_name(std::any::type_name::<DB>()) == Some(Dialect::Postgres)
    }

    pub(crate) fn by_name(type_name: &str) -> Option<Dialect> {
        match type_name {
            "diesel::pg::backend::Pg" => Some(Dialect::Postgres),
            "diesel::mysql::backend::Mysql" => Some(Dialect::Mysql),
            "diesel::sqlite::backend::Sqlite" => Some(Dialect::Sqlite),
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use diesel::mysql::Mysql;
    use diesel::pg::Pg;
    use diesel::sqlite::Sqlite;

    use super::Dialect;

    /// The dev-dependencies give this build all three backend types whichever of our
    /// features are on, as another crate of an application (diesel-async's `mysql`)
    /// may: each is recognised all the same.
    #[test]
    fn every_backend_is_recognised_whichever_of_our_features_are_on() {
        assert_eq!(Dialect::of::<Pg>(), Some(Dialect::Postgres));
        assert_eq!(Dialect::of::<Mysql>(), Some(Dialect::Mysql));
        assert_eq!(Dialect::of::<Sqlite>(), Some(Dialect::Sqlite));
        assert_eq!(Dialect::of::<i32>(), None);
    }

    /// Where this build names a backend type, its path gives the same answer, so a
    /// build that does not name it (its feature off) behaves the same.
    #[test]
    fn a_backend_recognised_by_its_path_is_the_one_its_type_names() {
        fn path_agrees<DB: 'static>(expected: Dialect) {
            assert_eq!(
                Dialect::by_name(std::any::type_name::<DB>()),
                Some(expected),
                "{}",
                std::any::type_name::<DB>()
            );
        }
        path_agrees::<Pg>(Dialect::Postgres);
        path_agrees::<Mysql>(Dialect::Mysql);
        path_agrees::<Sqlite>(Dialect::Sqlite);
        assert_eq!(Dialect::by_name("my_backend::Mysql"), None);
    }
}
