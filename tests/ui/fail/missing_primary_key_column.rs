use diesel_occ::Versioned;

diesel::table! {
    stock (warehouse, sku) {
        warehouse -> Integer,
        sku -> Text,
        available -> Integer,
        version -> Integer,
    }
}

#[derive(Versioned)]
#[diesel(table_name = stock, primary_key(warehouse, sku))]
struct Stock {
    warehouse: i32,
    available: i32,
    #[occ(version)]
    version: i32,
}

fn main() {}
