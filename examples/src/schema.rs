//! The apps' tables (`migrations/*/2026-11-29-100000_examples`), one declaration for
//! every backend: UUID tokens are 16-byte `Binary` columns everywhere.
#![allow(missing_docs)] // table! output, as in a Diesel schema.rs

diesel::table! {
    inventory (sku) {
        sku -> Text,
        name -> Text,
        available -> Integer,
        version -> Binary,
    }
}

diesel::table! {
    concerts (id) {
        id -> Integer,
        name -> Text,
        capacity -> Integer,
        available -> Integer,
        version -> Integer,
    }
}

diesel::table! {
    seat_assignments (concert_id, seat_no) {
        concert_id -> Integer,
        seat_no -> Integer,
        buyer -> Text,
    }
}

diesel::table! {
    work_items (id) {
        id -> Integer,
        payload -> Text,
        status -> Text,
        lease_owner -> Nullable<Text>,
        lease_expires_at -> Nullable<BigInt>,
        fence -> BigInt,
        version -> BigInt,
    }
}

diesel::table! {
    work_effects (item_id) {
        item_id -> Integer,
        worker -> Text,
        fence -> BigInt,
    }
}

diesel::table! {
    articles (id) {
        id -> Text,
        title -> Text,
        body -> Text,
        version -> Binary,
    }
}

diesel::joinable!(seat_assignments -> concerts (concert_id));
diesel::joinable!(work_effects -> work_items (item_id));
diesel::allow_tables_to_appear_in_same_query!(
    inventory,
    concerts,
    seat_assignments,
    work_items,
    work_effects,
    articles,
);
