//! The scenario, in both flavours, on MySQL/MariaDB.

flavour_prelude!();

use diesel::ExpressionMethods;
use diesel_occ::schema_check::SchemaCheck;

use super::super::ahead_of_clock;
use super::{CREATE, Stamp, assert_refused, pin_clock_to, stamps};

#[flavour]
#[tokio::test]
async fn the_schema_check_refuses_a_token_set_to_now_on_update() {
    let db = db!();
    let mut conn = db.conn().await;
    conn.batch_execute(CREATE).await.unwrap();
    match SchemaCheck::new()
        .entity::<Stamp>()
        .run_in_flavour(&mut conn)
        .await
    {
        Err(error) => assert_refused(error.as_schema_problems(), &error),
        Ok(()) => panic!("a token column set to now on update passed the schema check"),
    }

    // Why: a busy row's token ran ahead of the clock; a writer that bypasses diesel-occ
    // at a "now" equal to an older token puts that token back.
    let seed = ahead_of_clock();
    diesel::insert_into(stamps::table)
        .values(Stamp {
            id: 1,
            value: 0,
            updated_at: seed,
        })
        .execute(&mut conn)
        .await
        .unwrap();
    let mut stale = Stamp::find(&mut conn, 1).await.unwrap();
    let mut writer = stale.clone();
    writer.value = 1;
    writer.save_checked(&mut conn).await.unwrap();
    let mut bypass = db.conn().await;
    bypass.batch_execute(&pin_clock_to(seed)).await.unwrap();
    diesel::update(stamps::table)
        .set(stamps::value.eq(5))
        .execute(&mut bypass)
        .await
        .unwrap();
    stale.value = 9;
    stale
        .save_checked(&mut conn)
        .await
        .expect("the stale save wins: the writer's and the bypass write's changes are lost");
}
