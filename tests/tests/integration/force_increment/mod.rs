//! Force increment: advancing an aggregate root's token without writing its columns,
//! so that writers of different children of one root conflict on the root.

on_every_backend!(entities, scenarios);
