//! What every example suite shares.

/// A fresh migrated database and the apps' `Target` for it, or `return` (after the
/// harness's SKIPPED line) when the backend is unreachable and not required.
macro_rules! example_db {
    ($backend:ident, $conn:ty) => {
        match diesel_occ_tests::TestDb::<$conn>::create(concat!(
            "ex_",
            stringify!($backend),
            "_",
            line!()
        )) {
            Some(db) => {
                let target = diesel_occ_examples::db::Target::parse(db.url());
                // The harness ran every migration it embeds; this applies any the apps
                // embed beyond those (none, once both are built from one tree).
                target
                    .connect_and_migrate()
                    .expect("migrate the example tables");
                (db, target)
            }
            None => return,
        }
    };
}
