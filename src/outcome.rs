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
    /// TLS failed: a handshake refused (unknown CA, wrong name, a version or cipher the peer
    /// will not speak, a plaintext server on a TLS URL), or a record that does not decrypt.
    Tls,
}

impl ErrorClass {
    pub const ALL: [ErrorClass; 8] = [
        ErrorClass::Connect,
        ErrorClass::Closed,
        ErrorClass::Read,
        ErrorClass::Write,
        ErrorClass::Timeout,
        ErrorClass::Status,
        ErrorClass::Protocol,
        ErrorClass::Tls,
    ];

    /// The classes an operation can fail with: all but `connect` (a connection that never
    /// opened carried no operation).
    pub const OPS: [ErrorClass; 7] = [
        ErrorClass::Closed,
        ErrorClass::Read,
        ErrorClass::Write,
        ErrorClass::Timeout,
        ErrorClass::Status,
        ErrorClass::Protocol,
        ErrorClass::Tls,
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
            ErrorClass::Tls => "tls",
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
    /// An HTTP/2 stream reset by the server, by its error code's name (`REFUSED_STREAM`, …).
    H2Reset(&'static str),
    /// A gRPC call answered with a status other than `OK`, by its name (`UNAVAILABLE`, …).
    Grpc(&'static str),
    /// An HTTP/3 request stream reset by the server (QUIC's RESET_STREAM), by its error code's
    /// name (`H3_REQUEST_REJECTED`, …).
    H3Reset(&'static str),
    /// An answer the protocol calls malformed (RFC 9113 §8.1.1: a 1xx that ends its stream,
    /// a `:status` in trailers), by what was wrong: a stream error, the connection goes on.
    Malformed(&'static str),
}

impl Failure {
    /// The class it is counted under in reports.
    pub fn class(self) -> ErrorClass {
        match self {
            Failure::Status(_) | Failure::Grpc(_) => ErrorClass::Status,
            Failure::Nsq(_) | Failure::H2Reset(_) | Failure::H3Reset(_) | Failure::Malformed(_) => {
                ErrorClass::Protocol
            }
        }
    }
}

impl fmt::Display for Failure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Failure::Status(code) => write!(f, "HTTP {code}"),
            Failure::Nsq(code) => f.write_str(code),
            Failure::H2Reset(code) => write!(f, "RST_STREAM {code}"),
            Failure::Grpc(code) => write!(f, "grpc {code}"),
            Failure::H3Reset(code) => write!(f, "RESET_STREAM {code}"),
            Failure::Malformed(why) => write!(f, "malformed answer: {why}"),
        }
    }
}

/// What the server answered, in the protocol's own words: counted per measured operation
/// (an HTTP status, an NSQ response), and per connection the server closed with a code (a
/// WebSocket Close) — ab's status table, for every protocol.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Answer {
    /// An HTTP response status.
    Status(u16),
    /// An NSQ response (`OK`) or error code (`E_BAD_TOPIC`, …).
    Nsq(&'static str),
    /// The status code of a WebSocket Close the server sent (its own, or its answer to ours).
    Close(u16),
    /// A gRPC call's `grpc-status`, by name (`OK`, `UNAVAILABLE`, …).
    Grpc(&'static str),
}

impl Answer {
    /// Whether this is the protocol's success: a 2xx status, NSQ `OK`, a normal close (1000).
    pub fn is_success(self) -> bool {
        match self {
            Answer::Status(code) => (200..300).contains(&code),
            Answer::Nsq(code) => code == "OK",
            Answer::Close(code) => code == 1000,
            Answer::Grpc(code) => code == "OK",
        }
    }
}

impl fmt::Display for Answer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Answer::Status(code) => write!(f, "{code}"),
            Answer::Nsq(code) => f.write_str(code),
            Answer::Close(code) => write!(f, "close {code}"),
            Answer::Grpc(code) => write!(f, "grpc {code}"),
        }
    }
}

/// Counts per [`Answer`]: a short list (a run sees few distinct answers), searched linearly,
/// so counting an operation allocates nothing after the first of its kind.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct AnswerCounts(Vec<(Answer, u64)>);

impl AnswerCounts {
    pub fn add(&mut self, answer: Answer, n: u64) {
        match self.0.iter_mut().find(|(a, _)| *a == answer) {
            Some((_, count)) => *count += n,
            None => self.0.push((answer, n)),
        }
    }
    pub fn merge(&mut self, other: &AnswerCounts) {
        for (a, n) in &other.0 {
            self.add(*a, *n);
        }
    }
    /// Every answer with its count, in order (statuses by code, then NSQ's, then closes).
    pub fn sorted(&self) -> Vec<(Answer, u64)> {
        let mut v = self.0.clone();
        v.sort();
        v
    }
    pub fn get(&self, answer: Answer) -> u64 {
        self.0.iter().find(|(a, _)| *a == answer).map_or(0, |(_, n)| *n)
    }
    /// Operation answers that were not the protocol's success (ab's "Non-2xx responses").
    pub fn unsuccessful(&self) -> u64 {
        self.0.iter().filter(|(a, _)| !matches!(a, Answer::Close(_)) && !a.is_success()).map(|(_, n)| n).sum()
    }
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
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
