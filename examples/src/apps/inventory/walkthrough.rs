//! The inventory walkthrough: each rule of the scenario, one line each.

use std::io::{self, Write};

use super::{
    Conn, Pool, ReserveError, ReserveRequest, Reserved, add_item, adjust_stock, discontinue,
    prepare, reserve, reset, stock,
};
use crate::AppResult;

fn short(token: &str) -> &str {
    token.get(..8).unwrap_or(token)
}

fn attempt(
    out: &mut dyn Write,
    label: &str,
    request: ReserveRequest<'_>,
    conn: &mut Conn,
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
pub fn walkthrough(pool: &Pool, out: &mut dyn Write) -> AppResult {
    let mut conn = pool.get()?;
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
    let mut other = pool.get()?;
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
