use diesel_occ::Versioned;

diesel::table! {
    stock (sku) {
        sku -> Text,
        available -> Integer,
        version -> Integer,
    }
}

#[derive(Versioned)]
#[diesel(table_name = stock)]
struct Stock {
    sku: String,
    available: i32,
    #[occ(version)]
    version: i32,
}

fn main() {}
