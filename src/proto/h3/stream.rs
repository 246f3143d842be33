//! What each kind of stream carries, for both roles. A request stream's frames as its bytes
//! arrive ([`Reader`]): a DATA frame's payload handed on as it comes (never held), a HEADERS
//! frame held until whole (up to a limit), an unknown frame type skipped as it comes (RFC 9114
//! §9), the frames HTTP/3 allows only on the control stream refused (§7.2). The peer's
//! unidirectional streams ([`PeerStreams`]): its control stream (SETTINGS first, then GOAWAY
//! and frames this side ignores), QPACK's streams and unknown types read and dropped (with a
//! dynamic table of capacity 0 they carry nothing this side uses), push streams refused (push
//! is never allowed here).

use super::frame;
use std::borrow::Cow;

/// What a request stream's bytes make, piece by piece.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Piece<'a> {
    /// A frame's head (type and length): its octets.
    Head(usize),
    /// Octets of a DATA frame's payload.
    Data(&'a [u8]),
    /// A whole HEADERS frame: its head's octets, and its field section (in place when it came
    /// whole in one piece).
    Headers(usize, Cow<'a, [u8]>),
    /// Octets of an unknown frame, skipped.
    Skipped(usize),
}

/// Why a request stream's frames break RFC 9114.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Broken {
    Frame(frame::Error),
    /// A control-stream frame (SETTINGS, GOAWAY, MAX_PUSH_ID, CANCEL_PUSH) or a PUSH_PROMISE
    /// here: H3_FRAME_UNEXPECTED.
    Unexpected(&'static str),
}

impl From<frame::Error> for Broken {
    fn from(e: frame::Error) -> Broken {
        Broken::Frame(e)
    }
}

/// The reader of one stream.
#[derive(Debug, Clone, Default)]
pub struct Reader {
    /// A frame head not whole yet, or a HEADERS frame not whole yet (head included).
    pending: Vec<u8>,
    /// Octets left of the current DATA (or skipped) frame's payload.
    left: u64,
    skipping: bool,
}

impl Reader {
    /// The next piece of `data` (consumed from its front); `Ok(None)`: `data` is all taken and
    /// no piece is whole. A HEADERS frame over `max_headers` octets is refused at its head.
    pub fn next<'a>(&mut self, data: &mut &'a [u8], max_headers: u64) -> Result<Option<Piece<'a>>, Broken> {
        loop {
            if self.left > 0 {
                if data.is_empty() {
                    return Ok(None);
                }
                let n = (self.left as usize).min(data.len());
                let (taken, rest) = data.split_at(n);
                *data = rest;
                self.left -= n as u64;
                return Ok(Some(if self.skipping { Piece::Skipped(n) } else { Piece::Data(taken) }));
            }
            if data.is_empty() {
                return Ok(None);
            }
            let before = *data;
            let head = if self.pending.is_empty() {
                // Mostly a whole head is here: read in place.
                match frame::parse_head(data)? {
                    Some(head) => {
                        *data = &data[head.2..];
                        Some(head)
                    }
                    None => None,
                }
            } else {
                None
            };
            // Otherwise a head (at most two varints, 16 octets) is gathered an octet at a
            // time; or a HEADERS frame's head is pending, and more of its section is here.
            let head = match head {
                Some(head) => Some(head),
                None if self.pending.is_empty() || frame::parse_head(&self.pending)?.is_none() => {
                    self.pending.push(data[0]);
                    *data = &data[1..];
                    match frame::parse_head(&self.pending)? {
                        Some(head) => Some(head),
                        None => continue,
                    }
                }
                None => None,
            };
            if let Some((kind, len, head)) = head {
                match kind {
                    frame::DATA => {
                        (self.left, self.skipping) = (len, false);
                        self.pending.clear();
                        return Ok(Some(Piece::Head(head)));
                    }
                    frame::HEADERS if len > max_headers => {
                        return Err(frame::Error::TooLong { kind: "HEADERS", len, max: max_headers }.into());
                    }
                    frame::HEADERS if self.pending.is_empty() && data.len() as u64 >= len => {
                        // Whole here: handed on in place.
                        let (section, rest) = data.split_at(len as usize);
                        *data = rest;
                        return Ok(Some(Piece::Headers(head, Cow::Borrowed(section))));
                    }
                    frame::HEADERS if len == 0 => {
                        self.pending.clear();
                        return Ok(Some(Piece::Headers(head, Cow::Borrowed(&[]))));
                    }
                    frame::HEADERS => {
                        if self.pending.is_empty() {
                            self.pending.extend_from_slice(&before[..head]);
                        }
                        continue;
                    }
                    frame::SETTINGS => return Err(Broken::Unexpected("SETTINGS")),
                    frame::GOAWAY => return Err(Broken::Unexpected("GOAWAY")),
                    frame::MAX_PUSH_ID => return Err(Broken::Unexpected("MAX_PUSH_ID")),
                    frame::CANCEL_PUSH => return Err(Broken::Unexpected("CANCEL_PUSH")),
                    frame::PUSH_PROMISE => return Err(Broken::Unexpected("PUSH_PROMISE")),
                    _ => {
                        (self.left, self.skipping) = (len, true);
                        self.pending.clear();
                        return Ok(Some(Piece::Head(head)));
                    }
                }
            }
            // Inside a HEADERS frame: as much of it as is here.
            let (_, len, head) = frame::parse_head(&self.pending)?.expect("a whole head");
            let want = head + len as usize;
            let take = (want - self.pending.len()).min(data.len());
            self.pending.extend_from_slice(&data[..take]);
            *data = &data[take..];
            if self.pending.len() < want {
                return Ok(None);
            }
            let mut section = std::mem::take(&mut self.pending);
            section.drain(..head);
            return Ok(Some(Piece::Headers(head, Cow::Owned(section))));
        }
    }

    /// Octets held of a frame not whole yet (a HEADERS frame's, or a head's).
    pub fn held(&self) -> usize {
        self.pending.len()
    }

    /// Whether the stream may end here: not inside a frame.
    pub fn at_frame_boundary(&self) -> bool {
        self.pending.is_empty() && self.left == 0
    }
}

/// Why the peer's unidirectional streams break RFC 9114 (each a connection error).
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum UniError {
    #[error(transparent)]
    Frame(#[from] frame::Error),
    #[error("HTTP/3 H3_STREAM_CREATION_ERROR: a second control stream")]
    SecondControl,
    #[error("HTTP/3 H3_STREAM_CREATION_ERROR: a push stream, with push never allowed")]
    Push,
    #[error("HTTP/3 H3_MISSING_SETTINGS: the control stream began with {0}")]
    MissingSettings(&'static str),
    #[error("HTTP/3 H3_FRAME_UNEXPECTED: {0} on the control stream")]
    ControlFrame(&'static str),
    #[error("HTTP/3 H3_FRAME_UNEXPECTED: a second SETTINGS")]
    SecondSettings,
    #[error("HTTP/3 H3_CLOSED_CRITICAL_STREAM: the peer closed its {0}")]
    CriticalClosed(&'static str),
    #[error("HTTP/3 H3_STREAM_CREATION_ERROR: a second {0}")]
    SecondQpack(&'static str),
    #[error("HTTP/3 H3_ID_ERROR: a GOAWAY raising the last id from {0} to {1}")]
    GoAwayRaised(u64, u64),
    #[error("HTTP/3 H3_ID_ERROR: a server's GOAWAY naming {0}, not a request stream")]
    GoAwayId(u64),
    #[error("HTTP/3 H3_SETTINGS_ERROR: setting {0:#x} twice, or one HTTP/2 reserves")]
    Setting(u64),
}

impl UniError {
    /// The error code the connection closes with.
    pub fn code(&self) -> u64 {
        match self {
            UniError::Frame(e) => e.code(),
            UniError::SecondControl | UniError::Push | UniError::SecondQpack(_) => {
                frame::H3_STREAM_CREATION_ERROR
            }
            UniError::MissingSettings(_) => frame::H3_MISSING_SETTINGS,
            UniError::ControlFrame(_) | UniError::SecondSettings => frame::H3_FRAME_UNEXPECTED,
            UniError::CriticalClosed(_) => frame::H3_CLOSED_CRITICAL_STREAM,
            UniError::GoAwayRaised(..) | UniError::GoAwayId(_) => frame::H3_ID_ERROR,
            UniError::Setting(_) => frame::H3_SETTINGS_ERROR,
        }
    }
}

/// A unidirectional stream the peer opened: its type once known, and the control stream's
/// octets of a frame not yet whole (or of an unknown frame's payload, the octets still to skip).
#[derive(Debug, Clone)]
struct Uni {
    id: u64,
    kind: Option<u64>,
    pending: Vec<u8>,
    skip: u64,
}

/// The largest control-stream frame held whole.
const MAX_CONTROL_FRAME: u64 = 16 << 10;

/// The peer's unidirectional streams.
#[derive(Debug, Clone, Default)]
pub struct PeerStreams {
    /// Those still open (one ended is forgotten).
    open: Vec<Uni>,
    control: Option<u64>,
    /// QPACK's encoder and decoder streams (RFC 9204 §4.2): critical, as the control stream.
    qpack: [Option<u64>; 2],
    settings: bool,
    /// The last id of the peer's GOAWAYs.
    goaway: Option<u64>,
    /// The peer is a server (this side the client): its GOAWAY names request streams, and it
    /// may not send MAX_PUSH_ID.
    server_role: bool,
}

impl PeerStreams {
    /// The streams of a peer that is the server (`true`) or the client.
    pub fn of_server(server: bool) -> PeerStreams {
        PeerStreams { server_role: server, ..PeerStreams::default() }
    }

    /// `data` arrived on the peer's unidirectional stream `stream` (`fin`: it ended there).
    pub fn data(&mut self, stream: u64, data: &[u8], fin: bool) -> Result<(), UniError> {
        let at = match self.open.iter().position(|u| u.id == stream) {
            Some(at) => at,
            None => {
                self.open.push(Uni { id: stream, kind: None, pending: Vec::new(), skip: 0 });
                self.open.len() - 1
            }
        };
        let result = self.take(at, stream, data);
        if fin {
            self.open.swap_remove(at);
            result?;
            return self.critical(stream);
        }
        result
    }

    /// The peer's stream `stream` ended: an error if it was one of the critical ones (RFC 9114
    /// §6.2.1, RFC 9204 §4.2).
    fn critical(&self, stream: u64) -> Result<(), UniError> {
        if self.control == Some(stream) {
            return Err(UniError::CriticalClosed("control stream"));
        }
        match self.qpack.iter().position(|q| *q == Some(stream)) {
            Some(0) => Err(UniError::CriticalClosed("QPACK encoder stream")),
            Some(_) => Err(UniError::CriticalClosed("QPACK decoder stream")),
            None => Ok(()),
        }
    }

    fn take(&mut self, at: usize, stream: u64, data: &[u8]) -> Result<(), UniError> {
        let u = &mut self.open[at];
        if u.kind.is_some_and(|k| k != frame::CONTROL_STREAM) {
            return Ok(()); // QPACK's or an unknown kind: dropped
        }
        u.pending.extend_from_slice(data);
        if u.kind.is_none() {
            let Some((kind, used)) = frame::read_varint(&u.pending) else { return Ok(()) };
            u.pending.drain(..used);
            u.kind = Some(kind);
            match kind {
                frame::CONTROL_STREAM if self.control.is_some() => return Err(UniError::SecondControl),
                frame::CONTROL_STREAM => self.control = Some(stream),
                frame::PUSH_STREAM => return Err(UniError::Push),
                frame::QPACK_ENCODER_STREAM | frame::QPACK_DECODER_STREAM => {
                    let (which, name) = match kind {
                        frame::QPACK_ENCODER_STREAM => (0, "QPACK encoder stream"),
                        _ => (1, "QPACK decoder stream"),
                    };
                    if self.qpack[which].is_some() {
                        return Err(UniError::SecondQpack(name));
                    }
                    self.qpack[which] = Some(stream);
                    u.pending = Vec::new();
                    return Ok(());
                }
                _ => {
                    u.pending = Vec::new();
                    return Ok(());
                }
            }
        }
        // The control stream: its whole frames, and unknown ones skipped as they come,
        // however long (§9: their types are extension points; only known ones are held).
        let mut pending = std::mem::take(&mut self.open[at].pending);
        let mut rest = &pending[..];
        loop {
            let u = &mut self.open[at];
            if u.skip > 0 {
                let n = (u.skip as usize).min(rest.len());
                u.skip -= n as u64;
                rest = &rest[n..];
                if u.skip > 0 {
                    break;
                }
            }
            if let Some((kind, len, head)) = frame::parse_head(rest)?
                && !frame::is_known(kind)
            {
                u.skip = len;
                rest = &rest[head..];
                continue;
            }
            let Some((f, used)) = frame::parse(rest, MAX_CONTROL_FRAME)? else { break };
            rest = &rest[used..];
            match f {
                frame::Frame::Settings(params) if !self.settings => {
                    self.settings = true;
                    let mut seen = Vec::new();
                    for p in frame::settings(params) {
                        let (id, _) = p?;
                        // A parameter twice, or one of HTTP/2's (0x02..=0x05), is an error
                        // (§7.2.4.1).
                        if seen.contains(&id) || (2..=5).contains(&id) {
                            return Err(UniError::Setting(id));
                        }
                        seen.push(id);
                    }
                }
                f if !self.settings => return Err(UniError::MissingSettings(f.name())),
                frame::Frame::Settings(_) => return Err(UniError::SecondSettings),
                frame::Frame::GoAway(last) if self.server_role && last % 4 != 0 => {
                    // A server's GOAWAY names a client-initiated bidirectional stream (§5.2).
                    return Err(UniError::GoAwayId(last));
                }
                frame::Frame::GoAway(last) => {
                    if let Some(before) = self.goaway
                        && last > before
                    {
                        return Err(UniError::GoAwayRaised(before, last));
                    }
                    self.goaway = Some(last);
                }
                // Push frames come from a client only (this side never pushes, as a server), and
                // a server must not send MAX_PUSH_ID (§7.2.7).
                frame::Frame::MaxPushId(_) if self.server_role => {
                    return Err(UniError::ControlFrame("MAX_PUSH_ID"));
                }
                frame::Frame::MaxPushId(_) | frame::Frame::CancelPush(_) | frame::Frame::Unknown { .. } => {}
                f => return Err(UniError::ControlFrame(f.name())),
            }
        }
        let used = pending.len() - rest.len();
        pending.drain(..used);
        self.open[at].pending = pending;
        Ok(())
    }

    /// The peer reset its unidirectional stream `stream`: forgotten; its control and QPACK
    /// streams are critical (H3_CLOSED_CRITICAL_STREAM).
    pub fn reset(&mut self, stream: u64) -> Result<(), UniError> {
        if let Some(at) = self.open.iter().position(|u| u.id == stream) {
            self.open.swap_remove(at);
        }
        self.critical(stream)
    }

    /// The last id of the peer's GOAWAYs: a server's, the last request stream it takes.
    pub fn goaway(&self) -> Option<u64> {
        self.goaway
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// QPACK's streams are critical (RFC 9204 §4.2): one ending or reset is the connection's
    /// end, a second of either kind an error; on the control stream an unknown frame of any
    /// length (here 100,000 octets, in pieces) is skipped, and the GOAWAY after it read.
    #[test]
    fn qpack_streams_are_critical_and_unknown_control_frames_of_any_length_skipped() {
        let mut p = PeerStreams::of_server(true);
        p.data(7, &[0x02], false).unwrap();
        p.data(11, &[0x03], false).unwrap();
        assert_eq!(p.data(15, &[0x02], false), Err(UniError::SecondQpack("QPACK encoder stream")));
        assert_eq!(p.clone().data(7, &[], true), Err(UniError::CriticalClosed("QPACK encoder stream")));
        assert_eq!(p.clone().reset(11), Err(UniError::CriticalClosed("QPACK decoder stream")));
        let mut control = vec![0x00];
        frame::write_settings(&mut control, &[]);
        frame::write_frame(&mut control, 0x21, &vec![b'g'; 100_000]);
        frame::write_frame(&mut control, frame::GOAWAY, &[8]);
        for piece in control.chunks(7_000) {
            p.data(3, piece, false).unwrap();
        }
        assert_eq!(p.goaway(), Some(8));
        assert!(p.reset(19).is_ok(), "an unknown stream may end");
    }

    /// A stream of HEADERS, DATA, an unknown frame and trailers gives the same pieces' sums
    /// whole and an octet at a time; a cut inside a frame is not a boundary.
    #[test]
    fn pieces_whole_and_an_octet_at_a_time() {
        let mut bytes = Vec::new();
        frame::write_frame(&mut bytes, frame::HEADERS, &[0, 0, 0xd9]);
        frame::write_frame(&mut bytes, frame::DATA, &[b'x'; 100]);
        frame::write_frame(&mut bytes, 0x21, b"grease");
        frame::write_frame(&mut bytes, frame::HEADERS, &[0, 0, 0xc1]);
        let sums = |chunks: &[&[u8]]| {
            let mut r = Reader::default();
            let (mut heads, mut data, mut sections, mut skipped) = (0, 0, Vec::new(), 0);
            for chunk in chunks {
                let mut rest = *chunk;
                while let Some(piece) = r.next(&mut rest, 1000).unwrap() {
                    match piece {
                        Piece::Head(n) => heads += n,
                        Piece::Data(d) => data += d.len(),
                        Piece::Headers(head, s) => {
                            heads += head;
                            sections.push(s.into_owned())
                        }
                        Piece::Skipped(n) => skipped += n,
                    }
                }
                assert!(rest.is_empty());
            }
            (heads, data, sections, skipped, r.at_frame_boundary())
        };
        let whole = sums(&[&bytes]);
        // Heads: 2 per HEADERS and for the unknown frame, 3 for DATA (100 is a 2-octet varint).
        assert_eq!(whole, (2 + 3 + 2 + 2, 100, vec![vec![0, 0, 0xd9], vec![0, 0, 0xc1]], 6, true));
        let octets: Vec<&[u8]> = bytes.chunks(1).collect();
        assert_eq!(sums(&octets), whole);
        // Cut once anywhere: a head read in place with its section cut, a head cut, …
        for cut in 1..bytes.len() {
            assert_eq!(sums(&[&bytes[..cut], &bytes[cut..]]), whole, "cut at {cut}");
        }
        assert!(!sums(&[&bytes[..7]]).4, "inside the DATA frame");
        let mut r = Reader::default();
        let mut settings = &[0x04, 0x00][..];
        assert_eq!(r.next(&mut settings, 1000), Err(Broken::Unexpected("SETTINGS")));
        let mut big = &[0x01, 0x44, 0x00][..];
        let too_long = frame::Error::TooLong { kind: "HEADERS", len: 1024, max: 1000 };
        assert_eq!(Reader::default().next(&mut big, 1000), Err(Broken::Frame(too_long)));
    }
}
