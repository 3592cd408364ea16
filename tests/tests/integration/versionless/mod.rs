//! Entities without a version column: `#[occ(check)]` fields whose values as read guard
//! a `Tracked` save and a delete (`column IS NOT DISTINCT FROM <as read>`), NULL
//! included, with a typed conflict naming the values the row holds now.
//!
//! The race has a control: the same interleaving through an UPDATE by key alone loses
//! an update.

on_every_backend!(entities, scenarios);
