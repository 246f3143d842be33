//! The hostile-peer kit: scripted peers that misbehave as real ones do — answer early, never
//! read, trickle for ever, flood frames that do no work, reset, say GOAWAY, close critical
//! streams, announce zero limits, send what the RFCs forbid — each scenario with its verdict,
//! run on every engine where its protocol runs. `kit` has the peers' parts; a file per
//! protocol and role has its scenarios.

mod common;
#[path = "hostile/kit.rs"]
mod kit;

#[path = "hostile/endless.rs"]
mod endless;
#[path = "hostile/faults.rs"]
mod faults;
#[path = "hostile/h2_client.rs"]
mod h2_client;
#[path = "hostile/h2_server.rs"]
mod h2_server;
#[path = "hostile/h3.rs"]
mod h3;
#[path = "hostile/mqtt.rs"]
mod mqtt;
#[path = "hostile/tcp.rs"]
mod tcp;
