//! The rows every path writes: `counters` rows whose `value` counts the changes
//! acknowledged to their writers, and the sabotage twins' blind write.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU32, Ordering};

use diesel::prelude::*;
use diesel_occ::{Error, Versioned};

use super::Conn;
use super::runner::Values;
use super::schema::counters;
use crate::check::counters::{Write, tag_text};

/// A `counters` row. `label` is the soft-delete marker (`Some("deleted")`) and the
/// field `save_merging` edits beside `value`.
#[derive(Debug, Clone, PartialEq, Queryable, Selectable, Insertable, Versioned)]
#[diesel(table_name = counters)]
#[occ(track)]
pub(super) struct Counter {
    pub(super) id: i32,
    pub(super) value: i32,
    pub(super) label: Option<String>,
    #[occ(version)]
    pub(super) version: i32,
}

/// A new counter row without its token, as a create request carries it:
/// `insert_checked_from` adds the initial token.
#[derive(Debug, Insertable)]
#[diesel(table_name = counters)]
pub(super) struct NewCounter<'a> {
    pub(super) id: i32,
    pub(super) value: i32,
    pub(super) label: Option<&'a str>,
}

impl<'a> NewCounter<'a> {
    pub(super) fn of(row: &'a Counter) -> Self {
        NewCounter {
            id: row.id,
            value: row.value,
            label: row.label.as_deref(),
        }
    }
}

/// A form of the counter's value, as a PATCH handler receives it: `update_by_key`
/// sends it for half its writes.
#[derive(Debug, AsChangeset, diesel_occ::ChangesetColumns)]
#[diesel(table_name = counters)]
pub(super) struct ValueForm {
    pub(super) value: Option<i32>,
}

/// Workers write rows `1..=ROWS`.
pub(super) const ROWS: i32 = 8;

/// The racers' row (and its partner and child, see below).
pub(super) const RACE_ROW: i32 = 100;

/// The second row of a two-row write (a batch, a transaction): the next worker row,
/// or the racers' second row.
pub(super) fn partner(row: i32) -> i32 {
    if row >= RACE_ROW {
        row + 1
    } else {
        row % ROWS + 1
    }
}

/// The child row an aggregate root guards (`force_increment`).
pub(super) fn child(row: i32) -> i32 {
    row + 50
}

/// Seeds every row a path may write, at 0; returns their values.
pub(super) fn seed(conn: &mut Conn) -> Values {
    let ids = (1..=ROWS)
        .chain(RACE_ROW..=RACE_ROW + 1)
        .flat_map(|row| [row, child(row)]);
    let rows: Vec<Counter> = ids
        .map(|id| Counter {
            id,
            value: 0,
            label: None,
            version: 1,
        })
        .collect();
    diesel::insert_into(counters::table)
        .values(&rows)
        .execute(conn)
        .expect("seed the counters");
    rows.iter().map(|row| (row.id, row.value)).collect()
}

/// Every row's value now.
pub(super) fn values(conn: &mut Conn) -> QueryResult<Values> {
    let rows: Vec<(i32, i32)> = counters::table
        .select((counters::id, counters::value))
        .load(conn)?;
    Ok(rows.into_iter().collect())
}

/// Every row's label now (empty when NULL), for the tags of the combiners' changes.
pub(super) fn labels(conn: &mut Conn) -> QueryResult<BTreeMap<i32, String>> {
    let rows: Vec<(i32, Option<String>)> = counters::table
        .select((counters::id, counters::label))
        .load(conn)?;
    Ok(rows
        .into_iter()
        .map(|(id, label)| (id, label.unwrap_or_default()))
        .collect())
}

/// A change's tag, unique in the run.
pub(super) fn next_tag() -> u32 {
    static NEXT: AtomicU32 = AtomicU32::new(1);
    NEXT.fetch_add(1, Ordering::Relaxed)
}

/// Adds 1 to the counter and appends the change's tag to its label: what the
/// combiners' changes do.
pub(super) fn tagged_plus_one(counter: &mut Counter, tag: u32) {
    counter.value += 1;
    counter.label = Some(counter.label.take().unwrap_or_default() + &tag_text(tag));
}

/// The write a checked save makes of `counter`, read at token `from`: +`increment`.
pub(super) fn change(counter: &Counter, from: i32, increment: i32) -> Write {
    Write {
        row: counter.id,
        from: Some(from),
        increment,
        tag: None,
        deletes: false,
    }
}

/// The sabotage twins' write: every field of `counter` and the next token, with no
/// token in the predicate (what Diesel's `save_changes` does, or a hand-written
/// `UPDATE ... WHERE id = ?`).
pub(super) fn blind_save(conn: &mut Conn, counter: &mut Counter) -> Result<(), Error> {
    counter.version += 1;
    diesel::update(counters::table.find(counter.id))
        .set((
            counters::value.eq(counter.value),
            counters::label.eq(&counter.label),
            counters::version.eq(counter.version),
        ))
        .execute(conn)?;
    Ok(())
}
