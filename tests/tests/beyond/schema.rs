//! The tables of `migrations/*/2026-11-29-200000_feature_tables`, per backend: only the UUID
//! column type differs (and PostgreSQL has `documents`, whose token is `xmin`).

#![allow(missing_docs, unreachable_pub)] // table! output, as in a Diesel schema.rs

macro_rules! tables {
    (uuid: $uuid:ty) => {
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

        diesel::table! {
            accounts (id) {
                id -> Integer,
                balance -> Integer,
                deleted -> Bool,
                version -> Integer,
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

pub mod pg {
    tables!(uuid: diesel::sql_types::Uuid);

    diesel::table! {
        documents (id) {
            id -> Integer,
            title -> Text,
            body -> Text,
            xmin -> diesel_occ::pg::sql_types::Xid,
        }
    }
}

#[cfg(feature = "mysql")]
pub mod mysql {
    tables!(uuid: diesel::sql_types::Binary);
}

pub mod sqlite {
    tables!(uuid: diesel::sql_types::Binary);
}
