//! `From` the errors of the connection pools a handler checks connections out of:
//! 503 with `Retry-After`, logged at WARN (features `deadpool`, `bb8`, `r2d2`).
//!
//! ```
//! # #[cfg(feature = "deadpool")] {
//! use diesel_occ_axum::Problem;
//!
//! let closed = deadpool::managed::PoolError::<std::io::Error>::Closed;
//! let problem = Problem::from(closed);
//! assert_eq!((problem.status().as_u16(), problem.retry_after().map(|d| d.as_secs())), (503, Some(1)));
//! # }
//! ```

use std::fmt::Display;

use crate::problem::Problem;

/// Logs why no connection was had, and answers 503.
fn unavailable(error: &dyn Display) -> Problem {
    tracing::warn!(target: "diesel_occ_axum", %error, "no database connection: answered 503");
    Problem::unavailable()
}

/// deadpool's `Pool::get` error (diesel-async's
/// `pooled_connection::deadpool::PoolError`): 503 with `Retry-After`.
#[cfg(feature = "deadpool")]
#[cfg_attr(docsrs, doc(cfg(feature = "deadpool")))]
impl<E: Display> From<deadpool::managed::PoolError<E>> for Problem {
    fn from(error: deadpool::managed::PoolError<E>) -> Problem {
        unavailable(&error)
    }
}

/// bb8's `Pool::get` error (`RunError`): 503 with `Retry-After`.
#[cfg(feature = "bb8")]
#[cfg_attr(docsrs, doc(cfg(feature = "bb8")))]
impl<E: std::error::Error + 'static> From<bb8::RunError<E>> for Problem {
    fn from(error: bb8::RunError<E>) -> Problem {
        unavailable(&error)
    }
}

/// r2d2's `Pool::get` error (Diesel's `r2d2::PoolError`): 503 with `Retry-After`.
#[cfg(feature = "r2d2")]
#[cfg_attr(docsrs, doc(cfg(feature = "r2d2")))]
impl From<r2d2::Error> for Problem {
    fn from(error: r2d2::Error) -> Problem {
        unavailable(&error)
    }
}
