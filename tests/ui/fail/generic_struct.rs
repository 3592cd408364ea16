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
struct Stock<T> {
    id: i32,
    available: T,
    #[occ(version)]
    version: i32,
}

fn main() {}
