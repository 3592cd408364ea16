use diesel_occ::Versioned;

diesel::table! {
    events (id) {
        id -> Integer,
        name -> Text,
        updated_at -> Timestamp,
    }
}

#[derive(Versioned)]
#[diesel(table_name = events)]
struct Event {
    id: i32,
    name: String,
    #[occ(version, precision = 3, precision = 6)]
    updated_at: chrono::NaiveDateTime,
}

fn main() {}
