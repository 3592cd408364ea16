// An `AsChangeset` written by hand for `&Entity` is refused too: it is what
// `(&entity).save_changes(conn)` needs.
use diesel::prelude::*;
use diesel_occ::Versioned;

diesel::table! {
    stock (id) {
        id -> Integer,
        available -> Integer,
        version -> Integer,
    }
}

#[derive(Queryable, Identifiable, Versioned)]
#[diesel(table_name = stock)]
struct Stock {
    id: i32,
    available: i32,
    #[occ(version)]
    version: i32,
}

impl<'a> AsChangeset for &'a Stock {
    type Target = stock::table;
    type Changeset = <diesel::dsl::Eq<stock::available, i32> as AsChangeset>::Changeset;

    fn as_changeset(self) -> Self::Changeset {
        stock::available.eq(self.available).as_changeset()
    }
}

fn main() {}
