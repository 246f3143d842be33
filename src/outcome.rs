//! How operations and connections end: the small vocabulary that the protocol codecs (which
//! say *what* the server answered), the connection machine (which decides *how* each operation
//! ended) and the recorders (which count) share. Plain `Copy` values, so counting costs nothing.
//!
//! Every operation sent ends exactly once: completed, or failed with an [`ErrorClass`].

use std::fmt;

/// The classes failures are counted under, for operations (why one ended without success) and
/// for connections (why one ended early).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum ErrorClass {
    /// The connection could not be opened (operations are never lost to this class).
    Connect,
    /// The peer closed the connection while the operation was in flight (an HTTP
    /// `Connection: close` before pipelined requests were answered, a WebSocket Close, nsqd
    /// closing after an error frame, a plain FIN).
    Closed,
    /// A read failed (a reset).
    Read,
    /// A write failed.
    Write,
    /// No answer within the timeout (or by one second after the run's end).
    Timeout,
    /// The server answered with a refusal: an HTTP status of 400 or more.
    Status,
    /// The server broke the protocol, or refused in the protocol's own words (an NSQ `E_*`
    /// frame, a WebSocket close code).
    Protocol,
}

impl ErrorClass {
    pub const ALL: [ErrorClass; 7] = [
        ErrorClass::Connect,
        ErrorClass::Closed,
        ErrorClass::Read,
        ErrorClass::Write,
        ErrorClass::Timeout,
        ErrorClass::Status,
        ErrorClass::Protocol,
    ];

    pub fn name(self) -> &'static str {
        match self {
            ErrorClass::Connect => "connect",
            ErrorClass::Closed => "closed",
            ErrorClass::Read => "read",
            ErrorClass::Write => "write",
            ErrorClass::Timeout => "timeout",
            ErrorClass::Status => "status",
            ErrorClass::Protocol => "protocol",
        }
    }

    /// Position in [`ALL`](Self::ALL), for counters kept in arrays.
    pub fn index(self) -> usize {
        self as usize
    }
}

/// Why the server refused an operation it answered, by the protocol's own code.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Failure {
    /// An HTTP response status of 400 or more.
    Status(u16),
    /// An NSQ error frame, by its code (`E_BAD_TOPIC`, …).
    Nsq(&'static str),
}

impl Failure {
    /// The class it is counted under in reports.
    pub fn class(self) -> ErrorClass {
        match self {
            Failure::Status(_) => ErrorClass::Status,
            Failure::Nsq(_) => ErrorClass::Protocol,
        }
    }
}

impl fmt::Display for Failure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Failure::Status(code) => write!(f, "HTTP {code}"),
            Failure::Nsq(code) => f.write_str(code),
        }
    }
}

/// A count per [`ErrorClass`], in an array (no map per operation).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ClassCounts([u64; ErrorClass::ALL.len()]);

impl ClassCounts {
    pub fn add(&mut self, class: ErrorClass, n: u64) {
        self.0[class.index()] += n;
    }
    pub fn get(&self, class: ErrorClass) -> u64 {
        self.0[class.index()]
    }
    pub fn total(&self) -> u64 {
        self.0.iter().sum()
    }
    pub fn merge(&mut self, other: &ClassCounts) {
        for (a, b) in self.0.iter_mut().zip(other.0) {
            *a += b;
        }
    }
    /// The classes with a count, in the order of [`ErrorClass::ALL`].
    pub fn nonzero(&self) -> impl Iterator<Item = (ErrorClass, u64)> + '_ {
        ErrorClass::ALL.into_iter().map(|c| (c, self.get(c))).filter(|(_, n)| *n > 0)
    }
}
