//! The entities of the tracked-save scenarios, shared by both flavours of `scenarios.rs`.

use diesel_occ::{Error, SaveOutcome, Tracked};

pub(super) use diesel_occ_tests::entities::Article;
pub(super) use diesel_occ_tests::expect_conflict;

pub(super) type Merging = (Result<SaveOutcome<Article>, Error>, Tracked<Article>);
