//! The entities of the force-increment scenarios, shared by both flavours of
//! `scenarios.rs`.

use diesel::prelude::{Insertable, Queryable, Selectable};
use diesel_occ::Versioned;

use super::schema;

#[derive(Debug, Clone, PartialEq, Queryable, Selectable, Insertable, Versioned)]
#[diesel(table_name = schema::purchase_orders)]
pub(super) struct Order {
    pub(super) id: i32,
    pub(super) note: String,
    #[occ(version)]
    pub(super) version: i32,
}

#[derive(Debug, Clone, PartialEq, Queryable, Selectable, Insertable, Versioned)]
#[diesel(table_name = schema::purchase_order_items, primary_key(order_id, line_no))]
pub(super) struct OrderItem {
    pub(super) order_id: i32,
    pub(super) line_no: i32,
    pub(super) quantity: i32,
    #[occ(version)]
    pub(super) version: i32,
}
