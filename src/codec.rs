//! The seam between the protocols and everything else: the traits every codec implements,
//! sans-IO — bytes in, bytes out, nothing else.
//!
//! A codec never sees a socket, a clock or a runtime: the engine hands it the bytes received
//! so far and a buffer to append to. "Need more bytes" is [`Decoded::Partial`], never an error
//! and never `WouldBlock` (the quinn-proto / httparse split), so each codec is tested with
//! plain byte vectors. The codecs themselves live in `crate::proto`, one module each.

pub use crate::outcome::{ErrorClass, Failure};

/// What a decoder made of the bytes it was given.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Decoded {
    /// Not a whole message yet: call again with more bytes (the same prefix plus what follows).
    Partial,
    /// One whole message occupied the first `consumed` bytes of the input.
    Done { consumed: usize, outcome: Outcome },
}

/// What one whole message from the server meant to the client.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    /// It completed an operation in flight, successfully: the oldest, or the one the codec
    /// names ([`ClientCodec::answers_op`]).
    Op,
    /// It completed the oldest operation in flight, but the server said the operation failed
    /// (an HTTP status >= 400, an NSQ `E_*` frame): the operation failed with the failure's class.
    OpFailed(Failure),
    /// It belonged to no operation (a heartbeat, a ping, a pong): its bytes are `control` bytes.
    /// Any reply the codec wants sent was appended to the output buffer it was given.
    Control,
    /// Part of the answer to the oldest operation in flight (a WebSocket fragment): its bytes
    /// are that operation's, and the operation stays in flight.
    OpPart,
    /// From `decode_handshake` only: a step of a handshake that goes on (Socket.IO's open
    /// packet, after which the namespace is joined); any reply was appended to the output.
    Handshaking,
}

/// A protocol's own error type ([`ClientCodec::Error`], e.g. `proto::http1::Error`): the server broke
/// the protocol, and the connection cannot go on. The engine knows none of a protocol's
/// variants: it counts the failure under the error's [`class`](CodecError::class), with its text.
/// A protocol carried in another wraps the other's error (`ws::Error::Http`).
pub trait CodecError: std::error::Error + Copy + Eq + Send + 'static {
    /// The class the failure is counted under: `protocol` unless the protocol says otherwise.
    fn class(&self) -> ErrorClass {
        ErrorClass::Protocol
    }
}

/// The client role of a protocol: what the engine drives for every connection.
///
/// The engine calls [`handshake`](Self::handshake) once per connection and feeds the replies to
/// [`decode_handshake`](Self::decode_handshake) until it is `Done`; then it appends operations with
/// [`encode_op`](Self::encode_op) (as many as the workload allows in flight) and hands everything it
/// reads to [`decode_op`](Self::decode_op). Each codec value belongs to one connection; the engine
/// makes one per connection by cloning a prototype built at start-up (encode once, send many).
pub trait ClientCodec: Clone {
    /// The protocol's own error.
    type Error: CodecError;
    /// Seed the randomness the codec uses (WebSocket keys and masks). The engine seeds each
    /// connection's codec from the run's seed, so the same seed reproduces the same bytes.
    fn seed(&mut self, _seed: u64) {}
    /// Bytes to send once when a connection opens (may append nothing).
    fn handshake(&mut self, out: &mut Vec<u8>);
    /// Decode the server's answer to the handshake (not called when `handshake` wrote nothing):
    /// `Done` with [`Outcome::Handshaking`] for a step after which it goes on (replies appended
    /// to `out`, written as handshake bytes), with any other outcome when it is complete.
    fn decode_handshake(&mut self, input: &[u8], out: &mut Vec<u8>) -> Result<Decoded, Self::Error>;
    /// Append one operation: entry `entry` of the ones it holds (0 without `--requests`).
    fn encode_op(&mut self, entry: usize, out: &mut Vec<u8>);
    /// Take `other`'s operations (a codec built the same way for another entry of
    /// `--requests`) as further entries, numbered after its own: the prototype is built once
    /// per entry and the first one gathers them, each encoded once.
    fn add_entries(&mut self, other: Self);
    /// The id of the operation just appended by [`encode_op`](Self::encode_op), when answers
    /// may come in another order than the requests (an HTTP/2 stream id): the answers then
    /// name the operation they complete ([`answers_op`](Self::answers_op)). `None`: answers
    /// come in order, each completing the oldest operation in flight.
    fn op_id(&self) -> Option<u64> {
        None
    }
    /// Whether the operation just appended by [`encode_op`](Self::encode_op) has more bytes
    /// to send once the peer makes room for them (an HTTP/2 body past the flow-control
    /// windows): they come from [`op_more`](Self::op_more).
    fn op_open(&self) -> bool {
        false
    }
    /// Append more of an operation in flight whose bytes waited for the peer's room (the
    /// next DATA of an HTTP/2 body the server's WINDOW_UPDATEs let go): the operation's id
    /// ([`op_id`](Self::op_id)) and whether that was its last piece. `None`: nothing can go
    /// now. One call gives one operation's piece, as much of it as the room allows; the
    /// engine calls again until `None`, at most once per operation in flight (and a few).
    /// An operation that ended meanwhile has no more: its id may still come with the
    /// stream's closing bytes, which then count as control.
    fn op_more(&mut self, _out: &mut Vec<u8>) -> Option<(u64, bool)> {
        None
    }
    /// The operation the message just decoded by [`decode_op`](Self::decode_op) completes or
    /// belongs to ([`Outcome::Op`], [`Outcome::OpFailed`], [`Outcome::OpPart`]), by the id
    /// [`op_id`](Self::op_id) gave it; `None`: the oldest in flight.
    fn answers_op(&self) -> Option<u64> {
        None
    }
    /// Decode one message from the server; control replies (pong, NOP) are appended to `out`.
    fn decode_op(&mut self, input: &[u8], out: &mut Vec<u8>) -> Result<Decoded, Self::Error>;
    /// The peer closed the connection; `input` holds what was left undecoded. A protocol whose
    /// messages may end at end-of-stream (an HTTP body without a length) completes it here;
    /// `Partial`: nothing to complete (the engine counts a message cut off by the close).
    fn decode_eof(&mut self, _input: &[u8]) -> Result<Decoded, Self::Error> {
        Ok(Decoded::Partial)
    }
    /// Whether the server asked, in the message just decoded, to close the connection after it
    /// (HTTP `Connection: close`). The engine reconnects and counts a reconnect.
    fn peer_closing(&self) -> bool {
        false
    }
    /// Whether the connection takes new operations: `false` once the server said it takes no
    /// more (an HTTP/2 GOAWAY) while it still answers those it has, after which the codec says
    /// [`peer_closing`](Self::peer_closing).
    fn accepts_ops(&self) -> bool {
        true
    }
    /// Why the connection takes no operation now, while [`accepts_ops`](Self::accepts_ops)
    /// says so and nothing is in flight (an HTTP/2 server allowing no stream): the words of
    /// the timeout when nothing could be sent before it.
    fn idle_reason(&self) -> Option<&'static str> {
        None
    }
    /// The run is over for this connection: append a closing message (WebSocket Close 1000)
    /// and return `true` if the server's reply should be awaited (bounded) before closing.
    fn goodbye(&mut self, _out: &mut Vec<u8>) -> bool {
        false
    }
    /// The protocol's word for the message just decoded by [`decode_op`](Self::decode_op), when
    /// it completed an operation (an HTTP status, NSQ's `OK` or error code); `None` when the
    /// protocol has none (a WebSocket echo, a Socket.IO acknowledgement).
    fn answer(&self) -> Option<crate::outcome::Answer> {
        None
    }
    /// This connection's operation bytes by the protocol's layers (header blocks, frame
    /// heads, payload, …) counted since the last take, where the codec counts them; the
    /// count starts again from zero. Added to the core's figures when the connection closes,
    /// and for the live view whenever the core copies its figures. `None`: the protocol does
    /// not split them.
    fn take_layers(&mut self) -> Option<crate::stats::Layers> {
        None
    }
    /// What the server said in ending this connection, if it said anything (the code of a
    /// WebSocket Close it sent): counted among the answers, as an answer about a connection.
    fn closing_answer(&self) -> Option<crate::outcome::Answer> {
        None
    }
    /// More about the last error than its kind can say (a Socket.IO `CONNECT_ERROR`'s message
    /// from the server), for the error sample.
    fn error_detail(&self) -> Option<String> {
        None
    }
    /// How often the client must speak unprompted (Engine.IO 3's pings), known after the
    /// handshake; `None`: never.
    fn heartbeat_interval(&self) -> Option<std::time::Duration> {
        None
    }
    /// A heartbeat is due: append it (control bytes).
    fn heartbeat(&mut self, _out: &mut Vec<u8>) {}
    /// How soon a message the server sends unprompted between operations must be answered
    /// (Engine.IO 4's pings: pingTimeout; nsqd's heartbeats: its interval); `None`: it sends
    /// none that need an answer. A connection idle between paced operations looks at its
    /// socket at least twice this often.
    fn answer_within(&self) -> Option<std::time::Duration> {
        None
    }
    /// How long the server may stay silent before the connection counts as dead (Engine.IO's
    /// ping interval plus ping timeout); `None`: only the operation timeout applies.
    fn silence_limit(&self) -> Option<std::time::Duration> {
        None
    }
    /// After a handshake step ([`Outcome::Handshaking`]): the connection switches to TLS now,
    /// and the handshake goes on over it (nsqd's `tls_v1`, agreed in `IDENTIFY`'s answer).
    fn start_tls(&self) -> bool {
        false
    }
}

/// What a server codec did with the bytes it was given.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Served {
    /// Input bytes used; the rest is kept for the next call.
    pub consumed: usize,
    /// Whole requests answered.
    pub requests: u64,
    /// Messages published by those requests (NSQ sinks count them; others leave 0).
    pub messages: u64,
    /// Close the connection once `out` has been written.
    pub close: bool,
    /// What the connection waits for next (it decides which read deadline applies).
    pub awaiting: Awaiting,
    /// Everything after `out` is TLS (nsqd's `tls_v1` upgrade, answered in plaintext first):
    /// the TLS layer, where the server has one, takes over from here.
    pub start_tls: bool,
}

/// One message's work of a server that reads its input a message at a time (NSQ's sink,
/// MQTT's broker): what [`Served::by_steps`] loops over.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Step {
    /// More bytes are needed; the connection waits for them this way.
    Need(Awaiting),
    /// A message used `used` bytes (at least one): `requests` answered, `messages` published;
    /// `start_tls`: what follows it is TLS.
    Done { used: usize, requests: u64, messages: u64, start_tls: bool },
    /// The connection ends after what was written (an error answered, a goodbye).
    Close,
}

impl Served {
    /// `step` at each message of `input` in turn, until it needs more bytes, TLS starts, or
    /// the connection ends: the loop of a server that reads a message at a time. Bounded:
    /// each step uses a byte at least (one that used none would stop here).
    pub fn by_steps(input: &[u8], mut step: impl FnMut(&[u8]) -> Step) -> Served {
        let mut served = Served::default();
        loop {
            match step(&input[served.consumed..]) {
                Step::Need(awaiting) => {
                    served.awaiting = awaiting;
                    return served;
                }
                Step::Done { used, requests, messages, start_tls } => {
                    served.consumed += used;
                    served.requests += requests;
                    served.messages += messages;
                    if start_tls || used == 0 {
                        served.start_tls = start_tls;
                        return served;
                    }
                }
                Step::Close => {
                    served.consumed = input.len();
                    served.close = true;
                    return served;
                }
            }
        }
    }
}

/// What a server connection is waiting for: it picks the deadline of the next read (a request
/// head must arrive whole within the head timeout, slowloris or not; otherwise the connection
/// may stay silent for the idle timeout between reads).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Awaiting {
    /// Nothing pending: the next request, whenever it comes (idle timeout).
    #[default]
    Request,
    /// Part of a request head or handshake arrived; the rest must follow promptly.
    Head,
    /// A request body or a frame is arriving.
    Body,
}

/// The server role of a protocol: the built-in targets of `wirebench serve`.
///
/// Besides [`serve`](Self::serve), the engine asks a codec questions ([`Ask`]) and tells it
/// things ([`Tell`]) — its hooks. They pass through one method each, so a codec that wraps
/// another (TLS, the WebSocket session under Socket.IO, a boxed codec) hands on whatever it does
/// not handle itself with one `_ => self.inner.ask(q)`: a hook added later reaches every
/// wrapped codec without a line changed in the wrappers. [`Hooks`] names them for callers.
pub trait ServerCodec: Clone {
    /// Answer every whole request at the start of `input`, appending the responses to `out`.
    fn serve(&mut self, input: &[u8], out: &mut Vec<u8>) -> Served;
    /// Answer a question in place; a question not answered keeps its default (`None`, nothing).
    fn ask(&self, _question: Ask<'_>) {}
    /// Hear what the engine says; what a codec has no use for it ignores.
    fn tell(&mut self, _news: Tell<'_>) {}
}

/// What the engine asks a server codec ([`ServerCodec::ask`]): each answer written in place.
#[derive(Debug)]
pub enum Ask<'a> {
    /// How often the server speaks unprompted (nsqd's heartbeats); left `None`: never.
    HeartbeatInterval(&'a mut Option<std::time::Duration>),
    /// How long the client may send nothing before the connection is closed (nsqd: two
    /// heartbeat intervals); left `None`: the server's idle timeout alone applies.
    SilenceLimit(&'a mut Option<std::time::Duration>),
    /// The server is at its connection limit: append what a refused client should read before
    /// the connection is closed (an HTTP 503), or nothing.
    Busy(&'a mut Vec<u8>),
}

/// What the engine tells a server codec ([`ServerCodec::tell`]).
#[derive(Debug)]
pub enum Tell<'a> {
    /// Seed the randomness the codec uses (Socket.IO session ids), once per connection.
    Seed(u64),
    /// The wall-clock time in whole Unix seconds, before each `serve` (for HTTP `Date`
    /// headers: the codec itself never reads a clock).
    UnixTime(u64),
    /// A heartbeat is due: append it.
    Heartbeat(&'a mut Vec<u8>),
    /// A TLS upgrade ([`Served::start_tls`]) finished its handshake: append what the server says
    /// first over it (nsqd: `OK`).
    TlsEstablished(&'a mut Vec<u8>),
}

/// The hooks of [`ServerCodec`] by name (every codec has them; none can define them otherwise).
pub trait Hooks: ServerCodec {
    fn heartbeat_interval(&self) -> Option<std::time::Duration> {
        let mut answer = None;
        self.ask(Ask::HeartbeatInterval(&mut answer));
        answer
    }
    fn silence_limit(&self) -> Option<std::time::Duration> {
        let mut answer = None;
        self.ask(Ask::SilenceLimit(&mut answer));
        answer
    }
    fn busy(&self, out: &mut Vec<u8>) {
        self.ask(Ask::Busy(out));
    }
    fn seed(&mut self, seed: u64) {
        self.tell(Tell::Seed(seed));
    }
    fn set_unix_time(&mut self, secs: u64) {
        self.tell(Tell::UnixTime(secs));
    }
    fn heartbeat(&mut self, out: &mut Vec<u8>) {
        self.tell(Tell::Heartbeat(out));
    }
    fn tls_established(&mut self, out: &mut Vec<u8>) {
        self.tell(Tell::TlsEstablished(out));
    }
}

impl<S: ServerCodec> Hooks for S {}

/// A server codec behind a pointer, so that one engine core can serve listeners of different
/// protocols (nsq's TCP and HTTP sides; every protocol at once for `compare`). The call per
/// read through it is one indirect call beside a syscall.
pub type BoxedServer = Box<dyn ServerObject>;

/// A listening address and the codec its connections start from.
pub type Listener = (std::net::SocketAddr, BoxedServer);

/// A built-in server that answers datagrams (`serve udp`), sans-IO: each request to its
/// answer. There is no connection: a datagram is a request, whoever sent it.
pub trait DatagramServer: Send {
    /// The answer to `request` from `from`, appended to `out` (nothing: none is sent), and
    /// what the datagram was.
    fn answer(&mut self, from: std::net::SocketAddr, request: &[u8], out: &mut Vec<u8>) -> Answered;
    /// A copy for another core.
    fn boxed_clone(&self) -> BoxedDatagramServer;
}

/// What a datagram a [`DatagramServer`] was given turned out to be.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Answered {
    /// A client's set-up (a new client).
    SetUp,
    /// A request (counted as the server's requests).
    Request,
    /// Nothing it answers.
    Dropped,
}

/// A [`DatagramServer`] behind a pointer, as the server descriptors hand them out.
pub type BoxedDatagramServer = Box<dyn DatagramServer>;

/// What [`BoxedServer`] can do: a [`ServerCodec`], made object-safe.
pub trait ServerObject: Send {
    fn serve(&mut self, input: &[u8], out: &mut Vec<u8>) -> Served;
    fn ask(&self, question: Ask<'_>);
    fn tell(&mut self, news: Tell<'_>);
    fn clone_box(&self) -> BoxedServer;
}

impl<S: ServerCodec + Send + 'static> ServerObject for S {
    fn serve(&mut self, input: &[u8], out: &mut Vec<u8>) -> Served {
        ServerCodec::serve(self, input, out)
    }
    fn ask(&self, question: Ask<'_>) {
        ServerCodec::ask(self, question)
    }
    fn tell(&mut self, news: Tell<'_>) {
        ServerCodec::tell(self, news)
    }
    fn clone_box(&self) -> BoxedServer {
        Box::new(self.clone())
    }
}

impl Clone for BoxedServer {
    fn clone(&self) -> BoxedServer {
        self.as_ref().clone_box()
    }
}

impl ServerCodec for BoxedServer {
    fn serve(&mut self, input: &[u8], out: &mut Vec<u8>) -> Served {
        self.as_mut().serve(input, out)
    }
    fn ask(&self, question: Ask<'_>) {
        self.as_ref().ask(question)
    }
    fn tell(&mut self, news: Tell<'_>) {
        self.as_mut().tell(news)
    }
}
