//! `async_combiner`: `+1`s applied through `asynchronous::Combiner`, each with a tag
//! in the row; the twin applies a change twice and counts it once. Not an
//! [`AsyncPath`](super::adaptor::AsyncPath): the combiner takes its own connections
//! and is never handed the session's, so there is no write future of the session's to
//! drop.

use diesel_occ::Error;
use diesel_occ::asynchronous::Combiner;
use diesel_occ_tests::connect_async;

use super::super::combiner::{policy, settle};
use super::super::counter::{self, Counter};
use super::super::runner::{Ctx, Outcome, Path};
use super::{AsyncConn, Session};
use crate::check::counters::Write;

/// `asynchronous::Combiner`; the twin applies a change twice and counts it once.
#[derive(Default)]
pub(in super::super) struct Combined {
    rows: Combiner<Counter>,
}

impl Path for Combined {
    type Conn = Session;
    type Read = i32;

    fn read(&self, _: &mut Session, row: i32, _: u32) -> Result<i32, Error> {
        Ok(row)
    }

    fn write(&self, s: &mut Session, row: i32, ctx: &Ctx<'_>) -> Outcome {
        let url = ctx.url.to_owned();
        let source = move || {
            let url = url.clone();
            async move { connect_async::<AsyncConn>(&url).await }
        };
        let policy = policy();
        let tag = counter::next_tag();
        let change = Write {
            row,
            from: None,
            increment: 1,
            tag: Some(tag),
            deletes: false,
        };
        let applied = s.runtime.block_on(async {
            let apply = || {
                self.rows
                    .apply(&source, &policy, row, move |c: &mut Counter| {
                        counter::tagged_plus_one(c, tag)
                    })
            };
            let first = apply().await;
            if ctx.sabotage && first.is_ok() {
                return apply().await;
            }
            first
        });
        settle(applied, change)
    }
}
