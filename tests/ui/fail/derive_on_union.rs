use diesel_occ::Versioned;

#[derive(Versioned)]
union Stock {
    id: i32,
    version: i32,
}

fn main() {}
