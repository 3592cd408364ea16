use diesel_occ::Versioned;

#[derive(Versioned)]
enum Stock {
    Available { id: i32, version: i32 },
    SoldOut { id: i32, version: i32 },
}

fn main() {}
