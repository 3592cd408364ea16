//! A model-based test of the write API (DESIGN.md, "Testing sequences"): random
//! programs of several clients, each holding entities it read (some stale), run step by
//! step on a real database and checked after every step against a reference model of
//! what the table holds, what each entity holds and what each call returns. proptest
//! shrinks a failure to the shortest program and the test prints it.
//!
//! `model.rs` (the model and the program generator) and `runner.rs` (the checks and
//! the run) are compiled once; `scenarios.rs`, the executor and the runs, per backend
//! and flavour. `OCC_MODEL_CASES`, `OCC_MODEL_STEPS`, `OCC_MODEL_SEED` and
//! `OCC_MODEL_OPS` set the run (tests/README.md).

mod model;
mod runner;

on_every_backend!(entities, scenarios);
