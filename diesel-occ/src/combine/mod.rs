//! What the blocking and the async combiner share: the rows being written, each with its
//! queue of changes, and what a failed group may have written ([`outcome`]). The
//! combiners themselves are `blocking::Combiner` and `asynchronous::Combiner`.

pub(crate) mod outcome;
mod queue;

pub(crate) use self::queue::{Finished, Member, Pending, Row, Rows, State, lock, publish};
