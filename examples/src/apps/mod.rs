//! The apps, written for the connection types of the backend module that includes this
//! folder (`Conn`, `Pool`, `AsyncConn`, `AsyncPool`).

pub mod claims;
pub mod demo;
pub mod http;
pub mod inventory;
pub mod seat;
pub mod tracked;

use super::{AsyncConn, AsyncPool, Conn, Pool, async_pool, migrate, pool};

/// Checks that every app entity's token column can hold its tokens (it exists, is of
/// the token's kind, keeps the precision the entity declares) and that the database
/// keeps its key unique, so that a schema that drifted fails at start-up instead of at
/// the first save.
pub(super) fn check_token_columns(conn: &mut Conn) -> Result<(), diesel_occ::Error> {
    diesel_occ::schema_check::SchemaCheck::new()
        .entity::<inventory::Stock>()
        .entity::<seat::Concert>()
        .entity::<claims::WorkItem>()
        .entity::<http::Article>()
        .run(conn)
}
