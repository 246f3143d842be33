//! Protocol codecs, sans-IO: bytes in, bytes out, nothing else — one module per protocol,
//! each with its client and server roles and its declaration for the registry
//! (`crate::protocol`). The traits they implement are [`crate::codec`]'s.

pub mod h2;
pub mod h3;
pub mod http1;
pub mod mqtt;
pub mod nsq;
pub mod sio;
pub mod tcp;
pub mod ws;

pub use crate::codec::*;
