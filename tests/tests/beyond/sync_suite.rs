//! The scenarios on a blocking connection, instantiated per backend.
//!
//! Races run on two threads that both read, meet at a barrier, then write; each test
//! that shows a protection also shows, as a control, the same interleaving losing an
//! update without it.

macro_rules! sync_suite {
    ($backend:ident, $conn:ty, $schema:path, $guard_backend:ident) => {
        mod $backend {
            use diesel::connection::SimpleConnection;
            use diesel::prelude::*;
            use diesel_occ::guard::{BypassGuard, GuardBackend};
            use diesel_occ::prelude::*;
            use diesel_occ::testing::Race;
            use diesel_occ::{
                ConflictState, Error, Operation, Prefer, SaveOutcome, Tracked, UuidToken,
            };
            use diesel_occ_tests::TestDb;

            use crate::sql_log::{SqlLog, sql_only, updates};
            use $schema as schema;

            type Conn = $conn;
            const GUARD: GuardBackend = GuardBackend::$guard_backend;

            /// A fresh database, or return (after a SKIPPED line) when the backend is
            /// unreachable and not required.
            macro_rules! test_db {
                () => {
                    match TestDb::<Conn>::create(concat!(
                        "beyond_",
                        stringify!($backend),
                        "_",
                        line!()
                    )) {
                        Some(db) => db,
                        None => return,
                    }
                };
            }

            #[derive(Debug, Clone, PartialEq, Queryable, Selectable, Insertable, Versioned)]
            #[diesel(table_name = schema::wiki_articles)]
            #[occ(track)]
            struct Article {
                id: i32,
                title: String,
                body: String,
                summary: Option<String>,
                /// Maintained by atomic SQL elsewhere: never written by a checked save.
                #[occ(skip)]
                views: i32,
                #[occ(version)]
                version: i32,
            }

            /// The same table, with Diesel's own way of keeping a column out of saves.
            #[derive(Debug, Clone, PartialEq, Queryable, Selectable, Versioned)]
            #[diesel(table_name = schema::wiki_articles)]
            struct ArticleSkipUpdate {
                id: i32,
                title: String,
                body: String,
                summary: Option<String>,
                #[diesel(skip_update)]
                views: i32,
                #[occ(version)]
                version: i32,
            }

            #[derive(Debug, Clone, PartialEq, Queryable, Selectable, Insertable, Versioned)]
            #[diesel(table_name = schema::accounts)]
            struct Account {
                id: i32,
                balance: i32,
                deleted: bool,
                #[occ(version)]
                version: i32,
            }

            #[derive(Debug, Clone, PartialEq, Queryable, Selectable, Insertable, Versioned)]
            #[diesel(table_name = schema::purchase_orders)]
            struct Order {
                id: i32,
                note: String,
                #[occ(version)]
                version: i32,
            }

            #[derive(Debug, Clone, PartialEq, Queryable, Selectable, Insertable, Versioned)]
            #[diesel(table_name = schema::purchase_order_items, primary_key(order_id, line_no))]
            struct OrderItem {
                order_id: i32,
                line_no: i32,
                quantity: i32,
                #[occ(version)]
                version: i32,
            }

            #[derive(Debug, Clone, PartialEq, Queryable, Selectable, Insertable, Versioned)]
            #[diesel(table_name = schema::tickets)]
            struct Ticket {
                id: i32,
                seat: String,
                #[occ(version)]
                version: UuidToken,
            }

            fn seed_article(db: &TestDb<Conn>) -> Article {
                let row = Article {
                    id: 1,
                    title: "Title".into(),
                    body: "Body".into(),
                    summary: Some("Summary".into()),
                    views: 0,
                    version: 1,
                };
                diesel::insert_into(schema::wiki_articles::table)
                    .values(row.clone())
                    .execute(&mut db.conn())
                    .expect("insert article");
                row
            }

            fn seed_accounts(db: &TestDb<Conn>, n: i32) -> Vec<Account> {
                let rows: Vec<_> = (1..=n)
                    .map(|id| Account {
                        id,
                        balance: 100,
                        deleted: false,
                        version: 1,
                    })
                    .collect();
                diesel::insert_into(schema::accounts::table)
                    .values(rows.clone())
                    .execute(&mut db.conn())
                    .expect("insert accounts");
                rows
            }

            fn seed_order(db: &TestDb<Conn>) {
                let mut conn = db.conn();
                diesel::insert_into(schema::purchase_orders::table)
                    .values(Order {
                        id: 1,
                        note: "order".into(),
                        version: 1,
                    })
                    .execute(&mut conn)
                    .expect("insert order");
                let items: Vec<_> = (1..=2)
                    .map(|line_no| OrderItem {
                        order_id: 1,
                        line_no,
                        quantity: 1,
                        version: 1,
                    })
                    .collect();
                diesel::insert_into(schema::purchase_order_items::table)
                    .values(items)
                    .execute(&mut conn)
                    .expect("insert items");
            }

            fn seed_ticket(db: &TestDb<Conn>) -> Ticket {
                let row = Ticket {
                    id: 1,
                    seat: "A1".into(),
                    version: UuidToken::initial(),
                };
                diesel::insert_into(schema::tickets::table)
                    .values(row.clone())
                    .execute(&mut db.conn())
                    .expect("insert ticket");
                row
            }

            fn article(conn: &mut Conn) -> Article {
                Article::find(conn, 1).expect("article row")
            }

            fn account(conn: &mut Conn, id: i32) -> Account {
                Account::find(conn, id).expect("account row")
            }

            fn expect_conflict<T: std::fmt::Debug>(
                result: Result<T, Error>,
            ) -> diesel_occ::ConcurrencyConflict {
                match result {
                    Err(Error::Conflict(conflict)) => conflict,
                    other => panic!("expected a concurrency conflict, got {other:?}"),
                }
            }

            /// A write that bypasses diesel-occ: raw SQL that leaves the token alone.
            fn raw_update(conn: &mut Conn, sql: &str) {
                diesel::sql_query(sql).execute(conn).expect("raw update");
            }

            // ---- 1. tracked saves ------------------------------------------------

            #[test]
            fn tracked_save_writes_only_the_edited_columns_in_one_statement() {
                let db = test_db!();
                seed_article(&db);
                let mut conn = db.conn();
                let mut tracked = Tracked::new(article(&mut conn));
                // Another writer changes `body` without touching the token: a full-row
                // save would overwrite it, a tracked save of `title` must not.
                raw_update(
                    &mut db.conn(),
                    "UPDATE wiki_articles SET body = 'Bypass' WHERE id = 1",
                );

                tracked.title = "New title".into();
                assert_eq!(tracked.changed().names().collect::<Vec<_>>(), ["title"]);
                let log = SqlLog::install(&mut conn);
                tracked.save_checked(&mut conn).expect("tracked save");
                let statements = log.take();
                assert_eq!(statements.len(), 1, "one statement: {statements:?}");
                let sql = sql_only(&statements[0]);
                assert!(sql.contains("title"), "writes the edited column: {sql}");
                assert!(!sql.contains("body"), "not the others: {sql}");
                assert!(!sql.contains("summary"), "not the others: {sql}");

                assert_eq!(tracked.version, 2);
                assert_eq!(
                    tracked.original(),
                    tracked.current(),
                    "saved values become the base"
                );
                let stored = article(&mut conn);
                assert_eq!(stored.title, "New title");
                assert_eq!(
                    stored.body, "Bypass",
                    "the untouched column kept the other write"
                );
                assert_eq!(stored.version, 2);
            }

            #[test]
            fn tracked_save_writes_none_as_null_and_conflicts_like_a_full_save() {
                let db = test_db!();
                seed_article(&db);
                let mut conn = db.conn();
                let mut mine = Tracked::new(article(&mut conn));
                let mut theirs = Tracked::new(article(&mut conn));

                theirs.summary = None;
                theirs.save_checked(&mut conn).expect("their save");
                assert_eq!(
                    article(&mut conn).summary,
                    None,
                    "an edit to None is written"
                );

                mine.body = "Mine".into();
                let before = mine.clone();
                let conflict = expect_conflict(mine.save_checked(&mut conn));
                assert_eq!(conflict.current::<i32>(), Some(2));
                assert_eq!(conflict.expected::<i32>(), Some(1));
                assert_eq!(mine, before, "the tracked entity is untouched");
            }

            #[test]
            fn three_way_diff_names_only_mine_only_theirs_and_both() {
                let db = test_db!();
                seed_article(&db);
                let mut conn = db.conn();
                let mut mine = Tracked::new(article(&mut conn));
                let mut theirs = Tracked::new(article(&mut conn));

                theirs.body = "Their body".into();
                theirs.summary = Some("Their summary".into());
                theirs.save_checked(&mut conn).expect("their save");

                mine.title = "My title".into();
                mine.summary = Some("My summary".into());
                assert!(mine.save_checked(&mut conn).unwrap_err().is_conflict());
                let current = mine.load_current(&mut conn).expect("current row");
                let diff = mine.three_way(&current);
                let names = |f: diesel_occ::Fields<Article>| f.names().collect::<Vec<_>>();
                assert_eq!(names(diff.only_mine()), ["title"]);
                assert_eq!(names(diff.only_theirs()), ["body"]);
                assert_eq!(names(diff.both()), ["summary"]);
                assert_eq!(names(diff.conflicting()), ["summary"]);
                // Typed access to the three versions.
                assert_eq!(diff.base().summary.as_deref(), Some("Summary"));
                assert_eq!(diff.mine().summary.as_deref(), Some("My summary"));
                assert_eq!(diff.theirs().summary.as_deref(), Some("Their summary"));
                assert_eq!(diff.theirs().version, 2);
            }

            // ---- 2. merge --------------------------------------------------------

            /// Two tracked writers from one version, released by a barrier; writer 0
            /// edits with `edit(0)`, writer 1 with `edit(1)`; both `save_merging`.
            fn race_tracked(
                db: &TestDb<Conn>,
                edit: impl Fn(usize, &mut Article) + Sync,
            ) -> Vec<(Result<SaveOutcome<Article>, Error>, Tracked<Article>)> {
                let report = Race::new(2).run(
                    |_| {
                        let mut conn = db.conn();
                        let tracked = Tracked::new(article(&mut conn));
                        (conn, tracked)
                    },
                    |writer, (mut conn, mut tracked)| {
                        edit(writer, &mut tracked);
                        let outcome = tracked.save_merging(&mut conn);
                        (outcome, tracked)
                    },
                );
                report.into_values().unwrap()
            }

            #[test]
            fn non_overlapping_edits_merge_and_both_survive() {
                let db = test_db!();
                seed_article(&db);
                let outcomes = race_tracked(&db, |writer, a| match writer {
                    0 => a.title = "Title by 0".into(),
                    _ => a.body = "Body by 1".into(),
                });
                let saved = outcomes
                    .iter()
                    .filter(|(o, _)| matches!(o, Ok(SaveOutcome::Saved)))
                    .count();
                let merged: Vec<_> = outcomes
                    .iter()
                    .filter_map(|(o, t)| match o {
                        Ok(SaveOutcome::Merged { theirs }) => Some((theirs, t)),
                        _ => None,
                    })
                    .collect();
                assert_eq!(
                    (saved, merged.len()),
                    (1, 1),
                    "one saved, one merged: {outcomes:?}"
                );
                let (theirs, merger) = merged[0];
                assert_eq!(theirs.len(), 1, "the merger saw the other's one field");

                let stored = article(&mut db.conn());
                assert_eq!(stored.title, "Title by 0");
                assert_eq!(stored.body, "Body by 1");
                assert_eq!(stored.version, 3, "two writes");
                assert_eq!(
                    merger.current(),
                    &stored,
                    "the merger holds the row as stored"
                );
            }

            #[test]
            fn control_full_row_saves_lose_the_other_field() {
                // The same race with plain full-row writes and no token: both succeed
                // and one edit is overwritten with the stale value it was read with.
                let db = test_db!();
                seed_article(&db);
                let report = Race::new(2).in_order().run(
                    |_| {
                        let mut conn = db.conn();
                        let row = article(&mut conn);
                        (conn, row)
                    },
                    |writer, (mut conn, mut row)| {
                        if writer == 0 {
                            row.title = "Title by 0".into();
                        } else {
                            row.body = "Body by 1".into();
                        }
                        diesel::update(schema::wiki_articles::table.find(row.id))
                            .set((
                                schema::wiki_articles::title.eq(&row.title),
                                schema::wiki_articles::body.eq(&row.body),
                            ))
                            .execute(&mut conn)
                            .expect("plain update")
                    },
                );
                report.into_values().unwrap();
                let stored = article(&mut db.conn());
                assert_eq!(stored.body, "Body by 1");
                assert_eq!(stored.title, "Title", "writer 0's title was lost");
            }

            #[test]
            fn overlapping_edits_return_both_values_and_write_nothing() {
                let db = test_db!();
                seed_article(&db);
                let outcomes = race_tracked(&db, |writer, a| {
                    a.title = format!("Title by {writer}");
                    if writer == 1 {
                        a.body = "Body by 1".into();
                    }
                });
                let (winner, _) = outcomes
                    .iter()
                    .enumerate()
                    .find(|(_, (o, _))| matches!(o, Ok(SaveOutcome::Saved)))
                    .expect("one writer saved");
                let loser = 1 - winner;
                let (outcome, tracked) = &outcomes[loser];
                let Ok(SaveOutcome::Overlap(overlap)) = outcome else {
                    panic!("expected an overlap, got {outcome:?}");
                };
                assert_eq!(overlap.fields().names().collect::<Vec<_>>(), ["title"]);
                assert_eq!(overlap.mine().title, format!("Title by {loser}"));
                assert_eq!(overlap.theirs().title, format!("Title by {winner}"));
                assert_eq!(overlap.base().title, "Title");
                assert_eq!(tracked.version, 1, "the loser is untouched");
                let stored = article(&mut db.conn());
                assert_eq!(stored.title, format!("Title by {winner}"));
                assert_eq!(stored.version, 2, "only the winner wrote");
            }

            /// Writer 1 edits title and body, writer 0 the title only; writer 0 saves
            /// first (the writers write in order), so writer 1 overlaps on
            /// `title` and resolves with `prefer`.
            fn resolve_overlap(prefer: Prefer) -> Option<Article> {
                let db = match TestDb::<Conn>::create(concat!(
                    "beyond_",
                    stringify!($backend),
                    "_resolve"
                )) {
                    Some(db) => db,
                    None => return None,
                };
                seed_article(&db);
                let report = Race::new(2).in_order().run(
                    |_| {
                        let mut conn = db.conn();
                        let tracked = Tracked::new(article(&mut conn));
                        (conn, tracked)
                    },
                    |writer, (mut conn, mut tracked)| {
                        if writer == 0 {
                            tracked.title = "Title by 0".into();
                            tracked
                                .save_checked(&mut conn)
                                .expect("writer 0 saves first");
                            return None;
                        }
                        // Writer 1 saves after writer 0 has committed.
                        tracked.title = "Title by 1".into();
                        tracked.body = "Body by 1".into();
                        let Ok(SaveOutcome::Overlap(overlap)) = tracked.save_merging(&mut conn)
                        else {
                            panic!("expected an overlap");
                        };
                        tracked.rebase(overlap.into_theirs(), prefer);
                        tracked.save_checked(&mut conn).expect("resolved save");
                        Some(tracked.into_inner())
                    },
                );
                let outcomes = report.into_values().unwrap();
                let resolved = outcomes
                    .into_iter()
                    .flatten()
                    .next()
                    .expect("writer 1 resolved");
                let stored = article(&mut db.conn());
                assert_eq!(stored, resolved, "the row holds the resolution");
                assert_eq!(stored.version, 3);
                Some(stored)
            }

            #[test]
            fn overlap_resolved_client_wins() {
                let Some(stored) = resolve_overlap(Prefer::Mine) else {
                    return;
                };
                assert_eq!(stored.title, "Title by 1");
                assert_eq!(stored.body, "Body by 1");
            }

            #[test]
            fn overlap_resolved_store_wins() {
                let Some(stored) = resolve_overlap(Prefer::Theirs) else {
                    return;
                };
                assert_eq!(stored.title, "Title by 0", "their title kept");
                assert_eq!(stored.body, "Body by 1", "my other edit kept");
            }

            #[test]
            fn merged_save_can_conflict_again_and_a_deleted_row_is_reported() {
                let db = test_db!();
                seed_article(&db);
                let mut conn = db.conn();
                let mut mine = Tracked::new(article(&mut conn));
                let mut other = article(&mut conn);
                other.body = "Other".into();
                other.save_checked(&mut conn).expect("other save");

                mine.title = "Mine".into();
                assert!(mine.save_checked(&mut conn).unwrap_err().is_conflict());
                let current = mine.load_current(&mut conn).expect("current");
                let theirs = mine.merge(current).expect("no overlap");
                assert_eq!(theirs.names().collect::<Vec<_>>(), ["body"]);
                assert_eq!(mine.version, 2, "rebased onto their token");
                // A third writer gets in between the merge and its save.
                let mut third = article(&mut conn);
                third.summary = None;
                third.save_checked(&mut conn).expect("third save");
                let conflict = expect_conflict(mine.save_checked(&mut conn));
                assert_eq!(conflict.expected::<i32>(), Some(2));
                assert_eq!(conflict.current::<i32>(), Some(3));

                // The row is deleted: save_merging reports the deleted conflict.
                diesel::delete(schema::wiki_articles::table)
                    .execute(&mut conn)
                    .unwrap();
                let conflict = expect_conflict(mine.save_merging(&mut conn));
                assert_eq!(conflict.state(), &ConflictState::Deleted);
            }

            // ---- 3. batch saves --------------------------------------------------

            #[test]
            fn batch_saves_all_with_one_update_each() {
                let db = test_db!();
                seed_accounts(&db, 3);
                let mut conn = db.conn();
                let mut batch: Vec<_> = (1..=3).map(|id| account(&mut conn, id)).collect();
                for a in &mut batch {
                    a.balance -= 10;
                }
                let log = SqlLog::install(&mut conn);
                batch.save_all_checked(&mut conn).expect("batch save");
                let statements = log.take();
                assert_eq!(
                    updates(&statements).len(),
                    3,
                    "one UPDATE per entity: {statements:?}"
                );
                assert_eq!(
                    statements.len() - 3,
                    statements
                        .iter()
                        .filter(|s| !s.trim_start().to_ascii_uppercase().starts_with("UPDATE"))
                        .count(),
                );
                assert!(
                    statements
                        .iter()
                        .all(|s| !s.trim_start().to_ascii_uppercase().starts_with("SELECT")),
                    "no read on success: {statements:?}"
                );
                for a in &batch {
                    assert_eq!(a.version, 2);
                    assert_eq!(&account(&mut conn, a.id), a);
                }
            }

            #[test]
            fn batch_conflict_reports_every_stale_and_deleted_entity_and_writes_nothing() {
                let db = test_db!();
                seed_accounts(&db, 4);
                let mut conn = db.conn();
                let mut batch: Vec<_> = (1..=4).map(|id| account(&mut conn, id)).collect();
                // Another connection: account 2 is stale, account 4 is deleted.
                let mut other = db.conn();
                let mut two = account(&mut other, 2);
                two.balance = 50;
                two.save_checked(&mut other).expect("other save");
                account(&mut other, 4)
                    .delete_checked(&mut other)
                    .expect("other delete");

                for a in &mut batch {
                    a.balance = 0;
                }
                let before = batch.clone();
                let error = batch.save_all_checked(&mut conn).unwrap_err();
                let conflict = error.as_batch_conflict().expect("a batch conflict");
                assert_eq!(conflict.total(), 4);
                assert_eq!(
                    conflict.indices().collect::<Vec<_>>(),
                    [1, 3],
                    "every conflict: {conflict:?}"
                );
                assert_eq!(conflict.conflict_at(1).unwrap().current::<i32>(), Some(2));
                assert!(conflict.conflict_at(3).unwrap().is_deleted());
                assert!(error.is_retryable());
                assert_eq!(batch, before, "no token advanced");
                assert_eq!(account(&mut conn, 1).balance, 100, "rolled back");
                assert_eq!(account(&mut conn, 3).balance, 100, "rolled back");
                assert_eq!(account(&mut conn, 2).balance, 50);
            }

            #[test]
            fn a_failed_batch_inside_a_transaction_rolls_back_to_its_savepoint_only() {
                let db = test_db!();
                seed_accounts(&db, 3);
                let mut conn = db.conn();
                let mut batch = vec![account(&mut conn, 1), account(&mut conn, 2)];
                let mut other = account(&mut conn, 2);
                other.balance = 42;
                other.save_checked(&mut conn).expect("other save");

                let mut three = account(&mut conn, 3);
                let batch_error = conn
                    .transaction::<_, Error, _>(|conn| {
                        three.balance = 3;
                        three.save_checked(conn)?;
                        batch[0].balance = 0;
                        let error = batch.save_all_checked(conn).unwrap_err();
                        Ok(error)
                    })
                    .expect("the outer transaction commits");
                assert_eq!(
                    batch_error
                        .as_batch_conflict()
                        .unwrap()
                        .indices()
                        .collect::<Vec<_>>(),
                    [1]
                );
                assert_eq!(
                    account(&mut conn, 3).balance,
                    3,
                    "the outer write committed"
                );
                assert_eq!(account(&mut conn, 1).balance, 100, "the batch rolled back");
                assert_eq!(batch[0].version, 1);
            }

            #[test]
            fn racing_batch_and_single_save_leave_one_consistent_outcome() {
                let db = test_db!();
                seed_accounts(&db, 2);
                let report = Race::new(2).run(
                    |_| {
                        let mut conn = db.conn();
                        let batch = vec![account(&mut conn, 1), account(&mut conn, 2)];
                        (conn, batch)
                    },
                    |writer, (mut conn, mut batch)| {
                        if writer == 0 {
                            for a in &mut batch {
                                a.balance = 0;
                            }
                            batch
                                .save_all_checked(&mut conn)
                                .map_err(|e| e.is_retryable())
                        } else {
                            batch[1].balance = 1;
                            batch[1]
                                .save_checked(&mut conn)
                                .map_err(|e| e.is_conflict())
                        }
                    },
                );
                let outcomes = report.into_values().unwrap();
                let mut conn = db.conn();
                let (one, two) = (account(&mut conn, 1), account(&mut conn, 2));
                match (&outcomes[0], &outcomes[1]) {
                    (Ok(()), Err(true)) => assert_eq!((one.balance, two.balance), (0, 0)),
                    (Err(true), Ok(())) => {
                        assert_eq!(
                            (one.balance, two.balance),
                            (100, 1),
                            "the batch wrote nothing"
                        );
                    }
                    other => panic!("exactly one writer wins: {other:?}"),
                }
            }

            // ---- 4. force increment ----------------------------------------------

            /// Two writers edit different items of one order, each in a transaction;
            /// with `force`, each also force-increments the order.
            fn race_items(db: &TestDb<Conn>, force: bool) -> Vec<Result<(), Error>> {
                let report = Race::new(2).run(
                    |writer| {
                        let mut conn = db.conn();
                        let order = Order::find(&mut conn, 1).expect("order");
                        let item =
                            OrderItem::find(&mut conn, (1, writer as i32 + 1)).expect("item");
                        (conn, order, item)
                    },
                    |_, (mut conn, mut order, mut item)| {
                        conn.transaction(|conn| {
                            item.quantity += 5;
                            item.save_checked(conn)?;
                            if force {
                                order.force_increment(conn)?;
                            }
                            Ok(())
                        })
                    },
                );
                report.into_values().unwrap()
            }

            #[test]
            fn force_increment_makes_writers_of_different_children_conflict_on_the_root() {
                let db = test_db!();
                seed_order(&db);
                let outcomes = race_items(&db, true);
                assert_eq!(
                    outcomes.iter().filter(|o| o.is_ok()).count(),
                    1,
                    "{outcomes:?}"
                );
                let loser = outcomes.into_iter().find_map(Result::err).unwrap();
                let conflict = expect_conflict::<()>(Err(loser));
                assert_eq!(conflict.table(), "purchase_orders");
                assert_eq!(conflict.operation(), Operation::ForceIncrement);
                assert_eq!(conflict.current::<i32>(), Some(2));

                let mut conn = db.conn();
                assert_eq!(Order::find(&mut conn, 1).unwrap().version, 2);
                let quantities: Vec<i32> = schema::purchase_order_items::table
                    .order(schema::purchase_order_items::line_no)
                    .select(schema::purchase_order_items::quantity)
                    .load(&mut conn)
                    .unwrap();
                assert_eq!(
                    quantities.iter().filter(|&&q| q == 6).count(),
                    1,
                    "the loser's item write rolled back: {quantities:?}"
                );
            }

            #[test]
            fn control_without_force_increment_both_children_writes_commit() {
                let db = test_db!();
                seed_order(&db);
                let outcomes = race_items(&db, false);
                assert!(outcomes.iter().all(Result::is_ok), "{outcomes:?}");
                assert_eq!(
                    Order::find(&mut db.conn(), 1).unwrap().version,
                    1,
                    "the root never moved"
                );
            }

            #[test]
            fn force_increment_writes_only_the_token() {
                let db = test_db!();
                seed_order(&db);
                let mut conn = db.conn();
                let mut order = Order::find(&mut conn, 1).unwrap();
                order.note = "in memory only".into();
                let log = SqlLog::install(&mut conn);
                order.force_increment(&mut conn).expect("force increment");
                let statements = log.take();
                assert_eq!(statements.len(), 1);
                assert!(!sql_only(&statements[0]).contains("note"), "{statements:?}");
                let stored = Order::find(&mut conn, 1).unwrap();
                assert_eq!((stored.note.as_str(), stored.version), ("order", 2));
                assert_eq!(order.version, 2);
            }

            // ---- 5. bypass-writer guard --------------------------------------------

            fn bypass_then_save(db: &TestDb<Conn>) -> Result<(), Error> {
                let mut conn = db.conn();
                let mut mine = account(&mut conn, 1);
                raw_update(
                    &mut db.conn(),
                    "UPDATE accounts SET balance = 7 WHERE id = 1",
                );
                mine.balance = 90;
                mine.save_checked(&mut conn)
            }

            #[test]
            fn raw_update_without_the_guard_is_a_lost_update() {
                let db = test_db!();
                seed_accounts(&db, 1);
                bypass_then_save(&db).expect("the stale save succeeds");
                let stored = account(&mut db.conn(), 1);
                assert_eq!(stored.balance, 90, "the raw write (balance 7) was lost");
            }

            #[test]
            fn raw_update_with_the_guard_is_a_conflict() {
                let db = test_db!();
                seed_accounts(&db, 1);
                let guard = BypassGuard::of::<Account>();
                db.conn()
                    .batch_execute(&guard.install_sql(GUARD).expect("guard DDL"))
                    .expect("install guard");

                let conflict = expect_conflict(bypass_then_save(&db));
                assert_eq!(
                    conflict.current::<i32>(),
                    Some(2),
                    "the trigger advanced the token"
                );
                let mut conn = db.conn();
                assert_eq!(account(&mut conn, 1).balance, 7, "the raw write survives");

                // The library's own writes are not bumped twice.
                let mut fresh = account(&mut conn, 1);
                fresh.balance = 8;
                fresh.save_checked(&mut conn).expect("checked save");
                assert_eq!(
                    account(&mut conn, 1),
                    fresh,
                    "stored token = the one it assigned"
                );

                // Uninstalled, the lost update is back.
                conn.batch_execute(&guard.uninstall_sql(GUARD).expect("guard DDL"))
                    .expect("uninstall");
                bypass_then_save(&db).expect("lost update again");
            }

            #[test]
            fn uuid_token_guard_advances_on_raw_updates() {
                let db = test_db!();
                let seeded = seed_ticket(&db);
                let guard = BypassGuard::of::<Ticket>();
                db.conn()
                    .batch_execute(&guard.install_sql(GUARD).expect("guard DDL"))
                    .expect("install guard");
                let mut conn = db.conn();
                let mut mine = Ticket::find(&mut conn, 1).unwrap();
                raw_update(
                    &mut db.conn(),
                    "UPDATE tickets SET seat = 'B2' WHERE id = 1",
                );
                let current = Ticket::find(&mut conn, 1).unwrap().version;
                assert_ne!(current, seeded.version, "the trigger drew a fresh UUID");
                mine.seat = "C3".into();
                let conflict = expect_conflict(mine.save_checked(&mut conn));
                assert_eq!(conflict.current::<UuidToken>(), Some(current));
            }

            // ---- 7. honest bulk writes, soft delete, skipped columns -----------------

            #[test]
            fn bulk_update_advances_the_token_of_every_row_it_touches() {
                let db = test_db!();
                seed_accounts(&db, 3);
                let mut conn = db.conn();
                let in_flight: Vec<_> = (1..=3).map(|id| account(&mut conn, id)).collect();

                let touched = Account::bulk_update(
                    schema::accounts::table.filter(schema::accounts::id.le(2)),
                    schema::accounts::balance.eq(0),
                )
                .execute(&mut conn)
                .expect("bulk update");
                assert_eq!(touched, 2);

                for mut a in in_flight {
                    a.balance += 1;
                    let result = a.save_checked(&mut conn);
                    if a.id <= 2 {
                        assert_eq!(expect_conflict(result).current::<i32>(), Some(2));
                        assert_eq!(
                            account(&mut conn, a.id).balance,
                            0,
                            "the bulk write survives"
                        );
                    } else {
                        result.expect("an untouched row saves");
                    }
                }
            }

            #[test]
            fn control_plain_bulk_update_is_silently_overwritten() {
                let db = test_db!();
                seed_accounts(&db, 1);
                let mut conn = db.conn();
                let mut in_flight = account(&mut conn, 1);
                diesel::update(schema::accounts::table)
                    .set(schema::accounts::balance.eq(0))
                    .execute(&mut conn)
                    .unwrap();
                in_flight.balance += 1;
                in_flight
                    .save_checked(&mut conn)
                    .expect("the stale save wins");
                assert_eq!(
                    account(&mut conn, 1).balance,
                    101,
                    "the bulk write was lost"
                );
            }

            #[test]
            fn bulk_update_draws_a_fresh_uuid() {
                let db = test_db!();
                let seeded = seed_ticket(&db);
                let mut conn = db.conn();
                Ticket::bulk_update(schema::tickets::table, schema::tickets::seat.eq("Z9"))
                    .execute(&mut conn)
                    .unwrap();
                let stored = Ticket::find(&mut conn, 1).unwrap();
                assert_ne!(stored.version, seeded.version);
                let mut stale = seeded;
                stale.seat = "A2".into();
                assert!(stale.save_checked(&mut conn).unwrap_err().is_conflict());
            }

            #[test]
            fn soft_delete_is_checked_and_advances_the_token() {
                let db = test_db!();
                seed_accounts(&db, 1);
                let mut conn = db.conn();
                let mut first = account(&mut conn, 1);
                let mut second = first.clone();

                first.balance = 1; // not written by the soft delete
                first
                    .soft_delete_checked(&mut conn, schema::accounts::deleted.eq(true))
                    .expect("soft delete");
                assert_eq!(first.version, 2);
                let stored = account(&mut conn, 1);
                assert_eq!(
                    (stored.deleted, stored.balance, stored.version),
                    (true, 100, 2)
                );

                // A writer still holding the live row cannot resurrect or edit it...
                second.balance = 5;
                let mut third = second.clone();
                assert!(
                    expect_conflict(second.save_checked(&mut conn)).current::<i32>() == Some(2)
                );
                // ...nor soft-delete it again from a stale token.
                let conflict = expect_conflict(
                    third.soft_delete_checked(&mut conn, schema::accounts::deleted.eq(true)),
                );
                assert_eq!(conflict.operation(), Operation::SoftDelete);
                assert_eq!(account(&mut conn, 1), stored);
            }

            #[test]
            fn skipped_columns_are_never_written_by_checked_saves() {
                let db = test_db!();
                seed_article(&db);
                let mut conn = db.conn();
                let mut occ_skip = article(&mut conn);
                // The counter is maintained by atomic SQL elsewhere, token untouched.
                raw_update(
                    &mut db.conn(),
                    "UPDATE wiki_articles SET views = views + 1 WHERE id = 1",
                );

                let log = SqlLog::install(&mut conn);
                occ_skip.views = 999;
                occ_skip.title = "occ skip".into();
                occ_skip.save_checked(&mut conn).expect("save");
                assert_eq!(article(&mut conn).views, 1);

                let mut skip_update = ArticleSkipUpdate::find(&mut conn, 1).unwrap();
                skip_update.views = 998;
                skip_update.title = "skip update".into();
                skip_update.save_checked(&mut conn).expect("save");
                assert_eq!(article(&mut conn).views, 1);

                let mut tracked = Tracked::new(article(&mut conn));
                tracked.views = 997;
                tracked.title = "tracked".into();
                assert!(!tracked.changed().contains("views"), "not a tracked field");
                tracked.save_checked(&mut conn).expect("save");
                let statements = log.take();
                assert_eq!(updates(&statements).len(), 3);
                for statement in updates(&statements) {
                    assert!(!sql_only(statement).contains("views"), "{statement}");
                }
                let stored = article(&mut conn);
                assert_eq!(stored.views, 1, "only the atomic increment wrote it");
                assert_eq!(stored.title, "tracked");
            }
        }
    };
}
