use diesel_occ::Versioned;

diesel::table! {
    stock (id) {
        id -> BigInt,
        available -> Integer,
        note -> Nullable<Text>,
        version -> Integer,
    }
}

#[derive(Versioned)]
#[diesel(table_name = stock)]
struct Stock {
    id: i32,
    available: i32,
    note: Option<i32>,
    #[occ(version)]
    version: i32,
}

fn main() {}
