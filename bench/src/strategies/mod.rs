//! The strategies, written once and generic over the connection: the blocking ones
//! ([`blocking`]), the asynchronous one ([`asynchronous`]) and the batch benchmark's
//! workers ([`batch`]). Their statements and diesel-occ's checked operations on the
//! entity are [`sql`]'s, implemented per connection type. The
//! sqlx peer of the async rounds is [`sqlx_peer`]'s (feature `sqlx`).

pub mod asynchronous;
pub mod batch;
pub mod blocking;
pub mod sql;
#[cfg(feature = "sqlx")]
pub mod sqlx_peer;
