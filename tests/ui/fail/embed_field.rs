use diesel_occ::Versioned;

diesel::table! {
    stock (id) {
        id -> Integer,
        available -> Integer,
        reserved -> Integer,
        version -> Integer,
    }
}

struct Levels {
    available: i32,
    reserved: i32,
}

#[derive(Versioned)]
#[diesel(table_name = stock)]
struct Stock {
    id: i32,
    #[diesel(embed)]
    levels: Levels,
    #[occ(version)]
    version: i32,
}

fn main() {}
