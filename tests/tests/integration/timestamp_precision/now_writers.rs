//! A token column the database sets to "now" on every write (MySQL/MariaDB's
//! `ON UPDATE CURRENT_TIMESTAMP`): the start-up schema check refuses it, because such a
//! writer can move a token that ran ahead of the clock back onto a value a stale entity
//! still holds, and that entity's save then wins. Each test shows the lost update too, so
//! the refusal is seen to be needed. The server's clock is pinned per session
//! (`SET timestamp`), so nothing depends on timing.

use chrono::NaiveDateTime;
use diesel::{Insertable, Queryable, Selectable};
use diesel_occ::Versioned;
use diesel_occ::schema_check::SchemaProblems;

use super::schema::stamps;

/// The token table, its token set to now by the database on every UPDATE.
const CREATE: &str = "CREATE TABLE stamps (id INTEGER PRIMARY KEY, value INTEGER NOT NULL, \
                      updated_at DATETIME NOT NULL DEFAULT CURRENT_TIMESTAMP \
                      ON UPDATE CURRENT_TIMESTAMP)";

#[derive(Debug, Clone, PartialEq, Queryable, Selectable, Insertable, Versioned)]
#[diesel(table_name = stamps)]
struct Stamp {
    id: i32,
    value: i32,
    #[occ(version)]
    updated_at: NaiveDateTime,
}

/// The session statement that makes the server's "now" the given token.
fn pin_clock_to(token: NaiveDateTime) -> String {
    format!("SET timestamp = {}", token.and_utc().timestamp())
}

/// Demands exactly one problem, on `stamps.updated_at`, for the clause.
fn assert_refused(problems: Option<&SchemaProblems>, error: &dyn std::fmt::Display) {
    let problems = problems.unwrap_or_else(|| panic!("expected schema problems, got {error}"));
    assert_eq!(problems.len(), 1, "{error}");
    let problem = problems[0]
        .as_token_column()
        .unwrap_or_else(|| panic!("a token column problem: {error}"));
    assert_eq!((problem.table, problem.column), ("stamps", "updated_at"));
    assert!(problem.set_to_now_on_update, "{error}");
    assert!(
        error.to_string().contains("current time"),
        "the message says why: {error}"
    );
}

#[cfg(feature = "mysql")]
mod blocking {
    use diesel::connection::SimpleConnection;
    use diesel::mysql::MysqlConnection as Conn;
    use diesel::{ExpressionMethods, RunQueryDsl};
    use diesel_occ::prelude::*;
    use diesel_occ::schema_check::SchemaCheck;

    use super::super::ahead_of_clock;
    use super::{CREATE, Stamp, assert_refused, pin_clock_to, stamps};

    #[test]
    fn the_schema_check_refuses_a_token_set_to_now_on_update() {
        let db = test_db!();
        let mut conn = db.conn();
        conn.batch_execute(CREATE).unwrap();
        match SchemaCheck::new().entity::<Stamp>().run(&mut conn) {
            Err(error) => assert_refused(error.as_schema_problems(), &error),
            Ok(()) => panic!("a token column set to now on update passed the schema check"),
        }

        // Why: a busy row's token ran ahead of the clock; a writer that bypasses
        // diesel-occ at a "now" equal to an older token puts that token back.
        let seed = ahead_of_clock();
        diesel::insert_into(stamps::table)
            .values(Stamp {
                id: 1,
                value: 0,
                updated_at: seed,
            })
            .execute(&mut conn)
            .unwrap();
        let mut stale = Stamp::find(&mut conn, 1).unwrap();
        let mut writer = stale.clone();
        writer.value = 1;
        writer.save_checked(&mut conn).unwrap();
        let mut bypass = db.conn();
        bypass.batch_execute(&pin_clock_to(seed)).unwrap();
        diesel::update(stamps::table)
            .set(stamps::value.eq(5))
            .execute(&mut bypass)
            .unwrap();
        stale.value = 9;
        stale
            .save_checked(&mut conn)
            .expect("the stale save wins: the writer's and the bypass write's changes are lost");
    }
}

mod asynchronous {
    use diesel::ExpressionMethods;
    use diesel_async::{AsyncMysqlConnection as Conn, RunQueryDsl, SimpleAsyncConnection};
    use diesel_occ::asynchronous::prelude::*;
    use diesel_occ::schema_check::SchemaCheck;

    use super::super::ahead_of_clock;
    use super::{CREATE, Stamp, assert_refused, pin_clock_to, stamps};

    #[tokio::test]
    async fn the_schema_check_refuses_a_token_set_to_now_on_update() {
        let db = async_test_db!();
        let mut conn = db.conn().await;
        conn.batch_execute(CREATE).await.unwrap();
        match SchemaCheck::new()
            .entity::<Stamp>()
            .run_async(&mut conn)
            .await
        {
            Err(error) => assert_refused(error.as_schema_problems(), &error),
            Ok(()) => panic!("a token column set to now on update passed the schema check"),
        }

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
}
