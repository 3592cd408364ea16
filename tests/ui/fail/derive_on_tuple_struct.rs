use diesel_occ::Versioned;

diesel::table! {
    stock (id) {
        id -> Integer,
        version -> Integer,
    }
}

#[derive(Versioned)]
#[diesel(table_name = stock)]
struct Stock(i32, #[occ(version)] i32);

fn main() {}
