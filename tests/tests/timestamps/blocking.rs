//! The scenarios on a blocking connection, instantiated per backend and column type.

macro_rules! blocking_suite {
    ($name:ident, $conn:ty, $column:literal, $digits:literal) => {
        mod $name {
            use chrono::{NaiveDateTime, TimeDelta};
            use diesel::prelude::*;
            use diesel_occ::Error;
            use diesel_occ::prelude::*;
            use diesel_occ::schema::SchemaCheck;
            use diesel_occ_tests::TestDb;

            use crate::schema::stamps;

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

            /// The same row, declaring the column's real precision.
            #[derive(Debug, Clone, PartialEq, Queryable, Selectable, Versioned)]
            #[diesel(table_name = stamps)]
            struct Declared {
                id: i32,
                value: i32,
                #[occ(version, precision = $digits)]
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

            fn setup() -> Option<(TestDb<Conn>, Conn, Conn, NaiveDateTime)> {
                let db = TestDb::<Conn>::create(concat!(stringify!($name), "_", line!()))?;
                let mut a = db.conn();
                let b = db.conn();
                diesel::sql_query(concat!(
                    "CREATE TABLE stamps (id INTEGER PRIMARY KEY, value INTEGER NOT NULL, updated_at ",
                    $column,
                    " NOT NULL)"
                ))
                .execute(&mut a)
                .expect("token table");
                let seed = crate::ahead_of_clock();
                diesel::insert_into(stamps::table)
                    .values(Stamp {
                        id: 1,
                        value: 0,
                        updated_at: seed,
                    })
                    .execute(&mut a)
                    .expect("seed row");
                Some((db, a, b, seed))
            }

            #[test]
            fn a_stale_writer_in_the_same_second_gets_a_conflict() {
                let Some((_db, mut a, mut b, _)) = setup() else {
                    return;
                };
                let mut first = Stamp::find(&mut a, 1).unwrap();
                let mut second = Stamp::find(&mut b, 1).unwrap();

                first.value = 1;
                first.save_checked(&mut a).expect("the first writer saves");
                second.value = 2;
                match second.save_checked(&mut b) {
                    Err(Error::Conflict(conflict)) => assert_eq!(
                        conflict.current::<NaiveDateTime>(),
                        Some(first.updated_at),
                        "the conflict reports the winner's token"
                    ),
                    other => panic!("the stale writer must not win, got {other:?}"),
                }
                assert_eq!(
                    Stamp::find(&mut a, 1).unwrap(),
                    first,
                    "the row holds the winner's values and exactly its in-memory token"
                );
                // The winner's entity still matches its row.
                first.value = 3;
                first.save_checked(&mut a).expect("the winner saves again");
                assert_eq!(Stamp::find(&mut b, 1).unwrap(), first);
            }

            #[test]
            fn a_declared_precision_advances_the_token_in_its_own_steps() {
                let Some((_db, mut a, mut b, seed)) = setup() else {
                    return;
                };
                let mut first = Declared::find(&mut a, 1).unwrap();
                let mut second = Declared::find(&mut b, 1).unwrap();

                first.value = 1;
                first.save_checked(&mut a).expect("the first writer saves");
                // The clock is behind the token: one step of the declared precision.
                let step = TimeDelta::microseconds(10_i64.pow(6 - $digits));
                assert_eq!(first.updated_at, seed + step);
                second.value = 2;
                assert!(
                    matches!(second.save_checked(&mut b), Err(Error::Conflict(_))),
                    "the stale writer must not win"
                );
                assert_eq!(Declared::find(&mut b, 1).unwrap(), first);
                first.value = 3;
                first.save_checked(&mut a).expect("the winner saves again");
                assert_eq!(first.updated_at, seed + step + step);
            }

            /// The row's tokens run ahead of the clock: a bulk update must still move
            /// the token past every token the row held (a value taken from the clock
            /// would go back to one of them), and every entity read before it conflicts.
            #[test]
            fn a_bulk_update_moves_the_token_past_every_token_the_row_held() {
                let Some((_db, mut a, mut b, seed)) = setup() else {
                    return;
                };
                let mut in_flight = Stamp::find(&mut a, 1).unwrap();
                let mut writer = Stamp::find(&mut b, 1).unwrap();
                writer.value = 1;
                writer.save_checked(&mut b).expect("a checked save");
                assert_eq!(writer.updated_at, seed + TimeDelta::seconds(1));

                let touched = Stamp::bulk_update(stamps::table, stamps::value.eq(7))
                    .execute(&mut a)
                    .expect("the bulk update");
                assert_eq!(touched, 1);
                let mut bulk = Stamp::find(&mut a, 1).unwrap();
                assert_eq!(
                    bulk.updated_at,
                    seed + TimeDelta::seconds(2),
                    "one whole second after the token the row held"
                );

                for (stale, token) in [(&mut in_flight, seed), (&mut writer, seed + TimeDelta::seconds(1))] {
                    stale.value = 9;
                    match stale.save_checked(&mut b) {
                        Err(Error::Conflict(conflict)) => {
                            assert_eq!(conflict.expected::<NaiveDateTime>(), Some(token));
                            assert_eq!(conflict.current::<NaiveDateTime>(), Some(bulk.updated_at));
                        }
                        other => panic!("an entity read before the bulk update must conflict, got {other:?}"),
                    }
                }
                bulk.value = 8;
                bulk.save_checked(&mut a).expect("the row saves after the bulk update");
                assert_eq!(Stamp::find(&mut b, 1).unwrap(), bulk);

                // A declared precision steps in its own unit (SQLite's date functions in
                // milliseconds at least).
                let before = Declared::find(&mut a, 1).unwrap();
                Declared::bulk_update(stamps::table, stamps::value.eq(10))
                    .execute(&mut a)
                    .expect("the bulk update");
                let after = Declared::find(&mut a, 1).unwrap();
                let step = TimeDelta::microseconds(10_i64.pow(6 - $digits));
                let step = if stringify!($name).starts_with("sqlite") {
                    step.max(TimeDelta::milliseconds(1))
                } else {
                    step
                };
                assert_eq!(after.updated_at, before.updated_at + step);
            }

            #[test]
            fn a_token_no_fresh_one_can_follow_is_refused_before_any_write() {
                let Some((_db, mut a, _, seed)) = setup() else {
                    return;
                };
                // An entity built from a client's token in the last second of chrono's
                // range: a write would have no later token to store.
                let end = NaiveDateTime::MAX;
                let mut stamp = Stamp { id: 1, value: 7, updated_at: end };
                let before = stamp.clone();
                crate::assert_out_of_range(stamp.save_checked(&mut a));
                crate::assert_out_of_range(stamp.force_increment(&mut a));
                crate::assert_out_of_range(std::slice::from_mut(&mut stamp).save_all_checked(&mut a));
                crate::assert_out_of_range(Stamp::find_checked(&mut a, 1, &end).map(|_| ()));
                assert_eq!(stamp, before, "the entity is untouched");
                assert_eq!(
                    Stamp::find(&mut a, 1).unwrap(),
                    Stamp { id: 1, value: 0, updated_at: seed },
                    "nothing was written"
                );
            }

            #[test]
            fn the_start_up_check_reports_a_column_coarser_than_declared() {
                let Some((_db, mut a, _, _)) = setup() else {
                    return;
                };
                SchemaCheck::new()
                    .entity::<Stamp>()
                    .entity::<Declared>()
                    .run(&mut a)
                    .expect("whole seconds and the real precision fit");
                let result = SchemaCheck::new().entity::<Micros>().run(&mut a);
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
                assert!(
                    error.to_string().contains("stamps.updated_at"),
                    "the message names the column: {error}"
                );
            }
        }
    };
}

/// SQLite timestamps written by other tools, in text forms Diesel reads but does not
/// write: such rows save, and a stale writer still conflicts.
mod sqlite_forms {
    use chrono::NaiveDateTime;
    use diesel::prelude::*;
    use diesel::sqlite::SqliteConnection;
    use diesel_occ::Error;
    use diesel_occ::prelude::*;
    use diesel_occ_tests::TestDb;

    use crate::schema::stamps;

    #[derive(Debug, Clone, PartialEq, Queryable, Selectable, Versioned)]
    #[diesel(table_name = stamps)]
    struct Stamp {
        id: i32,
        value: i32,
        #[occ(version)]
        updated_at: NaiveDateTime,
    }

    #[derive(Debug, Clone, PartialEq, Queryable, Selectable, Versioned)]
    #[diesel(table_name = stamps)]
    struct Micros {
        id: i32,
        value: i32,
        #[occ(version, precision = 6)]
        updated_at: NaiveDateTime,
    }

    #[test]
    fn rows_stored_in_other_text_forms_save() {
        let Some(db) = TestDb::<SqliteConnection>::create("sqlite_forms") else {
            return;
        };
        let mut conn = db.conn();
        diesel::sql_query(
            "CREATE TABLE stamps (id INTEGER PRIMARY KEY, value INTEGER NOT NULL, \
             updated_at TIMESTAMP NOT NULL)",
        )
        .execute(&mut conn)
        .unwrap();
        for (id, form) in crate::OTHER_FORMS.iter().enumerate() {
            diesel::sql_query(format!("INSERT INTO stamps VALUES ({id}, 0, '{form}')"))
                .execute(&mut conn)
                .unwrap();
        }
        for (id, form) in crate::OTHER_FORMS.iter().enumerate() {
            let id = i32::try_from(id).unwrap();
            let mut mine = Stamp::find(&mut conn, id).unwrap();
            let mut theirs = Micros::find(&mut conn, id).unwrap();
            mine.value = 1;
            mine.save_checked(&mut conn)
                .unwrap_or_else(|e| panic!("a row holding {form:?} saves: {e:?}"));
            assert_eq!(Stamp::find(&mut conn, id).unwrap(), mine);
            theirs.value = 2;
            assert!(
                matches!(theirs.save_checked(&mut conn), Err(Error::Conflict(_))),
                "a stale writer of {form:?} conflicts"
            );
        }
    }
}
