//! Tracked saves: a `Tracked<T>` writes only the fields edited since it was read, in one
//! checked statement; on a conflict it diffs three ways (base, mine, theirs), merges
//! edits that do not overlap and reports, untouched, those that do.
//!
//! Each race has a control: the same interleaving through plain full-row writes loses
//! an update.

mod in_memory;

on_every_backend!(entities, scenarios);
