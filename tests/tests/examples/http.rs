//! The HTTP API where the token is the ETag (issue 4, point 6).

macro_rules! http_suite {
    ($backend:ident, $conn:ty) => {};
}
