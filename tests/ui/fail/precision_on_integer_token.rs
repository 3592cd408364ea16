use diesel_occ::Versioned;

diesel::table! {
    stock (id) {
        id -> Integer,
        version -> Integer,
    }
}

#[derive(Versioned)]
#[diesel(table_name = stock)]
struct Stock {
    id: i32,
    #[occ(version, precision = 3)]
    version: i32,
}

fn main() {}
