//! Skipped columns, in both flavours.

flavour_prelude!();

use diesel_occ::Tracked;
use diesel_occ_tests::statements::{StatementCounter, sql_only, updates};

use super::entities::{Article, ArticleSkipUpdate};
use super::schema;

#[flavour]
async fn article(conn: &mut Conn) -> Article {
    Article::find(conn, 1).await.expect("article row")
}

#[flavour(test)]
async fn skipped_columns_are_never_written_by_checked_saves() {
    let (db, mut conn) = db_and_conn!();
    insert_rows!(&mut conn, schema::wiki_articles::table, Article::seed());
    let mut occ_skip = article(&mut conn).await;
    // The counter is maintained by atomic SQL elsewhere, token untouched.
    let increment = "UPDATE wiki_articles SET views = views + 1 WHERE id = 1";
    raw_sql(&db, increment).await;

    let log = StatementCounter::install_in_flavour(&mut conn);
    occ_skip.views = 999;
    occ_skip.title = "occ skip".into();
    occ_skip.save_checked(&mut conn).await.expect("save");
    assert_eq!(article(&mut conn).await.views, 1);

    let mut skip_update = ArticleSkipUpdate::find(&mut conn, 1).await.unwrap();
    skip_update.views = 998;
    skip_update.title = "skip update".into();
    skip_update.save_checked(&mut conn).await.expect("save");
    assert_eq!(article(&mut conn).await.views, 1);

    let mut tracked = Tracked::new(article(&mut conn).await);
    tracked.edit().views = 997;
    tracked.edit().title = "tracked".into();
    assert!(!tracked.changed().contains("views"), "not a tracked field");
    tracked.save_checked(&mut conn).await.expect("save");
    let statements = log.take_sql();
    assert_eq!(updates(&statements).len(), 3);
    for statement in updates(&statements) {
        assert!(!sql_only(statement).contains("views"), "{statement}");
    }
    let stored = article(&mut conn).await;
    assert_eq!(stored.views, 1, "only the atomic increment wrote it");
    assert_eq!(stored.title, "tracked");
}
