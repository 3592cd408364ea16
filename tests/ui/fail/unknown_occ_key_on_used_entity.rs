//! A misspelled `#[occ(...)]` key on an entity the rest of the program uses: the derive
//! reports the key, and its stubs (`fallback.rs`) keep every use of the entity quiet, so
//! the user reads one error, not one more per call.
use diesel::prelude::*;
use diesel_occ::prelude::*;
use diesel_occ::{Fields, Tracked, Tracking};

diesel::table! {
    stock (id) {
        id -> Integer,
        available -> Integer,
        version -> Integer,
    }
}

#[derive(Debug, Clone, PartialEq, Queryable, Selectable, Versioned)]
#[diesel(table_name = stock)]
#[occ(track)]
struct Stock {
    id: i32,
    available: i32,
    #[occ(verison)]
    version: i32,
}

fn main() {
    let mut conn = SqliteConnection::establish(":memory:").unwrap();
    let mut stock = Stock::find(&mut conn, 1).unwrap();
    stock.available -= 1;
    stock.save_checked(&mut conn).unwrap();
    stock
        .save_checked_where(&mut conn, stock::available.ge(0))
        .unwrap();
    let token: &i32 = stock.token();
    let _ = (token, stock.key(), Stock::TABLE_NAME, Stock::FIELDS);
    let mut tracked = Tracked::new(stock.clone());
    tracked.edit().available = 3;
    assert_eq!(tracked.changed(), Fields::named("available").unwrap());
    TrackedDsl::save_checked(&mut tracked, &mut conn).unwrap();
    stock.delete_checked(&mut conn).unwrap();
    generic::<Stock>();
}

fn generic<T: Versioned + Tracking>() {}

/// The async twins, in a module of their own: the two preludes share method names.
mod asynchronous {
    use diesel_async::AsyncPgConnection;
    use diesel_occ::asynchronous::prelude::*;

    use super::Stock;

    #[allow(dead_code)]
    async fn save(conn: &mut AsyncPgConnection) {
        let mut stock = Stock::find(conn, 1).await.unwrap();
        stock.save_checked(conn).await.unwrap();
        stock.delete_checked(conn).await.unwrap();
    }
}
