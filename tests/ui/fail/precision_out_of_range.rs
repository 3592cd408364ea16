use diesel_occ::Versioned;

diesel::table! {
    events (id) {
        id -> Integer,
        updated_at -> Timestamp,
    }
}

#[derive(Versioned)]
#[diesel(table_name = events)]
struct Event {
    id: i32,
    #[occ(version, precision = 9)]
    updated_at: chrono::NaiveDateTime,
}

fn main() {}
