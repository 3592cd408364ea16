//! Batch saves: every entity's checked UPDATE in one transaction (on PostgreSQL all of
//! them in ONE statement over a `VALUES` list), no read on success;
//! on a conflict every stale or deleted entity is reported, nothing is written and no
//! token advances. Inside a caller's transaction a failed batch rolls back to its
//! savepoint only.

on_every_backend!(entities, setup, scenarios);
