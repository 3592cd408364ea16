//! The test tables (see `migrations/`), declared once per backend: only the UUID and
//! timestamp column types differ (and PostgreSQL has `documents`, whose token is `xmin`).
//! `counters`, `accounts`, `stamped` and `wiki_articles` are declared once for all three,
//! so that one entity each ([`crate::entities`]) serves every backend.

#![allow(missing_docs)] // table! output, as in a Diesel schema.rs

diesel::table! {
    counters (id) {
        id -> Integer,
        value -> Integer,
        label -> Nullable<Text>,
        version -> Integer,
    }
}

diesel::table! {
    accounts (id) {
        id -> Integer,
        balance -> Integer,
        deleted -> Bool,
        version -> Integer,
    }
}

diesel::table! {
    stamped (id) {
        id -> Integer,
        value -> Integer,
        updated_at -> Timestamp,
    }
}

diesel::table! {
    wiki_articles (id) {
        id -> Integer,
        title -> Text,
        body -> Text,
        summary -> Nullable<Text>,
        views -> Integer,
        version -> Integer,
    }
}

macro_rules! tables {
    (uuid: $uuid:ty, timestamp: $timestamp:ty) => {
        pub use super::{accounts, counters, stamped, wiki_articles};

        diesel::table! {
            small_counters (id) {
                id -> Integer,
                value -> Integer,
                version -> SmallInt,
            }
        }

        diesel::table! {
            big_counters (id) {
                id -> Integer,
                value -> Integer,
                version -> BigInt,
            }
        }

        diesel::table! {
            stock (id) {
                id -> Integer,
                available -> Integer,
                version -> $uuid,
            }
        }

        diesel::table! {
            order_lines (order_id, line_no) {
                order_id -> Integer,
                line_no -> Integer,
                quantity -> Integer,
                version -> Integer,
            }
        }

        diesel::table! {
            notes (note_id) {
                note_id -> Integer,
                note_text -> Text,
                rev -> Integer,
            }
        }

        diesel::table! {
            stamped_seconds (id) {
                id -> Integer,
                value -> Integer,
                updated_at -> Timestamp,
            }
        }

        diesel::table! {
            shelf_items (id) {
                id -> Integer,
                label -> Nullable<Text>,
                qty -> Integer,
                note -> Text,
            }
        }

        diesel::table! {
            purchase_orders (id) {
                id -> Integer,
                note -> Text,
                version -> Integer,
            }
        }

        diesel::table! {
            purchase_order_items (order_id, line_no) {
                order_id -> Integer,
                line_no -> Integer,
                quantity -> Integer,
                version -> Integer,
            }
        }

        diesel::table! {
            tickets (id) {
                id -> Integer,
                seat -> Text,
                version -> $uuid,
            }
        }
    };
}

/// PostgreSQL: `uuid` and `timestamp`, plus a `timestamptz` token table and a table
/// whose token is the system column `xmin`.
pub mod pg {
    tables!(uuid: diesel::sql_types::Uuid, timestamp: diesel::sql_types::Timestamp);

    diesel::table! {
        documents (id) {
            id -> Integer,
            title -> Text,
            body -> Text,
            xmin -> diesel_occ::xmin::sql_types::Xid,
        }
    }

    diesel::table! {
        stamped_utc (id) {
            id -> Integer,
            value -> Integer,
            updated_at -> Timestamptz,
        }
    }
}

/// MySQL/MariaDB: `BINARY(16)` UUIDs and `DATETIME(6)` timestamps (read and bound as `Timestamp`).
pub mod mysql {
    tables!(uuid: diesel::sql_types::Binary, timestamp: diesel::sql_types::Timestamp);
}

/// SQLite: `BLOB` UUIDs and text timestamps, plus a UTC timestamp token table.
pub mod sqlite {
    tables!(uuid: diesel::sql_types::Binary, timestamp: diesel::sql_types::Timestamp);

    diesel::table! {
        stamped_utc (id) {
            id -> Integer,
            value -> Integer,
            updated_at -> TimestamptzSqlite,
        }
    }
}
