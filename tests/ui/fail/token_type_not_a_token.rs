use diesel_occ::Versioned;

diesel::table! {
    stock (id) {
        id -> Integer,
        available -> Integer,
        version -> Text,
    }
}

#[derive(Versioned)]
#[diesel(table_name = stock)]
struct Stock {
    id: i32,
    available: i32,
    #[occ(version)]
    version: String,
}

fn main() {}
