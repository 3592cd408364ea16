//! The guard's DDL on each backend: trigger names that cannot collide, Diesel's SQL names
//! (`#[sql_name]`, schema-qualified tables), names no identifier can break out of,
//! PostgreSQL's 63-byte limit, and integer tokens that wrap at MAX. Each test creates
//! its own tables with the DDL below, so they are not in the migrated schema.

#![allow(missing_docs, unreachable_pub)] // table! output, as in a Diesel schema.rs

/// The tables, the same on every backend (integer columns only).
pub(crate) mod tables {
    diesel::table! {
        order_items (id) {
            id -> Integer,
            note -> Text,
            version -> Integer,
        }
    }

    diesel::table! {
        order (id) {
            id -> Integer,
            note -> Text,
            items_version -> Integer,
        }
    }

    diesel::table! {
        #[sql_name = "odd \"quoted\" `ticked` $occ$; -- table"]
        odd_rows (id) {
            id -> Integer,
            note -> Text,
            #[sql_name = "ver$occ$'; DROP TABLE sentinel; --"]
            version -> Integer,
        }
    }

    diesel::table! {
        #[sql_name = "long_table_name_that_fills_the_whole_identifier_limit_of_pg_a12"]
        long_a (id) {
            id -> Integer,
            note -> Text,
            version -> Integer,
        }
    }

    diesel::table! {
        #[sql_name = "long_table_name_that_fills_the_whole_identifier_limit_of_pg_b12"]
        long_b (id) {
            id -> Integer,
            note -> Text,
            revision -> Integer,
        }
    }

    diesel::table! {
        wrap16 (id) {
            id -> Integer,
            note -> Text,
            version -> SmallInt,
        }
    }

    diesel::table! {
        wrap32 (id) {
            id -> Integer,
            note -> Text,
            version -> Integer,
        }
    }

    diesel::table! {
        wrap64 (id) {
            id -> Integer,
            note -> Text,
            version -> BigInt,
        }
    }

    diesel::table! {
        occ_aux.items (id) {
            id -> Integer,
            note -> Text,
            version -> Integer,
        }
    }
}

on_every_backend!(blocking);
