use diesel_occ::Versioned;

#[derive(Versioned)]
struct Stock;

fn main() {}
