use diesel_occ::Versioned;

diesel::table! {
    stock (id) {
        id -> Integer,
        available -> Integer,
        version -> Integer,
    }
}

#[derive(Versioned)]
#[diesel(table_name = stock)]
#[occ(track)]
#[occ(track)]
struct Stock {
    id: i32,
    available: i32,
    #[occ(version)]
    version: i32,
}

fn main() {}
