//! The scenarios on an async connection, instantiated per backend and column type.

macro_rules! async_suite {
    ($name:ident, $conn:ty, $column:literal, $digits:literal) => {
        mod $name {
            use chrono::NaiveDateTime;
            use diesel::{Insertable, Queryable, Selectable};
            use diesel_async::RunQueryDsl;
            use diesel_occ::Error;
            use diesel_occ::asynchronous::prelude::*;
            use diesel_occ::schema::SchemaCheck;

            use crate::schema::stamps;
            use crate::support::AsyncDb;

            type Conn = $conn;

            /// A token column whose precision the entity does not declare.
            #[derive(Debug, Clone, PartialEq, Queryable, Selectable, Insertable, Versioned)]
            #[diesel(table_name = stamps)]
            struct Stamp {
                id: i32,
                value: i32,
                #[occ(version)]
                updated_at: NaiveDateTime,
            }

            /// The same row, claiming microseconds.
            #[derive(Debug, Clone, PartialEq, Queryable, Selectable, Versioned)]
            #[diesel(table_name = stamps)]
            struct Micros {
                id: i32,
                value: i32,
                #[occ(version, precision = 6)]
                updated_at: NaiveDateTime,
            }

            async fn setup() -> Option<(AsyncDb<Conn>, Conn, Conn)> {
                let db = AsyncDb::<Conn>::create(concat!(stringify!($name), "_", line!())).await?;
                let mut a = db.conn().await;
                let b = db.conn().await;
                diesel::sql_query(concat!(
                    "CREATE TABLE stamps (id INTEGER PRIMARY KEY, value INTEGER NOT NULL, updated_at ",
                    $column,
                    " NOT NULL)"
                ))
                    .execute(&mut a)
                    .await
                    .expect("token table");
                diesel::insert_into(stamps::table)
                    .values(Stamp {
                        id: 1,
                        value: 0,
                        updated_at: crate::ahead_of_clock(),
                    })
                    .execute(&mut a)
                    .await
                    .expect("seed row");
                Some((db, a, b))
            }

            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn a_token_no_fresh_one_can_follow_is_refused_before_any_write() {
                let Some((_db, mut a, _)) = setup().await else {
                    return;
                };
                // An entity built from a client's token in the last second of chrono's
                // range: a write would have no later token to store.
                let end = NaiveDateTime::MAX;
                let mut stamp = Stamp { id: 1, value: 7, updated_at: end };
                let before = stamp.clone();
                crate::assert_out_of_range(stamp.save_checked(&mut a).await);
                crate::assert_out_of_range(stamp.force_increment(&mut a).await);
                crate::assert_out_of_range(
                    std::slice::from_mut(&mut stamp).save_all_checked(&mut a).await,
                );
                crate::assert_out_of_range(Stamp::find_checked(&mut a, 1, &end).await.map(|_| ()));
                assert_eq!(stamp, before, "the entity is untouched");
                let stored = Stamp::find(&mut a, 1).await.unwrap();
                assert_eq!(stored.value, 0, "nothing was written");
            }

            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn a_stale_writer_in_the_same_second_gets_a_conflict() {
                let Some((_db, mut a, mut b)) = setup().await else {
                    return;
                };
                let mut first = Stamp::find(&mut a, 1).await.unwrap();
                let mut second = Stamp::find(&mut b, 1).await.unwrap();

                first.value = 1;
                first.save_checked(&mut a).await.expect("the first writer saves");
                second.value = 2;
                match second.save_checked(&mut b).await {
                    Err(Error::Conflict(conflict)) => assert_eq!(
                        conflict.current::<NaiveDateTime>(),
                        Some(first.updated_at),
                        "the conflict reports the winner's token"
                    ),
                    other => panic!("the stale writer must not win, got {other:?}"),
                }
                assert_eq!(
                    Stamp::find(&mut a, 1).await.unwrap(),
                    first,
                    "the row holds the winner's values and exactly its in-memory token"
                );
                first.value = 3;
                first.save_checked(&mut a).await.expect("the winner saves again");
                assert_eq!(Stamp::find(&mut b, 1).await.unwrap(), first);
            }

            /// The row's tokens run ahead of the clock: a bulk update must still move
            /// the token past every token the row held, and every entity read before
            /// it conflicts.
            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn a_bulk_update_moves_the_token_past_every_token_the_row_held() {
                use diesel::ExpressionMethods;

                let Some((_db, mut a, mut b)) = setup().await else {
                    return;
                };
                let mut in_flight = Stamp::find(&mut a, 1).await.unwrap();
                let seed = in_flight.updated_at;
                let mut writer = Stamp::find(&mut b, 1).await.unwrap();
                writer.value = 1;
                writer.save_checked(&mut b).await.expect("a checked save");
                assert_eq!(writer.updated_at, seed + chrono::TimeDelta::seconds(1));

                let touched = Stamp::bulk_update(stamps::table, stamps::value.eq(7))
                    .execute(&mut a)
                    .await
                    .expect("the bulk update");
                assert_eq!(touched, 1);
                let mut bulk = Stamp::find(&mut a, 1).await.unwrap();
                assert_eq!(
                    bulk.updated_at,
                    seed + chrono::TimeDelta::seconds(2),
                    "one whole second after the token the row held"
                );

                for stale in [&mut in_flight, &mut writer] {
                    stale.value = 9;
                    match stale.save_checked(&mut b).await {
                        Err(Error::Conflict(conflict)) => assert_eq!(
                            conflict.current::<NaiveDateTime>(),
                            Some(bulk.updated_at)
                        ),
                        other => panic!("an entity read before the bulk update must conflict, got {other:?}"),
                    }
                }
                bulk.value = 8;
                bulk.save_checked(&mut a).await.expect("the row saves after the bulk update");
                assert_eq!(Stamp::find(&mut b, 1).await.unwrap(), bulk);
            }

            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn the_start_up_check_reports_a_column_coarser_than_declared() {
                let Some((_db, mut a, _)) = setup().await else {
                    return;
                };
                SchemaCheck::new()
                    .entity::<Stamp>()
                    .run_async(&mut a)
                    .await
                    .expect("whole seconds fit every column");
                let result = SchemaCheck::new().entity::<Micros>().run_async(&mut a).await;
                if $digits >= 6 {
                    result.expect("a microsecond column holds microsecond tokens");
                    return;
                }
                let error = result.unwrap_err();
                let problems = error.as_schema_problems().expect("schema problems");
                assert_eq!(problems.len(), 1, "{error}");
                assert_eq!((problems[0].table, problems[0].column), ("stamps", "updated_at"));
                assert_eq!(problems[0].needed_precision, Some(6), "{error}");
                assert_eq!(problems[0].found_precision, Some($digits), "{error}");
            }
        }
    };
}

/// SQLite timestamps written by other tools, on an async connection.
mod sqlite_forms {
    use chrono::NaiveDateTime;
    use diesel::{Queryable, Selectable};
    use diesel_async::RunQueryDsl;
    use diesel_async::sync_connection_wrapper::SyncConnectionWrapper;
    use diesel_occ::Error;
    use diesel_occ::asynchronous::prelude::*;

    use crate::schema::stamps;
    use crate::support::AsyncDb;

    #[derive(Debug, Clone, PartialEq, Queryable, Selectable, Versioned)]
    #[diesel(table_name = stamps)]
    struct Stamp {
        id: i32,
        value: i32,
        #[occ(version)]
        updated_at: NaiveDateTime,
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn rows_stored_in_other_text_forms_save() {
        let Some(db) =
            AsyncDb::<SyncConnectionWrapper<diesel::SqliteConnection>>::create("sqlite_forms_a")
                .await
        else {
            return;
        };
        let mut conn = db.conn().await;
        diesel::sql_query(
            "CREATE TABLE stamps (id INTEGER PRIMARY KEY, value INTEGER NOT NULL, \
             updated_at TIMESTAMP NOT NULL)",
        )
        .execute(&mut conn)
        .await
        .unwrap();
        for (id, form) in crate::OTHER_FORMS.iter().enumerate() {
            diesel::sql_query(format!("INSERT INTO stamps VALUES ({id}, 0, '{form}')"))
                .execute(&mut conn)
                .await
                .unwrap();
        }
        for (id, form) in crate::OTHER_FORMS.iter().enumerate() {
            let id = i32::try_from(id).unwrap();
            let mut mine = Stamp::find(&mut conn, id).await.unwrap();
            let mut stale = mine.clone();
            mine.value = 1;
            mine.save_checked(&mut conn)
                .await
                .unwrap_or_else(|e| panic!("a row holding {form:?} saves: {e:?}"));
            assert_eq!(Stamp::find(&mut conn, id).await.unwrap(), mine);
            stale.value = 2;
            assert!(
                matches!(stale.save_checked(&mut conn).await, Err(Error::Conflict(_))),
                "a stale writer of {form:?} conflicts"
            );
        }
    }
}
