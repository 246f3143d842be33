//! How operations and connections end: the small vocabulary that the protocol codecs (which
//! say *what* the server answered), the connection machine (which decides *how* each operation
//! ended) and the recorders (which count) share. Plain `Copy` values, so counting costs nothing.
//!
//! Every operation sent ends exactly once: completed, or failed with an [`ErrorClass`].

use std::fmt;

/// The classes failures are counted under, for operations (why one ended without success) and
/// for connections (why one ended early).
///
/// Eight octets wide (`repr(u64)`): a [`Failure`] then has no odd tail after its class, which
/// the compiler moved through the stack in overlapping 4-octet pieces on every operation's
/// outcome (a store-forwarding stall each time: `perf` put a third of the HTTP/2 client's
/// `decode_op` samples there).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
#[repr(u64)]
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
    /// `connect` first: [`OPS`](Self::OPS) is the rest.
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
    pub const OPS: &[ErrorClass] = Self::ALL.split_at(1).1;

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

/// A protocol's word for what a server said: a number (an HTTP status, a WebSocket close
/// code) or a name (`E_BAD_TOPIC`, `REFUSED_STREAM`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Code {
    Number(u16),
    Name(&'static str),
}

impl fmt::Display for Code {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Code::Number(n) => write!(f, "{n}"),
            Code::Name(name) => f.write_str(name),
        }
    }
}

/// `kind code`, or the code alone when the kind is empty.
fn worded(f: &mut fmt::Formatter<'_>, kind: &str, code: Code) -> fmt::Result {
    if kind.is_empty() { write!(f, "{code}") } else { write!(f, "{kind} {code}") }
}

/// Why the server refused an operation it answered, in the protocol's own words: the class it
/// is counted under and the word its codec supplies — `HTTP 503`, `RST_STREAM REFUSED_STREAM`,
/// `grpc UNAVAILABLE`, `E_BAD_TOPIC`. Any protocol says its own without a line here.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Failure {
    pub class: ErrorClass,
    /// What the code is (`HTTP`, `RST_STREAM`), or empty where the code says it (NSQ's `E_*`).
    pub kind: &'static str,
    pub code: Code,
}

impl Failure {
    pub const fn new(class: ErrorClass, kind: &'static str, code: Code) -> Failure {
        Failure { class, kind, code }
    }
    /// An HTTP response status of 400 or more (every HTTP version and gRPC's transport).
    pub const fn status(code: u16) -> Failure {
        Failure::new(ErrorClass::Status, "HTTP", Code::Number(code))
    }
    /// A refusal in the protocol's own words, or an answer it calls malformed, counted as
    /// `protocol`: `kind` and the code's name.
    pub const fn protocol(kind: &'static str, name: &'static str) -> Failure {
        Failure::new(ErrorClass::Protocol, kind, Code::Name(name))
    }
    /// An answer the protocol calls malformed (RFC 9113 §8.1.1: a 1xx that ends its stream, a
    /// `:status` in trailers), by what was wrong: a stream error, the connection goes on.
    pub const fn malformed(why: &'static str) -> Failure {
        Failure::protocol("malformed answer:", why)
    }
    /// The class it is counted under in reports.
    pub fn class(self) -> ErrorClass {
        self.class
    }
}

impl fmt::Display for Failure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        worded(f, self.kind, self.code)
    }
}

/// What the server answered, in the protocol's own words: counted per measured operation
/// (an HTTP status, an NSQ response), and per connection the server closed with a code (a
/// WebSocket Close) — ab's status table, for every protocol. The codec supplies the word and
/// whether it is the protocol's success.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Answer {
    /// What the code is (`close`, `grpc`), or empty where the code says it (an HTTP status,
    /// NSQ's `OK`). Answers sort by it: bare codes (numbers, then names) first.
    pub kind: &'static str,
    pub code: Code,
    /// Whether this is the protocol's success: a 2xx status, NSQ `OK`, a normal close (1000).
    pub success: bool,
    /// An answer about a connection (a Close), not an operation: no operation was refused.
    pub of_connection: bool,
}

impl Answer {
    /// `==`, with the words compared by address first: a codec names its answers with the same
    /// `&'static str` every time, and comparing their bytes per operation (a `memcmp` call)
    /// was the largest user-space cost of counting answers in the profile.
    #[inline]
    pub fn same(&self, other: &Answer) -> bool {
        fn same_str(a: &'static str, b: &'static str) -> bool {
            a.len() == b.len() && (std::ptr::eq(a.as_ptr(), b.as_ptr()) || a == b)
        }
        let codes = match (self.code, other.code) {
            (Code::Number(x), Code::Number(y)) => x == y,
            (Code::Name(x), Code::Name(y)) => same_str(x, y),
            (Code::Number(_), Code::Name(_)) | (Code::Name(_), Code::Number(_)) => false,
        };
        codes
            && self.success == other.success
            && self.of_connection == other.of_connection
            && same_str(self.kind, other.kind)
    }

    /// An operation's answer.
    pub const fn new(kind: &'static str, code: Code, success: bool) -> Answer {
        Answer { kind, code, success, of_connection: false }
    }
    /// An HTTP response status (a success when 2xx).
    pub const fn status(code: u16) -> Answer {
        Answer::new("", Code::Number(code), code >= 200 && code < 300)
    }
    /// An answer that ended a connection, not an operation.
    pub const fn of_connection(kind: &'static str, code: Code, success: bool) -> Answer {
        Answer { kind, code, success, of_connection: true }
    }
    pub fn is_success(self) -> bool {
        self.success
    }
}

impl fmt::Display for Answer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        worded(f, self.kind, self.code)
    }
}

/// Counts per [`Answer`]: a short list (a run sees few distinct answers), searched linearly,
/// so counting an operation allocates nothing after the first of its kind.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct AnswerCounts(Vec<(Answer, u64)>);

impl AnswerCounts {
    #[inline]
    pub fn add(&mut self, answer: Answer, n: u64) {
        // A run's answers are nearly all its first kind (200 OK): that one without a search.
        if let Some((first, count)) = self.0.first_mut()
            && first.same(&answer)
        {
            *count += n;
            return;
        }
        match self.0.iter_mut().find(|(a, _)| a.same(&answer)) {
            Some((_, count)) => *count += n,
            None => self.0.push((answer, n)),
        }
    }
    pub fn merge(&mut self, other: &AnswerCounts) {
        for (a, n) in &other.0 {
            self.add(*a, *n);
        }
    }
    /// Every answer with its count, in order (by kind, bare codes first: statuses by number,
    /// then names as NSQ's, then `close …`, `grpc …`).
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
        self.0.iter().filter(|(a, _)| !a.of_connection && !a.success).map(|(_, n)| n).sum()
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

#[cfg(test)]
mod tests {
    use super::*;

    /// `same` is `==`, whether the words are one `&'static str` or equal ones elsewhere.
    #[test]
    fn same_answers_are_equal_ones() {
        let grpc: &'static str = String::from("grpc").leak();
        let ok: &'static str = String::from("OK").leak();
        let answers = [
            Answer::new("", Code::Number(200), true),
            Answer::new("", Code::Number(404), false),
            Answer::new("", Code::Name("OK"), true),
            Answer::new("", Code::Name(ok), true),
            Answer::new("grpc", Code::Number(0), true),
            Answer::new(grpc, Code::Number(0), true),
            Answer::new(grpc, Code::Number(0), false),
            Answer { of_connection: true, ..Answer::new("close", Code::Number(1000), true) },
            Answer::new("close", Code::Number(1000), true),
        ];
        for a in &answers {
            for b in &answers {
                assert_eq!(a.same(b), a == b, "{a:?} {b:?}");
            }
        }
        let mut counts = AnswerCounts::default();
        counts.add(answers[4], 2);
        counts.add(answers[5], 3);
        assert_eq!(counts.sorted(), vec![(answers[4], 5)]);
    }
}
