use super::*;
use crate::versioned::Versioned;

/// A hand-written `Tracking` with more fields than a set holds (the derive refuses
/// more than 64), to reach every index edge.
#[derive(Debug, Clone, PartialEq)]
struct Wide;

impl Versioned for Wide {
    type Table = ();
    type Token = i32;
    type Key = ();
    type UpdateStatement = ();
    type DeleteStatement = ();
    type TokenQuery = ();
    type FindQuery = ();
    type ValuesRow = ();
    const TABLE_NAME: &'static str = "wide";
    const TOKEN_COLUMN: &'static str = "version";
    const KEY_COLUMNS: &'static [&'static str] = &[];

    fn token(&self) -> &i32 {
        &1
    }
    fn set_token(&mut self, _: i32) {}
    fn key(&self) {}
    fn key_values(_: &()) -> Vec<String> {
        Vec::new()
    }
    fn update_statement(&self, _: &i32) {}
    fn delete_statement(&self) {}
    fn token_query(_: ()) {}
    fn find_query(_: ()) {}
}

impl VersionedParts for Wide {
    type TokenColumn = ();
    type Guarded = ();
    type TokenAssignment = ();
    type Changes = ();
    type KeyColumns = ();
    const GENERATED_TOKEN: bool = false;

    fn guarded(&self) {}
    fn token_assignment(_: &i32) {}
    fn changes(&self, _: &i32) {}
}

impl Tracking for Wide {
    const FIELDS: &'static [&'static str] = &[
        "f0", "f1", "f2", "f3", "f4", "f5", "f6", "f7", "f8", "f9", "f10", "f11", "f12", "f13",
        "f14", "f15", "f16", "f17", "f18", "f19", "f20", "f21", "f22", "f23", "f24", "f25", "f26",
        "f27", "f28", "f29", "f30", "f31", "f32", "f33", "f34", "f35", "f36", "f37", "f38", "f39",
        "f40", "f41", "f42", "f43", "f44", "f45", "f46", "f47", "f48", "f49", "f50", "f51", "f52",
        "f53", "f54", "f55", "f56", "f57", "f58", "f59", "f60", "f61", "f62", "f63", "f64", "f65",
        "f66", "f67", "f68", "f69",
    ];
    type FieldsUpdateStatement = ();

    fn changed_from(&self, _: &Self) -> Fields<Self> {
        Fields::none()
    }
    fn copy_fields(&mut self, _: &Self, _: Fields<Self>) {}
    fn fields_update_statement(&self, _: &Self, _: Fields<Self>, _: &i32) {}
}

#[test]
fn an_index_past_the_fields_or_the_64th_is_an_error() {
    let none = Fields::<Wide>::none();
    let last = none.with_index(63).unwrap();
    assert!(last.contains("f63"));
    assert_eq!(last.len(), 1);
    for index in [64, 69, 70, usize::MAX] {
        assert_eq!(
            none.with_index(index),
            Err(FieldIndexOutOfRange {
                index,
                field_count: 70
            }),
            "index {index}"
        );
        assert!(
            !Fields::<Wide>::all().contains_index(index),
            "index {index}"
        );
    }
    assert_eq!(Fields::<Wide>::all().len(), 64);
    assert!(Fields::<Wide>::named("f64").is_none());
    assert!(!Fields::<Wide>::all().contains("f64"));
}
