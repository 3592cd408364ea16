//! Inventory reservation with a client-held token.

use diesel::prelude::*;
use diesel_occ::InvalidTokenReason;
use diesel_occ::testing::Race;
use diesel_occ_examples::schema::inventory as table;
use diesel_occ_tests::statements::StatementCounter;

use super::super::assert_told;
use super::app_backend::Pool;
use super::app_backend::inventory::{self, ReserveError, ReserveRequest, Reserved, StockView};
use super::{Conn, app_backend};

const SKU: &str = "SKU-1";

fn seed(pool: &Pool) -> StockView {
    let mut conn = pool.get().unwrap();
    inventory::add_item(&mut conn, SKU, "Tea kettle", 5).unwrap()
}

/// The test's database and pool, the item seeded (as it was read), and a connection.
macro_rules! seeded {
    () => {{
        let (db, pool) = app_db!();
        let read = seed(&pool);
        let conn = pool.get().unwrap();
        (db, pool, read, conn)
    }};
}

fn request<'a>(quantity: i32, token: Option<&'a str>) -> ReserveRequest<'a> {
    ReserveRequest {
        sku: SKU,
        quantity,
        token,
    }
}

fn reserve(conn: &mut Conn, quantity: i32, token: Option<&str>) -> Result<Reserved, ReserveError> {
    inventory::reserve(conn, &request(quantity, token))
}

fn current(pool: &Pool) -> StockView {
    inventory::stock(&mut pool.get().unwrap(), SKU).unwrap()
}

#[test]
fn quantity_must_be_positive() {
    let (_db, pool, read, mut conn) = seeded!();
    for quantity in [0, -1, i32::MIN] {
        let result = reserve(&mut conn, quantity, Some(&read.token));
        assert_matches!(result, Err(ReserveError::NonPositiveQuantity(q)) if *q == quantity);
    }
    assert_eq!(current(&pool), read, "nothing was written");
}

#[test]
fn token_must_be_present_well_formed_and_not_nil() {
    let (_db, pool, read, mut conn) = seeded!();
    let counter = StatementCounter::install(&mut *conn);
    let result = reserve(&mut conn, 1, None);
    assert_matches!(result, Err(ReserveError::TokenRequired));
    let nil = "00000000-0000-0000-0000-000000000000";
    for (token, reason) in [
        ("", InvalidTokenReason::Empty),
        (nil, InvalidTokenReason::Nil),
        ("not-a-uuid", InvalidTokenReason::Malformed),
    ] {
        let result = reserve(&mut conn, 1, Some(token));
        assert_matches!(result, Err(ReserveError::InvalidToken(r)) if *r == reason, "{token:?}");
    }
    assert_eq!(counter.take(), 0, "refused without touching the database");
    assert_eq!(current(&pool), read);
}

#[test]
fn unknown_sku_is_a_clear_error() {
    let (_db, _pool, read, mut conn) = seeded!();
    let mut nope = request(1, Some(&read.token));
    nope.sku = "SKU-NOPE";
    let result = inventory::reserve(&mut conn, &nope);
    assert_matches!(result, Err(ReserveError::UnknownSku(sku)) if sku == "SKU-NOPE");
    let error = inventory::stock(&mut conn, "SKU-NOPE").unwrap_err();
    assert_eq!(error.to_string(), "unknown SKU SKU-NOPE");
}

#[test]
fn insufficient_stock_is_refused_before_the_save() {
    let (_db, pool, read, mut conn) = seeded!();
    let result = reserve(&mut conn, 6, Some(&read.token));
    assert_matches!(
        result,
        Err(ReserveError::InsufficientStock {
            requested: 6,
            available: 5
        })
    );
    assert_eq!(current(&pool), read);
}

#[test]
fn a_reservation_returns_the_replacement_token() {
    let (_db, pool, read, mut conn) = seeded!();
    let reserved = reserve(&mut conn, 2, Some(&read.token)).unwrap();
    assert_eq!(reserved.available, 3);
    assert_ne!(reserved.token, read.token);
    let now = current(&pool);
    assert_eq!((now.available, now.token), (3, reserved.token.clone()));
    // The replacement token works for the next command.
    let next = reserve(&mut conn, 3, Some(&reserved.token)).unwrap();
    assert_eq!(next.available, 0);
}

#[test]
fn stale_token_is_rejected_before_the_edit() {
    let (_db, pool, read, mut conn) = seeded!();
    let first = reserve(&mut conn, 1, Some(&read.token)).unwrap();

    let counter = StatementCounter::install(&mut *conn);
    let result = reserve(&mut conn, 1, Some(&read.token));
    assert_matches!(result, Err(ReserveError::StaleToken { current }) if *current == first.token);
    assert_eq!(counter.take(), 1, "one SELECT, no UPDATE");
    let now = current(&pool);
    assert_eq!(now.available, 4, "the stale command changed nothing");
}

#[test]
fn race_at_save_is_detected_by_the_predicate() {
    let (_db, pool, read, _) = seeded!();
    // Two clients with the same token both pass every check, then both save.
    let report = Race::new(2).run(
        |_| {
            let mut conn = pool.get().unwrap();
            let prepared = inventory::prepare(&mut conn, &request(2, Some(&read.token)))
                .expect("both clients pass the checks");
            (conn, prepared)
        },
        |_, (mut conn, prepared)| prepared.save(&mut conn),
    );
    let outcomes: Vec<Result<Reserved, ReserveError>> = report.into_values().unwrap();
    let winners: Vec<_> = outcomes.iter().filter_map(|o| o.as_ref().ok()).collect();
    assert_eq!(winners.len(), 1, "exactly one reservation: {outcomes:?}");
    let loser = outcomes.iter().find_map(|o| o.as_ref().err()).unwrap();
    assert_matches!(loser, ReserveError::Conflict { current } if current == &winners[0].token);
    let now = current(&pool);
    assert_eq!(now.available, 3, "one decrement, not two");
    assert_eq!(now.token, winners[0].token);
}

#[test]
fn control_plain_read_modify_write_loses_a_reservation() {
    // The same race without the token in the predicate: both writes land and
    // one reservation vanishes, which is what the checked save prevents.
    let (_db, pool) = app_db!();
    seed(&pool);
    let report = Race::new(2).run(
        |_| {
            let conn = pool.get().unwrap();
            let available = current(&pool).available;
            (conn, available)
        },
        |_, (mut conn, available): (_, i32)| {
            diesel::update(table::table.find(SKU))
                .set(table::available.eq(available - 2))
                .execute(&mut conn)
                .unwrap()
        },
    );
    let written: Vec<usize> = report.into_values().unwrap();
    assert_eq!(written, vec![1, 1], "both writes reported success");
    let now = current(&pool);
    assert_eq!(now.available, 3, "4 units reserved, only 2 taken");
}

#[test]
fn check_constraint_is_the_final_guard() {
    let (_db, pool, read, mut conn) = seeded!();
    let result = inventory::adjust_stock(&mut conn, SKU, -6);
    assert_matches!(result, Err(ReserveError::StockGuard));
    let now = current(&pool);
    assert_eq!(now, read, "the refused adjustment changed nothing");
    // The message names the guard, not the driver's text.
    assert_eq!(
        result.unwrap_err().to_string(),
        "the database refused a negative stock (CHECK available >= 0)"
    );

    // An adjustment within bounds applies and assigns a fresh token, so a client
    // still holding the old one is told it is stale.
    assert_eq!(inventory::adjust_stock(&mut conn, SKU, -5).unwrap(), 0);
    let result = reserve(&mut conn, 1, Some(&read.token));
    assert_matches!(result, Err(ReserveError::StaleToken { .. }));
}

#[test]
fn deleted_row_is_detected() {
    let (_db, pool, read, mut conn) = seeded!();
    let mut admin = pool.get().unwrap();

    // Deleted between the check and the save: the predicate matches nothing.
    let prepared = inventory::prepare(&mut conn, &request(1, Some(&read.token))).unwrap();
    inventory::discontinue(&mut admin, SKU, &read.token).unwrap();
    assert_matches!(prepared.save(&mut conn), Err(ReserveError::Deleted));

    // Deleted before the command: an unknown SKU.
    let result = reserve(&mut conn, 1, Some(&read.token));
    assert_matches!(result, Err(ReserveError::UnknownSku(_)));
}

#[test]
fn delete_with_a_stale_token_is_refused() {
    let (_db, pool, read, mut conn) = seeded!();
    reserve(&mut conn, 1, Some(&read.token)).unwrap();
    let result = inventory::discontinue(&mut conn, SKU, &read.token);
    assert_matches!(result, Err(ReserveError::StaleToken { .. }));
    assert_eq!(current(&pool).available, 4, "still there");
}

#[test]
fn walkthrough_tells_the_whole_story() {
    let (_db, pool) = app_db!();
    let mut out = Vec::new();
    inventory::walkthrough(&pool, &mut out).unwrap();
    let told = [
        "quantity must be positive",
        "a version token is required",
        "the nil UUID is not a valid token",
        "unknown SKU SKU-MISSING",
        "the submitted version is stale",
        "client B saves                     -> refused: stock changed while saving",
        "refused: the database refused a negative stock",
        "refused: the SKU was deleted while saving",
    ];
    assert_told(out, &told);
}
