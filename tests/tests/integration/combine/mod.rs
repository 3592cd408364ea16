//! The hot-row combiner (`retry::Combiner`): the changes queued while a group is written
//! are saved as one group, a writer outside the combiner is never overwritten (the
//! group reads again and runs every change again), a group that fails for good gives
//! each caller its own error, and a change that panics leaves its group.

on_every_backend!(blocking);
