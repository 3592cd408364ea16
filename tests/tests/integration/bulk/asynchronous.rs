//! Bulk updates on an async connection (diesel-async).

use diesel::prelude::{ExpressionMethods, Insertable, Queryable, Selectable};
use diesel_async::RunQueryDsl;
use diesel_occ::Error;
use diesel_occ::asynchronous::prelude::*;

use super::{AsyncConn as Conn, schema};

#[derive(Debug, Clone, PartialEq, Queryable, Selectable, Insertable, Versioned)]
#[diesel(table_name = schema::small_counters)]
struct Small {
    id: i32,
    value: i32,
    #[occ(version)]
    version: i16,
}

#[derive(Debug, Clone, PartialEq, Queryable, Selectable, Insertable, Versioned)]
#[diesel(table_name = schema::counters)]
struct Medium {
    id: i32,
    value: i32,
    label: Option<String>,
    #[occ(version)]
    version: i32,
}

#[derive(Debug, Clone, PartialEq, Queryable, Selectable, Insertable, Versioned)]
#[diesel(table_name = schema::big_counters)]
struct Big {
    id: i32,
    value: i32,
    #[occ(version)]
    version: i64,
}

/// Row 1 holds `MAX`, row 2 an ordinary token; one bulk write touches both.
/// Row 1 must wrap to `MIN` (row 2 counts on), then save with a checked save,
/// while an entity read before the bulk write conflicts.
macro_rules! wrap_scenario {
    ($entity:ident, $table:ident, $int:ty, $row:expr) => {{
        let db = async_test_db!();
        let mut conn = db.conn().await;
        let row = $row;
        for (id, version) in [(1, <$int>::MAX), (2, 5)] {
            diesel::insert_into(schema::$table::table)
                .values($entity {
                    id,
                    version,
                    ..row.clone()
                })
                .execute(&mut conn)
                .await
                .expect("insert");
        }
        let mut in_flight = $entity::find(&mut conn, 1).await.expect("row 1");

        let touched = $entity::bulk_update(schema::$table::table, schema::$table::value.eq(7))
            .execute(&mut conn)
            .await
            .expect("a bulk update of a row at MAX");
        assert_eq!(touched, 2);

        let mut wrapped = $entity::find(&mut conn, 1).await.expect("row 1");
        assert_eq!((wrapped.value, wrapped.version), (7, <$int>::MIN));
        assert_eq!($entity::find(&mut conn, 2).await.expect("row 2").version, 6);

        wrapped.value = 8;
        wrapped
            .save_checked(&mut conn)
            .await
            .expect("the wrapped row saves");
        assert_eq!(wrapped.version, <$int>::MIN + 1);

        in_flight.value = 9;
        match in_flight.save_checked(&mut conn).await {
            Err(Error::Conflict(conflict)) => {
                assert_eq!(conflict.current::<$int>(), Some(<$int>::MIN + 1))
            }
            other => panic!("expected a conflict, got {other:?}"),
        }
        assert_eq!($entity::find(&mut conn, 1).await.expect("row 1"), wrapped);
    }};
}

#[tokio::test]
async fn bulk_update_wraps_an_i16_token_at_max() {
    wrap_scenario!(
        Small,
        small_counters,
        i16,
        Small {
            id: 0,
            value: 0,
            version: 0
        }
    );
}

#[tokio::test]
async fn bulk_update_wraps_an_i32_token_at_max() {
    wrap_scenario!(
        Medium,
        counters,
        i32,
        Medium {
            id: 0,
            value: 0,
            label: None,
            version: 0
        }
    );
}

#[tokio::test]
async fn bulk_update_wraps_an_i64_token_at_max() {
    wrap_scenario!(
        Big,
        big_counters,
        i64,
        Big {
            id: 0,
            value: 0,
            version: 0
        }
    );
}
