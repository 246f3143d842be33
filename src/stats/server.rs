//! What a built-in server counted, per core: connections, requests, bytes, closes, CPU.

use std::time::Duration;

/// What one core of a built-in server counted.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ServerTally {
    pub core: usize,
    pub connections: u64,
    pub requests: u64,
    /// Messages published (NSQ sinks).
    pub messages: u64,
    pub rx: u64,
    pub tx: u64,
    /// Connections closed because the client was too slow (head, idle or write timeout).
    pub timeouts: u64,
    /// Connections refused at the connection limit.
    pub refused: u64,
    /// CPU time of the core's thread, and the wall time it served.
    pub cpu: Duration,
    pub wall: Duration,
}

impl ServerTally {
    pub fn sum(tallies: &[ServerTally]) -> ServerTally {
        tallies.iter().fold(ServerTally::default(), |a, t| ServerTally {
            core: a.core,
            connections: a.connections + t.connections,
            requests: a.requests + t.requests,
            messages: a.messages + t.messages,
            rx: a.rx + t.rx,
            tx: a.tx + t.tx,
            timeouts: a.timeouts + t.timeouts,
            refused: a.refused + t.refused,
            cpu: a.cpu + t.cpu,
            wall: a.wall.max(t.wall),
        })
    }
}
