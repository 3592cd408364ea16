//! What every example suite shares.

/// A fresh migrated database and a pool on it, or `return` (after the harness's SKIPPED
/// line) when the backend is unreachable and not required.
macro_rules! example_db {
    ($backend:ident, $conn:ty) => {
        match diesel_occ_tests::TestDb::<$conn>::create(concat!(
            "ex_",
            stringify!($backend),
            "_",
            line!()
        )) {
            Some(db) => {
                // The harness ran every migration it embeds; this applies any the apps
                // embed beyond those and checks the token columns.
                diesel_occ_examples::$backend::migrate(db.url())
                    .expect("migrate the example tables");
                let pool = diesel_occ_examples::$backend::pool(db.url(), 16).expect("a pool");
                (db, pool)
            }
            None => return,
        }
    };
}
