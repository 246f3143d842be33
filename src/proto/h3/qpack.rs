//! QPACK (RFC 9204), the way this side uses it: no dynamic table. It announces a table capacity
//! of 0 (SETTINGS_QPACK_MAX_TABLE_CAPACITY 0, no blocked streams), so every field section it
//! encodes is the static table's indexes and literals — `Required Insert Count` 0, no encoder
//! stream instructions — and one it receives that refers to a dynamic table is a
//! `QPACK_DECOMPRESSION_FAILED` error (§2.2.3: a peer must not, once told the capacity is 0).
//!
//! So unlike HPACK on HTTP/2, a request's header bytes are the same on a connection's first
//! request as on its thousandth: what HTTP/3 gives up for streams that may arrive out of order.
//! Strings are Huffman-coded (HPACK's code, Appendix B of RFC 7541) where that is shorter, and
//! sent as they are with Huffman off.

use crate::proto::h2::{hpack, huffman};

/// A field section that breaks RFC 9204, or this side's limits.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum Error {
    #[error("QPACK_DECOMPRESSION_FAILED: field section cut short")]
    Truncated,
    #[error("QPACK_DECOMPRESSION_FAILED: integer too large")]
    Integer,
    #[error("QPACK_DECOMPRESSION_FAILED: static index {0} is past the table's 99")]
    Index(u64),
    #[error("QPACK_DECOMPRESSION_FAILED: invalid Huffman string")]
    Huffman,
    #[error(
        "QPACK_DECOMPRESSION_FAILED: the field section refers to a dynamic table, which this side announced with capacity 0"
    )]
    Dynamic,
    #[error("QPACK_DECOMPRESSION_FAILED: field section larger than the limit")]
    TooLarge,
}

impl From<hpack::Error> for Error {
    fn from(e: hpack::Error) -> Error {
        match e {
            hpack::Error::Integer => Error::Integer,
            hpack::Error::Huffman => Error::Huffman,
            hpack::Error::TooLarge => Error::TooLarge,
            _ => Error::Truncated,
        }
    }
}

/// The static table (Appendix A): index i is `STATIC[i]` (from 0, unlike HPACK's).
pub const STATIC: [(&str, &str); 99] = [
    (":authority", ""),
    (":path", "/"),
    ("age", "0"),
    ("content-disposition", ""),
    ("content-length", "0"),
    ("cookie", ""),
    ("date", ""),
    ("etag", ""),
    ("if-modified-since", ""),
    ("if-none-match", ""),
    ("last-modified", ""),
    ("link", ""),
    ("location", ""),
    ("referer", ""),
    ("set-cookie", ""),
    (":method", "CONNECT"),
    (":method", "DELETE"),
    (":method", "GET"),
    (":method", "HEAD"),
    (":method", "OPTIONS"),
    (":method", "POST"),
    (":method", "PUT"),
    (":scheme", "http"),
    (":scheme", "https"),
    (":status", "103"),
    (":status", "200"),
    (":status", "304"),
    (":status", "404"),
    (":status", "503"),
    ("accept", "*/*"),
    ("accept", "application/dns-message"),
    ("accept-encoding", "gzip, deflate, br"),
    ("accept-ranges", "bytes"),
    ("access-control-allow-headers", "cache-control"),
    ("access-control-allow-headers", "content-type"),
    ("access-control-allow-origin", "*"),
    ("cache-control", "max-age=0"),
    ("cache-control", "max-age=2592000"),
    ("cache-control", "max-age=604800"),
    ("cache-control", "no-cache"),
    ("cache-control", "no-store"),
    ("cache-control", "public, max-age=31536000"),
    ("content-encoding", "br"),
    ("content-encoding", "gzip"),
    ("content-type", "application/dns-message"),
    ("content-type", "application/javascript"),
    ("content-type", "application/json"),
    ("content-type", "application/x-www-form-urlencoded"),
    ("content-type", "image/gif"),
    ("content-type", "image/jpeg"),
    ("content-type", "image/png"),
    ("content-type", "text/css"),
    ("content-type", "text/html; charset=utf-8"),
    ("content-type", "text/plain"),
    ("content-type", "text/plain;charset=utf-8"),
    ("range", "bytes=0-"),
    ("strict-transport-security", "max-age=31536000"),
    ("strict-transport-security", "max-age=31536000; includesubdomains"),
    ("strict-transport-security", "max-age=31536000; includesubdomains; preload"),
    ("vary", "accept-encoding"),
    ("vary", "origin"),
    ("x-content-type-options", "nosniff"),
    ("x-xss-protection", "1; mode=block"),
    (":status", "100"),
    (":status", "204"),
    (":status", "206"),
    (":status", "302"),
    (":status", "400"),
    (":status", "403"),
    (":status", "421"),
    (":status", "425"),
    (":status", "500"),
    ("accept-language", ""),
    ("access-control-allow-credentials", "FALSE"),
    ("access-control-allow-credentials", "TRUE"),
    ("access-control-allow-headers", "*"),
    ("access-control-allow-methods", "get"),
    ("access-control-allow-methods", "get, post, options"),
    ("access-control-allow-methods", "options"),
    ("access-control-expose-headers", "content-length"),
    ("access-control-request-headers", "content-type"),
    ("access-control-request-method", "get"),
    ("access-control-request-method", "post"),
    ("alt-svc", "clear"),
    ("authorization", ""),
    ("content-security-policy", "script-src 'none'; object-src 'none'; base-uri 'none'"),
    ("early-data", "1"),
    ("expect-ct", ""),
    ("forwarded", ""),
    ("if-range", ""),
    ("origin", ""),
    ("purpose", "prefetch"),
    ("server", ""),
    ("timing-allow-origin", "*"),
    ("upgrade-insecure-requests", "1"),
    ("user-agent", ""),
    ("x-forwarded-for", ""),
    ("x-frame-options", "deny"),
    ("x-frame-options", "sameorigin"),
];

/// Where `name: value` is in the static table: the index of the whole field if it is there,
/// else of its name.
fn find(name: &[u8], value: &[u8]) -> (Option<usize>, Option<usize>) {
    let mut by_name = None;
    for (i, (n, v)) in STATIC.iter().enumerate() {
        if n.as_bytes() == name {
            if v.as_bytes() == value {
                return (Some(i), Some(i));
            }
            by_name.get_or_insert(i);
        }
    }
    (None, by_name)
}

/// Append the field section of `fields` (§4.5): its prefix (Required Insert Count 0, Delta Base
/// 0), then per field an indexed line where the static table has it whole, a literal with the
/// table's name where it has the name, else a literal name and value.
pub fn encode<'a>(fields: impl IntoIterator<Item = (&'a [u8], &'a [u8])>, huffman: bool, out: &mut Vec<u8>) {
    out.extend_from_slice(&[0, 0]);
    for (name, value) in fields {
        match find(name, value) {
            // Indexed field line (§4.5.2): 1, T = 1 (static), a 6-bit prefix index.
            (Some(i), _) => hpack::encode_int(out, 0xc0, 6, i as u64),
            // With name reference (§4.5.4): 01, N = 0, T = 1, a 4-bit prefix index; the value.
            (None, Some(i)) => {
                hpack::encode_int(out, 0x50, 4, i as u64);
                hpack::encode_str_prefixed(out, 0, 7, value, huffman);
            }
            // With literal name (§4.5.6): 001, N = 0, H, a 3-bit prefix length; the value.
            (None, None) => {
                hpack::encode_str_prefixed(out, 0x20, 3, name, huffman);
                hpack::encode_str_prefixed(out, 0, 7, value, huffman);
            }
        }
    }
}

/// Decode a field section, calling `field(name, value)` for each line in order; at most
/// `max_list` octets of names and values (32 more per field, as RFC 9114 §4.2.2 counts).
pub fn decode(section: &[u8], max_list: usize, mut field: impl FnMut(&[u8], &[u8])) -> Result<(), Error> {
    // The prefix: Required Insert Count (8-bit prefix) must be 0; Delta Base is then moot.
    let (insert_count, a) = hpack::decode_int(section, 8)?;
    if insert_count != 0 {
        return Err(Error::Dynamic);
    }
    let (_, b) = hpack::decode_int(&section[a..], 7)?;
    let mut rest = &section[a + b..];
    let (mut name, mut value) = (Vec::new(), Vec::new());
    let mut size = 0usize;
    while let Some(&first) = rest.first() {
        let used;
        if first & 0x80 != 0 {
            // Indexed field line: T (0x40) must say static.
            if first & 0x40 == 0 {
                return Err(Error::Dynamic);
            }
            let (i, n) = hpack::decode_int(rest, 6)?;
            let (sn, sv) = STATIC.get(i as usize).ok_or(Error::Index(i))?;
            name.clear();
            name.extend_from_slice(sn.as_bytes());
            value.clear();
            value.extend_from_slice(sv.as_bytes());
            used = n;
        } else if first & 0x40 != 0 {
            // Literal with name reference: T (0x10) must say static.
            if first & 0x10 == 0 {
                return Err(Error::Dynamic);
            }
            let (i, n) = hpack::decode_int(rest, 4)?;
            let (sn, _) = STATIC.get(i as usize).ok_or(Error::Index(i))?;
            name.clear();
            name.extend_from_slice(sn.as_bytes());
            used = n + hpack::decode_str_prefixed(&rest[n..], 7, &mut value)?;
        } else if first & 0x20 != 0 {
            // Literal with literal name.
            let n = hpack::decode_str_prefixed(rest, 3, &mut name)?;
            used = n + hpack::decode_str_prefixed(&rest[n..], 7, &mut value)?;
        } else {
            // Indexed with post-base index (0001) or literal with post-base name reference
            // (0000): the dynamic table's.
            return Err(Error::Dynamic);
        }
        size += name.len() + value.len() + 32;
        if size > max_list {
            return Err(Error::TooLarge);
        }
        field(&name, &value);
        rest = &rest[used..];
    }
    Ok(())
}

/// The octets `s` takes as a string literal with Huffman `huffman` (for the expected bytes of
/// tests and docs).
pub fn str_len(s: &[u8], huffman: bool) -> usize {
    let coded = huffman::encoded_len(s);
    if huffman && coded <= s.len() { coded } else { s.len() }
}

/// The last field section decoded and what was read from it. Without a dynamic table a
/// section's octets mean the same every time, and a peer mostly sends one section again and
/// again (a client its request, a server its answer): the same octets again are not decoded
/// again. Both HTTP/3 roles read their peer's sections through one.
#[derive(Debug, Clone)]
pub struct LastSection<T> {
    octets: Vec<u8>,
    value: Option<T>,
}

impl<T> Default for LastSection<T> {
    fn default() -> Self {
        LastSection { octets: Vec::new(), value: None }
    }
}

impl<T: Copy> LastSection<T> {
    /// What `read` makes of `section`: remembered when these octets were the last ones read,
    /// else read (an error is not remembered) and remembered.
    pub fn read<E>(&mut self, section: &[u8], read: impl FnOnce(&[u8]) -> Result<T, E>) -> Result<T, E> {
        if let Some(value) = self.value
            && self.octets == section
        {
            return Ok(value);
        }
        let value = read(section)?;
        self.octets.clear();
        self.octets.extend_from_slice(section);
        self.value = Some(value);
        Ok(value)
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_last_section_is_read_once_and_another_or_a_failure_again() {
        let mut last = LastSection::default();
        let mut reads = 0;
        let mut read = |section: &[u8]| {
            reads += 1;
            if section == b"bad" { Err(()) } else { Ok(section.len()) }
        };
        assert_eq!(last.read(b"ab", &mut read), Ok(2));
        assert_eq!(last.read(b"ab", &mut read), Ok(2));
        assert_eq!(last.read(b"abc", &mut read), Ok(3));
        assert_eq!(last.read(b"bad", &mut read), Err(()));
        assert_eq!(last.read(b"bad", &mut read), Err(()));
        assert_eq!(last.read(b"abc", &mut read), Ok(3));
        assert_eq!(reads, 4);
    }

    use super::*;

    fn decoded(section: &[u8]) -> Result<Vec<(String, String)>, Error> {
        let mut seen = Vec::new();
        decode(section, 1 << 16, |n, v| {
            seen.push((String::from_utf8_lossy(n).into_owned(), String::from_utf8_lossy(v).into_owned()))
        })?;
        Ok(seen)
    }

    /// RFC 9204 Appendix B.1: `:path /index.html` with the static table's name (index 1) and
    /// the value as it is: 0000 510b 2f69 6e64 6578 2e68 746d 6c.
    #[test]
    fn rfc_9204_b1_literal_with_a_static_name() {
        let want = [&[0x00, 0x00, 0x51, 0x0b][..], b"/index.html"].concat();
        let mut out = Vec::new();
        encode([(&b":path"[..], &b"/index.html"[..])], false, &mut out);
        assert_eq!(out, want);
        assert_eq!(decoded(&want).unwrap(), [(":path".into(), "/index.html".into())]);
    }

    /// By hand: `:method GET` is static 17 whole (0xc0 | 17 = 0xd1); `:status 200` static 25
    /// (0xd9); `:authority example.com` a literal with static name 0 (0x50) and the value's
    /// Huffman code (11 characters in 8 octets: 0x88 then the code); `x-trace: 1` a literal
    /// name (0x20 | 7 = 0x27 and a 0x00: a length of 7 fills the 3-bit prefix, so an octet
    /// follows, RFC 7541 §5.1), "x-trace", then 0x01 "1".
    #[test]
    fn lines_by_hand_and_back() {
        let fields: [(&[u8], &[u8]); 4] =
            [(b":method", b"GET"), (b":status", b"200"), (b":authority", b"example.com"), (b"x-trace", b"1")];
        let mut out = Vec::new();
        encode(fields, false, &mut out);
        let want =
            [&[0, 0, 0xd1, 0xd9, 0x50, 11][..], b"example.com", &[0x27, 0x00], b"x-trace", &[0x01], b"1"]
                .concat();
        assert_eq!(out, want);
        let mut coded = Vec::new();
        encode(fields, true, &mut coded);
        assert_eq!(coded[4..6], [0x50, 0x80 | 8]);
        // Huffman on the name too (H = 0x08 of 001N H LLL): "x-trace" is 5 octets coded.
        assert_eq!(coded[14], 0x20 | 0x08 | 5);
        for section in [out, coded] {
            let back = decoded(&section).unwrap();
            let want: Vec<(String, String)> = fields
                .iter()
                .map(|(n, v)| (String::from_utf8_lossy(n).into(), String::from_utf8_lossy(v).into()))
                .collect();
            assert_eq!(back, want);
        }
    }

    /// A reference to a dynamic table (a Required Insert Count, an indexed line with T = 0, a
    /// post-base index, a name reference with T = 0) is refused, as are a static index past 98,
    /// a cut, and a list over the limit.
    #[test]
    fn what_qpack_refuses_here() {
        assert_eq!(decoded(&[0x01, 0x00]), Err(Error::Dynamic));
        assert_eq!(decoded(&[0x00, 0x00, 0x80]), Err(Error::Dynamic));
        assert_eq!(decoded(&[0x00, 0x00, 0x10]), Err(Error::Dynamic));
        assert_eq!(decoded(&[0x00, 0x00, 0x40, 0x01, b'x']), Err(Error::Dynamic));
        assert_eq!(decoded(&[0x00, 0x00, 0xff, 0x24]), Err(Error::Index(99)));
        assert_eq!(decoded(&[0x00, 0x00, 0x51, 0x0b, b'/']), Err(Error::Truncated));
        let mut big = Vec::new();
        encode([(&b"x"[..], &[b'v'; 100][..])], false, &mut big);
        assert_eq!(decode(&big, 100, |_, _| {}), Err(Error::TooLarge));
    }
}
