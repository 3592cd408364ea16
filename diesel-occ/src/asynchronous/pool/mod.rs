//! The pools diesel-async ships, as the async retry helper's connection sources, with
//! what setting one up takes re-exported, so that a pool needs no dependency of your
//! own on diesel-async's pool features or on the pool crate.
//!
//! | feature | module | pool | a checkout | a connection whose state is unknown |
//! |---|---|---|---|---|
//! | `deadpool` | [`deadpool`] | `deadpool::Pool<C>` | `Object<C>` | detached from the pool and closed |
//! | `bb8` | [`bb8`] | `bb8::Pool<C>` | `PooledConnection<'_, C>` | marked broken, so the pool closes it instead of taking it back |
//!
//! Both implement [`AsyncConnectionSource`](super::AsyncConnectionSource): pass `&pool`
//! to [`asynchronous::retry`](super::retry). Every attempt checks a connection out of
//! the pool and gives it back before the backoff; a connection whose attempt was
//! cancelled, whose transaction could not be ended, or whose session was lost never
//! goes back.

#[cfg(feature = "bb8")]
#[cfg_attr(docsrs, doc(cfg(feature = "bb8")))]
pub mod bb8;
#[cfg(feature = "deadpool")]
#[cfg_attr(docsrs, doc(cfg(feature = "deadpool")))]
pub mod deadpool;
