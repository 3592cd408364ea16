//! The example apps' scenarios, on every backend: each test runs the code the apps run
//! (`diesel_occ_examples::<backend>::<app>`), against a fresh database (or SQLite file)
//! from the harness's `TestDb`.
//!
//! Races are forced with barriers (`diesel_occ::testing::Race`, or the apps' own barriers),
//! never left to timing.

#[macro_use]
mod common;
#[macro_use]
mod inventory;
#[macro_use]
mod seat;
#[macro_use]
mod claims;
#[macro_use]
mod tracked;
#[macro_use]
mod http;

/// Instantiates `$suite!` once per backend: `<suite>::postgres`, `::mysql`, `::sqlite`.
macro_rules! on_every_backend {
    ($name:ident, $suite:ident) => {
        mod $name {
            mod postgres {
                $suite!(postgres, diesel::pg::PgConnection);
            }
            #[cfg(feature = "mysql")]
            mod mysql {
                $suite!(mysql, diesel::mysql::MysqlConnection);
            }
            mod sqlite {
                $suite!(sqlite, diesel::sqlite::SqliteConnection);
            }
        }
    };
}

on_every_backend!(inventory_app, inventory_suite);
on_every_backend!(seat_app, seat_suite);
on_every_backend!(claims_app, claims_suite);
on_every_backend!(tracked_app, tracked_suite);
on_every_backend!(http_app, http_suite);
