//! The scenario, in both flavours, on MySQL/MariaDB.

flavour_prelude!();

use diesel_occ::schema_check::SchemaCheck;

use super::super::ahead_of_clock;
use super::{CREATE, Stamp, assert_refused, pin_clock_to, stamps};

#[flavour(test)]
async fn the_schema_check_refuses_a_token_set_to_now_on_update() {
    let (db, mut conn) = db_and_conn!();
    run_sql(&mut conn, CREATE).await;
    let check = SchemaCheck::new().entity::<Stamp>();
    let checked = check.run_in_flavour(&mut conn).await;
    let error = checked.expect_err("a token column set to now on update passed the schema check");
    assert_refused(error.as_schema_problems(), &error);

    // Why: a busy row's token ran ahead of the clock; a writer that bypasses diesel-occ
    // at a "now" equal to an older token puts that token back.
    let seed = ahead_of_clock();
    insert_rows!(&mut conn, stamps::table, Stamp::new(1, 0, seed));
    let mut stale = Stamp::find(&mut conn, 1).await.unwrap();
    let mut writer = stale.clone();
    writer.value = 1;
    writer.save_checked(&mut conn).await.unwrap();
    let mut bypass = db.conn().await;
    run_sql(&mut bypass, &pin_clock_to(seed)).await;
    run_sql(&mut bypass, "UPDATE stamps SET value = 5").await;
    stale.value = 9;
    let saved = stale.save_checked(&mut conn).await;
    saved.expect("the stale save wins: the writer's and the bypass write's changes are lost");
}
