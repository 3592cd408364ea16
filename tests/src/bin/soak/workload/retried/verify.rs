//! The database after the run, checked against the merged log: the `inventory` rows
//! through the history check (`check.rs`), the work items and their effects, and the
//! concerts and their seats.

use std::collections::{BTreeMap, HashMap};

use diesel::prelude::*;
use diesel_occ::UuidToken;
use diesel_occ_examples::schema::{concerts, inventory as inventory_table, seat_assignments};
use diesel_occ_examples::schema::{work_effects, work_items};

use super::Conn;
use super::examples::claims::{Status, WorkItem};
use super::examples::inventory::Stock;
use crate::check;
use crate::record::Record;

/// Checks the database against the log; returns the violations and how many
/// unknown-outcome writes the explanation of the rows needed.
pub(crate) fn verify(conn: &mut Conn, log: &[Record]) -> (Vec<String>, usize) {
    let mut violations = Vec::new();
    let applied = verify_inventory(conn, log, &mut violations);
    verify_claims(conn, log, &mut violations);
    verify_seats(conn, log, &mut violations);
    for record in log {
        if let Record::Unexpected { what } = record {
            violations.push(what.clone());
        }
    }
    (violations, applied)
}

/// Returns how many unknown-outcome writes the explanation of the rows needed.
fn verify_inventory(conn: &mut Conn, log: &[Record], violations: &mut Vec<String>) -> usize {
    let rows: BTreeMap<String, (i32, UuidToken)> = inventory_table::table
        .select(Stock::as_select())
        .load(conn)
        .expect("inventory rows")
        .into_iter()
        .map(|s| (s.sku, (s.available, s.version)))
        .collect();
    let (found, applied) = check::inventory(&rows, log);
    violations.extend(found);
    applied
}

fn verify_claims(conn: &mut Conn, log: &[Record], violations: &mut Vec<String>) {
    let items: BTreeMap<i32, WorkItem> = work_items::table
        .select(WorkItem::as_select())
        .load(conn)
        .expect("work items")
        .into_iter()
        .map(|item| (item.id, item))
        .collect();
    let effects: BTreeMap<i32, (String, i64)> = work_effects::table
        .select((
            work_effects::item_id,
            work_effects::worker,
            work_effects::fence,
        ))
        .load::<(i32, String, i64)>(conn)
        .expect("work effects")
        .into_iter()
        .map(|(item, worker, fence)| (item, (worker, fence)))
        .collect();
    for (id, item) in &items {
        match (item.status, effects.get(id)) {
            (Status::Done, None) => violations.push(format!("item {id}: done without its effect")),
            (Status::Done, Some((_, fence))) if *fence != item.fence => violations.push(format!(
                "item {id}: effect recorded at fence {fence}, item at fence {}",
                item.fence
            )),
            (status, Some(_)) if status != Status::Done => {
                violations.push(format!("item {id}: effect recorded but item not done"))
            }
            _ => {}
        }
    }
    let mut completed: HashMap<i32, usize> = HashMap::new();
    for record in log {
        if let Record::Completed {
            item,
            worker,
            fence,
        } = record
        {
            *completed.entry(*item).or_default() += 1;
            if effects.get(item) != Some(&(worker.clone(), *fence)) {
                violations.push(format!(
                    "item {item}: acknowledged completion by {worker} at fence {fence} \
                     is not the recorded effect"
                ));
            }
        }
    }
    for (item, times) in completed {
        if times > 1 {
            violations.push(format!("item {item}: processed {times} times"));
        }
    }
}

fn verify_seats(conn: &mut Conn, log: &[Record], violations: &mut Vec<String>) {
    let concerts: Vec<(i32, i32, i32)> = concerts::table
        .select((concerts::id, concerts::capacity, concerts::available))
        .load(conn)
        .expect("concerts");
    let seats: HashMap<(i32, i32), String> = seat_assignments::table
        .select((
            seat_assignments::concert_id,
            seat_assignments::seat_no,
            seat_assignments::buyer,
        ))
        .load::<(i32, i32, String)>(conn)
        .expect("seat assignments")
        .into_iter()
        .map(|(concert, seat, buyer)| ((concert, seat), buyer))
        .collect();
    for (id, capacity, available) in concerts {
        let sold = seats.keys().filter(|(c, _)| *c == id).count() as i32;
        if available < 0 || available + sold != capacity {
            violations.push(format!(
                "concert {id}: {sold} seats sold and {available} left of {capacity}"
            ));
        }
    }
    for record in log {
        if let Record::Booked {
            concert,
            seat_no,
            buyer,
        } = record
            && seats.get(&(*concert, *seat_no)) != Some(buyer)
        {
            violations.push(format!(
                "concert {concert}: acknowledged seat {seat_no} for {buyer} is not theirs"
            ));
        }
    }
}
