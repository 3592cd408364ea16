//! Inventory reservation with a client-held token (seeds/ef-core-concurrency-tokens).
//!
//! A client reads a stock row and keeps its token (a UUID). To reserve, it sends the
//! SKU, a quantity and that token back. The service:
//!
//! 1. refuses a quantity that is not positive and a token that is missing, malformed or
//!    nil, before touching the database;
//! 2. loads the row with [`find_checked`](CheckedDsl::find_checked): an unknown SKU is a
//!    clear error and a token already known to be stale is rejected before the edit; the
//!    client's token is kept, never replaced by the freshly loaded one;
//! 3. checks the stock, decrements it and saves with
//!    [`save_checked`](CheckedDsl::save_checked): another writer that committed between
//!    the check and the save makes the predicate match no row, so the race is a typed
//!    [`ReserveError::Conflict`] (or [`ReserveError::Deleted`]) instead of a lost update;
//! 4. the database's `CHECK (available >= 0)` stays the final guard for writers that do
//!    not follow the protocol, such as [`adjust_stock`].
//!
//! Steps 1-2 are [`prepare`], step 3 is [`PreparedReservation::save`]; [`reserve`] runs
//! both. They are separate so a test (or the demo) can put another writer between them.

use std::fmt;
use std::io::{self, Write};

use diesel::prelude::*;
use diesel_occ::prelude::*;
use diesel_occ::{Error as OccError, InvalidTokenReason, UuidToken};

use crate::db::{AnyConnection, Target};
use crate::schema::inventory;

/// A stock row. `version` is the concurrency token the client holds.
#[derive(Debug, Clone, PartialEq, Queryable, Selectable, Insertable, Versioned)]
#[diesel(table_name = inventory, primary_key(sku))]
pub struct Stock {
    /// The stock-keeping unit, the key.
    pub sku: String,
    /// A display name.
    pub name: String,
    /// Units that can still be reserved; `CHECK (available >= 0)`.
    pub available: i32,
    /// The concurrency token: a fresh UUID on every write.
    #[occ(version)]
    pub version: UuidToken,
}

/// What a client sees of a stock row: the values and the token to send back.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StockView {
    /// The SKU.
    pub sku: String,
    /// The display name.
    pub name: String,
    /// Units available.
    pub available: i32,
    /// The token, encoded for the client (a hyphenated UUID).
    pub token: String,
}

impl From<&Stock> for StockView {
    fn from(stock: &Stock) -> Self {
        StockView {
            sku: stock.sku.clone(),
            name: stock.name.clone(),
            available: stock.available,
            token: stock.version.encode(),
        }
    }
}

/// A reservation command as a client sends it.
#[derive(Debug, Clone, Copy)]
pub struct ReserveRequest<'a> {
    /// The SKU to reserve.
    pub sku: &'a str,
    /// How many units; must be positive.
    pub quantity: i32,
    /// The token the client read, as it sent it; `None` when the field was missing.
    pub token: Option<&'a str>,
}

/// A successful reservation.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Reserved {
    /// The SKU.
    pub sku: String,
    /// Units reserved.
    pub quantity: i32,
    /// Units left.
    pub available: i32,
    /// The replacement token, for the client's next command.
    pub token: String,
}

/// Why a reservation was refused. Nothing was written in any of these cases.
#[derive(Debug)]
#[non_exhaustive]
pub enum ReserveError {
    /// The quantity is zero or negative.
    NonPositiveQuantity(i32),
    /// The client sent no token.
    TokenRequired,
    /// The client's token is empty, malformed or the nil UUID.
    InvalidToken(InvalidTokenReason),
    /// No such SKU.
    UnknownSku(String),
    /// The client's token is already stale: rejected before the edit.
    StaleToken {
        /// The token the row holds now, for the client to refresh with.
        current: String,
    },
    /// Not enough stock for the quantity.
    InsufficientStock {
        /// Units requested.
        requested: i32,
        /// Units available.
        available: i32,
    },
    /// Another writer changed the row between the check and the save: the predicate
    /// matched no row. Refresh and decide again.
    Conflict {
        /// The token the row holds now.
        current: String,
    },
    /// The row was deleted between the check and the save.
    Deleted,
    /// The database's `CHECK (available >= 0)` refused the write: the final guard.
    StockGuard,
    /// The database failed; the text names only the kind of failure.
    Database(String),
}

impl fmt::Display for ReserveError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ReserveError::NonPositiveQuantity(q) => {
                write!(f, "quantity must be positive (got {q})")
            }
            ReserveError::TokenRequired => f.write_str("a version token is required"),
            ReserveError::InvalidToken(reason) => write!(f, "invalid version token: {reason}"),
            ReserveError::UnknownSku(sku) => write!(f, "unknown SKU {sku}"),
            ReserveError::StaleToken { .. } => {
                f.write_str("the submitted version is stale: refresh before trying again")
            }
            ReserveError::InsufficientStock {
                requested,
                available,
            } => {
                write!(
                    f,
                    "not enough stock ({requested} requested, {available} available)"
                )
            }
            ReserveError::Conflict { .. } => {
                f.write_str("stock changed while saving: refresh before trying again")
            }
            ReserveError::Deleted => f.write_str("the SKU was deleted while saving"),
            ReserveError::StockGuard => {
                f.write_str("the database refused a negative stock (CHECK available >= 0)")
            }
            ReserveError::Database(kind) => write!(f, "database error: {kind}"),
        }
    }
}

impl std::error::Error for ReserveError {}

impl ReserveError {
    /// Maps a library error met while reading or writing `sku`.
    fn from_occ(error: OccError, sku: &str) -> ReserveError {
        match error {
            OccError::NotFound(_) => ReserveError::UnknownSku(sku.to_owned()),
            OccError::InvalidToken(invalid) => ReserveError::InvalidToken(invalid.reason),
            OccError::Conflict(conflict) => match conflict.current::<UuidToken>() {
                None => ReserveError::Deleted,
                Some(current) if conflict.operation() == diesel_occ::Operation::ClientToken => {
                    ReserveError::StaleToken {
                        current: current.encode(),
                    }
                }
                Some(current) => ReserveError::Conflict {
                    current: current.encode(),
                },
            },
            OccError::Database(error) if is_stock_guard(error.diesel_error()) => {
                ReserveError::StockGuard
            }
            OccError::Database(error) => ReserveError::Database(error.kind().to_owned()),
            other => ReserveError::Database(other.to_string()),
        }
    }
}

/// True when `error` is the `inventory_available_nonnegative` CHECK refusing a write.
///
/// PostgreSQL, MySQL 8 and SQLite report a check violation; MariaDB reports its own
/// error 4025 that Diesel does not classify, so its message is matched on the
/// constraint's name (the message is never shown to anyone).
fn is_stock_guard(error: &diesel::result::Error) -> bool {
    use diesel::result::{DatabaseErrorKind, Error};
    match error {
        Error::DatabaseError(DatabaseErrorKind::CheckViolation, _) => true,
        Error::DatabaseError(_, info) => info.message().contains("inventory_available_nonnegative"),
        _ => false,
    }
}

fn database(error: diesel::result::Error) -> ReserveError {
    ReserveError::from_occ(error.into(), "")
}

/// Adds a SKU with a fresh token.
pub fn add_item(
    conn: &mut AnyConnection,
    sku: &str,
    name: &str,
    available: i32,
) -> Result<StockView, ReserveError> {
    let stock = Stock {
        sku: sku.to_owned(),
        name: name.to_owned(),
        available,
        version: UuidToken::initial(),
    };
    diesel::insert_into(inventory::table)
        .values(&stock)
        .execute(conn)
        .map_err(database)?;
    Ok(StockView::from(&stock))
}

/// Reads a SKU and its token, as a client would before reserving.
pub fn stock(conn: &mut AnyConnection, sku: &str) -> Result<StockView, ReserveError> {
    let stock = Stock::find(conn, sku.to_owned()).map_err(|e| ReserveError::from_occ(e, sku))?;
    Ok(StockView::from(&stock))
}

/// A reservation that passed every check before the save: the row was loaded with the
/// client's token and holds enough stock.
#[derive(Debug)]
pub struct PreparedReservation {
    stock: Stock,
    quantity: i32,
}

impl PreparedReservation {
    /// Units left once this reservation is saved.
    pub fn available_after(&self) -> i32 {
        self.stock.available
    }

    /// Saves the decrement with the client's token in the predicate.
    pub fn save(mut self, conn: &mut AnyConnection) -> Result<Reserved, ReserveError> {
        let sku = self.stock.sku.clone();
        self.stock
            .save_checked(conn)
            .map_err(|e| ReserveError::from_occ(e, &sku))?;
        Ok(Reserved {
            sku,
            quantity: self.quantity,
            available: self.stock.available,
            token: self.stock.version.encode(),
        })
    }
}

/// Validates the command and loads the row with the client's token: every check that
/// can run before the save.
pub fn prepare(
    conn: &mut AnyConnection,
    request: &ReserveRequest<'_>,
) -> Result<PreparedReservation, ReserveError> {
    if request.quantity <= 0 {
        return Err(ReserveError::NonPositiveQuantity(request.quantity));
    }
    let text = request.token.ok_or(ReserveError::TokenRequired)?;
    let expected = UuidToken::decode(text).map_err(|e| ReserveError::InvalidToken(e.reason))?;

    let mut stock = Stock::find_checked(conn, request.sku.to_owned(), &expected)
        .map_err(|e| ReserveError::from_occ(e, request.sku))?;
    if stock.available < request.quantity {
        return Err(ReserveError::InsufficientStock {
            requested: request.quantity,
            available: stock.available,
        });
    }
    stock.available -= request.quantity;
    Ok(PreparedReservation {
        stock,
        quantity: request.quantity,
    })
}

/// Reserves `quantity` units of `sku` for a client holding `token`: [`prepare`], then
/// [`PreparedReservation::save`].
pub fn reserve(
    conn: &mut AnyConnection,
    request: &ReserveRequest<'_>,
) -> Result<Reserved, ReserveError> {
    prepare(conn, request)?.save(conn)
}

/// A bulk adjustment that does not use the client protocol (an import, an admin tool):
/// one atomic `UPDATE inventory SET available = available + delta, version = <fresh>`.
///
/// It assigns a fresh token, as every writer of protected state must, so clients
/// holding the old one are told they are stale. It checks nothing itself: the
/// database's CHECK constraint is what stops it from driving stock below zero
/// ([`ReserveError::StockGuard`]). Returns the units available afterwards.
pub fn adjust_stock(conn: &mut AnyConnection, sku: &str, delta: i32) -> Result<i32, ReserveError> {
    use crate::schema::inventory::dsl::{available, inventory as table, version};
    conn.transaction(|conn| {
        let updated = diesel::update(table.find(sku))
            .set((
                available.eq(available + delta),
                version.eq(UuidToken::initial()),
            ))
            .execute(conn)?;
        if updated == 0 {
            return Ok(None);
        }
        table.find(sku).select(available).first(conn).map(Some)
    })
    .map_err(|e| ReserveError::from_occ(OccError::from(e), sku))?
    .ok_or_else(|| ReserveError::UnknownSku(sku.to_owned()))
}

/// Deletes a SKU for a client holding `token` (a checked delete).
pub fn discontinue(conn: &mut AnyConnection, sku: &str, token: &str) -> Result<(), ReserveError> {
    let expected = UuidToken::decode(token).map_err(|e| ReserveError::InvalidToken(e.reason))?;
    let stock = Stock::find_checked(conn, sku.to_owned(), &expected)
        .map_err(|e| ReserveError::from_occ(e, sku))?;
    stock
        .delete_checked(conn)
        .map_err(|e| ReserveError::from_occ(e, sku))
}

/// Empties the inventory table (the apps start from a known state).
pub fn reset(conn: &mut AnyConnection) -> QueryResult<()> {
    diesel::delete(inventory::table).execute(conn).map(drop)
}

fn short(token: &str) -> &str {
    token.get(..8).unwrap_or(token)
}

fn attempt(
    out: &mut dyn Write,
    label: &str,
    request: ReserveRequest<'_>,
    conn: &mut AnyConnection,
) -> io::Result<Option<Reserved>> {
    let result = reserve(conn, &request);
    writeln!(out, "  {label:<34} -> {}", outcome(&result))?;
    Ok(result.ok())
}

fn outcome(result: &Result<Reserved, ReserveError>) -> String {
    match result {
        Ok(r) => format!(
            "reserved {}, {} left, new token {}…",
            r.quantity,
            r.available,
            short(&r.token)
        ),
        Err(e) => format!("refused: {e}"),
    }
}

/// The inventory walkthrough: each rule of the scenario, one line each.
pub fn walkthrough(target: &Target, out: &mut dyn Write) -> crate::AppResult {
    let mut conn = target.connect_and_migrate()?;
    reset(&mut conn)?;
    let kettle = add_item(&mut conn, "SKU-KETTLE", "Tea kettle", 5)?;
    writeln!(
        out,
        "  SKU-KETTLE \"Tea kettle\": {} available, token {}…",
        kettle.available,
        short(&kettle.token)
    )?;

    let req = |quantity, token| ReserveRequest {
        sku: "SKU-KETTLE",
        quantity,
        token,
    };
    attempt(out, "reserve 0", req(0, Some(&kettle.token)), &mut conn)?;
    attempt(out, "reserve 1 without a token", req(1, None), &mut conn)?;
    attempt(
        out,
        "reserve 1 with the nil token",
        req(1, Some("00000000-0000-0000-0000-000000000000")),
        &mut conn,
    )?;
    attempt(
        out,
        "reserve 1 of SKU-MISSING",
        ReserveRequest {
            sku: "SKU-MISSING",
            quantity: 1,
            token: Some(&kettle.token),
        },
        &mut conn,
    )?;
    attempt(out, "reserve 9", req(9, Some(&kettle.token)), &mut conn)?;
    let first = attempt(
        out,
        "reserve 2 with the token read",
        req(2, Some(&kettle.token)),
        &mut conn,
    )?
    .ok_or("the first reservation failed")?;
    attempt(
        out,
        "reserve 1 again with the old token",
        req(1, Some(&kettle.token)),
        &mut conn,
    )?;

    // Two clients holding the same fresh token both pass every check; the first save
    // wins and the second one's predicate matches no row.
    let mut other = target.connect()?;
    let a = prepare(&mut conn, &req(1, Some(&first.token)))?;
    let b = prepare(&mut other, &req(1, Some(&first.token)))?;
    writeln!(
        out,
        "  two clients, same token {}…: both pass the checks",
        short(&first.token)
    )?;
    let a = a.save(&mut conn);
    writeln!(out, "  {:<34} -> {}", "client A saves", outcome(&a))?;
    let b = b.save(&mut other);
    writeln!(out, "  {:<34} -> {}", "client B saves", outcome(&b))?;

    // A bypassing writer is stopped by the CHECK constraint.
    let left = stock(&mut conn, "SKU-KETTLE")?;
    let guard = adjust_stock(&mut conn, "SKU-KETTLE", -(left.available + 1));
    writeln!(
        out,
        "  {:<34} -> {}",
        format!("bulk adjustment of -{}", left.available + 1),
        match &guard {
            Ok(n) => format!("applied, {n} left"),
            Err(e) => format!("refused: {e}"),
        }
    )?;

    // A row deleted between the check and the save.
    let now = stock(&mut conn, "SKU-KETTLE")?;
    let pending = prepare(&mut conn, &req(1, Some(&now.token)))?;
    discontinue(&mut other, "SKU-KETTLE", &now.token)?;
    writeln!(
        out,
        "  {:<34} -> deleted",
        "an admin discontinues SKU-KETTLE"
    )?;
    let late = pending.save(&mut conn);
    writeln!(
        out,
        "  {:<34} -> {}",
        "a reservation checked before that",
        outcome(&late)
    )?;
    let after = stock(&mut conn, "SKU-KETTLE");
    writeln!(
        out,
        "  {:<34} -> {}",
        "read SKU-KETTLE",
        match after {
            Ok(view) => format!("{} available", view.available),
            Err(e) => format!("{e}"),
        }
    )?;
    Ok(())
}
