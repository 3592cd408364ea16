//! Bulk updates: `bulk_update` advances the token of every row it touches, in SQL (a
//! counter token wraps from its type's maximum to its minimum, exactly as a checked
//! save's `next_token` does; a UUID token is drawn fresh), so an entity read before the
//! bulk write conflicts instead of overwriting it. The control: a plain bulk UPDATE is
//! silently overwritten.

on_every_backend!(entities, scenarios);
