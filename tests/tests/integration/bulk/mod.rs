//! Bulk updates: the SQL-side increment of a counter token wraps from its type's maximum
//! to its minimum, exactly as a checked save's `next_token` does, so a row at `MAX` stays
//! saveable after a bulk write.

on_every_backend!(blocking, asynchronous);
