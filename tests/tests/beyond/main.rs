//! Beyond the ORMs: tracked saves and merge, batch saves, force increment, the
//! bypass-writer guard, bulk updates, checked soft delete, skipped columns and
//! PostgreSQL `xmin` tokens, on every backend.
//!
//! The suite is written once (`sync_suite.rs`) and instantiated per backend; each test
//! gets a fresh migrated database (or SQLite file).

mod postgres_only;
