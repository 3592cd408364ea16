use diesel_occ::Versioned;

diesel::table! {
    stock (id) {
        id -> Integer,
        available -> Integer,
        version -> Integer,
        revision -> Integer,
    }
}

#[derive(Versioned)]
#[diesel(table_name = stock)]
struct Stock {
    id: i32,
    available: i32,
    #[occ(version)]
    version: i32,
    #[occ(version)]
    revision: i32,
}

fn main() {}
