//! The guard's DDL on each backend: trigger names that cannot collide, Diesel's SQL names
//! (`#[sql_name]`, schema-qualified tables), names no identifier can break out of,
//! PostgreSQL's 63-byte limit, and integer tokens that wrap at MAX. Each test creates
//! its own tables with the DDL below, so they are not in the migrated schema.

#![allow(missing_docs, unreachable_pub)] // table! output, as in a Diesel schema.rs

/// Each `$entity` and its table `$table (id, note, $token)`, the token its version.
macro_rules! guarded_tables {
    ($($entity:ident $(#[$($attr:tt)*])* $table:ident $(in $schema:ident)?
        { $(#[$($token_attr:tt)*])* $token:ident -> $sql:ident: $rust:ty })+) => {$(
        diesel::table! {
            $(#[$($attr)*])*
            $($schema.)? $table (id) {
                id -> Integer,
                note -> Text,
                $(#[$($token_attr)*])*
                $token -> $sql,
            }
        }

        #[derive(Debug, Clone, PartialEq, Queryable, Selectable, Versioned)]
        #[diesel(table_name = $table)]
        pub(crate) struct $entity {
            pub(crate) id: i32,
            pub(crate) note: String,
            #[occ(version)]
            pub(crate) $token: $rust,
        }
    )+};
}

/// The tables, the same on every backend (integer columns only).
pub(crate) mod tables {
    use diesel::{Queryable, Selectable};
    use diesel_occ::Versioned;

    guarded_tables! {
        OrderItem order_items { version -> Integer: i32 }
        Order order { items_version -> Integer: i32 }
        OddRow #[sql_name = "odd \"quoted\" `ticked` $occ$; -- table"] odd_rows {
            #[sql_name = "ver$occ$'; DROP TABLE sentinel; --"]
            version -> Integer: i32
        }
        LongA #[sql_name = "long_table_name_that_fills_the_whole_identifier_limit_of_pg_a12"]
        long_a { version -> Integer: i32 }
        LongB #[sql_name = "long_table_name_that_fills_the_whole_identifier_limit_of_pg_b12"]
        long_b { revision -> Integer: i32 }
        Wrap16 wrap16 { version -> SmallInt: i16 }
        Wrap32 wrap32 { version -> Integer: i32 }
        Wrap64 wrap64 { version -> BigInt: i64 }
        AuxItem items in occ_aux { version -> Integer: i32 }
    }
}

on_every_backend!(blocking);
