//! Batch saves: one checked UPDATE per entity in one transaction, no read on success;
//! on a conflict every stale or deleted entity is reported, nothing is written and no
//! token advances. Inside a caller's transaction a failed batch rolls back to its
//! savepoint only.

on_every_backend!(entities, blocking, asynchronous);
