//! The example apps (`examples/`), on every backend: each test runs the code an app runs
//! (`diesel_occ_examples::<backend>::<app>`, `app_backend` here), against a fresh
//! database (or SQLite file) from `app_db!`, with the app's own pool on it. A test's path
//! names the backend, the app and the scenario:
//!
//! ```text
//! example_apps::postgres::inventory::race_at_save_is_detected_by_the_predicate
//! example_apps::sqlite::http::two_puts_with_the_same_etag_exactly_one_succeeds
//! ```
//!
//! Races are forced with barriers (`diesel_occ::testing::Race`, or the apps' own
//! barriers), or, for the HTTP service, with a row lock held until every request has
//! reported its write; never left to timing.

on_every_app_backend!(claims, http, inventory, seat, tracked);
