//! Inventory reservation with a client-held token.
//!
//! A client reads a stock row and keeps its token (a UUID). To reserve, it sends the
//! SKU, a quantity and that token back. The service:
//!
//! 1. refuses a quantity that is not positive and a token that is missing, malformed or
//!    nil, before touching the database;
//! 2. loads the row with [`find_checked`](EntityDsl::find_checked): an unknown SKU is a
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

mod error;
mod walkthrough;

use diesel::prelude::*;
use diesel_occ::prelude::*;
use diesel_occ::{UuidToken, VersionToken};

pub use self::error::ReserveError;
pub use self::walkthrough::walkthrough;

use super::{Conn, Pool};
use crate::repository::Repository;
use crate::schema::inventory;

/// Every read and write of a stock row goes through this repository.
const STOCK: Repository<Stock> = Repository::new();

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

/// A new SKU as an operator enters it: the row without its token, which the
/// repository's create adds.
#[derive(Debug, Insertable)]
#[diesel(table_name = inventory)]
struct NewStock<'a> {
    sku: &'a str,
    name: &'a str,
    available: i32,
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

/// Adds a SKU with a fresh token.
pub fn add_item(
    conn: &mut Conn,
    sku: &str,
    name: &str,
    available: i32,
) -> Result<StockView, ReserveError> {
    let form = NewStock {
        sku,
        name,
        available,
    };
    let version = STOCK
        .create_from(conn, form)
        .map_err(|e| ReserveError::from_occ(e, sku))?;
    Ok(StockView::from(&Stock {
        sku: sku.to_owned(),
        name: name.to_owned(),
        available,
        version,
    }))
}

/// Reads a SKU and its token, as a client would before reserving.
pub fn stock(conn: &mut Conn, sku: &str) -> Result<StockView, ReserveError> {
    let stock = STOCK
        .get(conn, sku.to_owned())
        .map_err(|e| ReserveError::from_occ(e, sku))?;
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
    pub fn save(mut self, conn: &mut Conn) -> Result<Reserved, ReserveError> {
        let sku = self.stock.sku.clone();
        STOCK
            .save(conn, &mut self.stock)
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
    conn: &mut Conn,
    request: &ReserveRequest<'_>,
) -> Result<PreparedReservation, ReserveError> {
    if request.quantity <= 0 {
        return Err(ReserveError::NonPositiveQuantity(request.quantity));
    }
    let text = request.token.ok_or(ReserveError::TokenRequired)?;
    let expected = UuidToken::decode(text).map_err(|e| ReserveError::InvalidToken(e.reason))?;

    let mut stock = STOCK
        .get_checked(conn, request.sku.to_owned(), &expected)
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
pub fn reserve(conn: &mut Conn, request: &ReserveRequest<'_>) -> Result<Reserved, ReserveError> {
    prepare(conn, request)?.save(conn)
}

/// A bulk adjustment that does not use the client protocol (an import, an admin tool):
/// one atomic `UPDATE inventory SET available = available + delta, version = <fresh>`,
/// built by [`Versioned::bulk_update`], the library's declared bypass of the per-entity
/// check, then a read of the row through the repository.
///
/// It assigns a fresh token, as every writer of protected state must, so clients
/// holding the old one are told they are stale. It checks nothing itself: the
/// database's CHECK constraint is what stops it from driving stock below zero
/// ([`ReserveError::StockGuard`]). Returns the units available afterwards.
pub fn adjust_stock(conn: &mut Conn, sku: &str, delta: i32) -> Result<i32, ReserveError> {
    use crate::schema::inventory::dsl::{available, inventory as table};
    conn.transaction::<_, diesel_occ::Error, _>(|conn| {
        Stock::bulk_update(table.find(sku), available.eq(available + delta)).execute(conn)?;
        STOCK.get(conn, sku.to_owned()).map(|stock| stock.available)
    })
    .map_err(|e| ReserveError::from_occ(e, sku))
}

/// Deletes a SKU for a client holding `token` (a checked delete).
pub fn discontinue(conn: &mut Conn, sku: &str, token: &str) -> Result<(), ReserveError> {
    let expected = UuidToken::decode(token).map_err(|e| ReserveError::InvalidToken(e.reason))?;
    let stock = STOCK
        .get_checked(conn, sku.to_owned(), &expected)
        .map_err(|e| ReserveError::from_occ(e, sku))?;
    STOCK
        .remove(conn, &stock)
        .map_err(|e| ReserveError::from_occ(e, sku))
}

/// Empties the inventory table (the apps start from a known state).
pub fn reset(conn: &mut Conn) -> QueryResult<()> {
    diesel::delete(inventory::table).execute(conn).map(drop)
}
