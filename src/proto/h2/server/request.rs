//! What `serve h2` reads of a request: its header block's fields (checked against RFC 9113's
//! rules as they are decoded) and a gRPC call's messages as they pass.

use super::MAX_GRPC_MESSAGE;

/// A gRPC request's messages, read as they pass: each a 5-octet prefix (a compressed flag and
/// a 32-bit length) and that many octets.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(super) struct GrpcScan {
    prefix: [u8; 5],
    have: usize,
    /// Octets of the current message still to come.
    need: usize,
    /// A message over [`MAX_GRPC_MESSAGE`]: the rest is not echoed.
    too_large: bool,
}

impl GrpcScan {
    /// Read `data`, appending to `echo` what goes back: a prefix once it is whole and its
    /// message within the limit, then the message's octets as they come; nothing after a
    /// message over the limit.
    pub(super) fn feed(&mut self, mut data: &[u8], echo: &mut Vec<u8>) {
        while !data.is_empty() && !self.too_large {
            if self.need > 0 {
                let n = self.need.min(data.len());
                echo.extend_from_slice(&data[..n]);
                self.need -= n;
                data = &data[n..];
                continue;
            }
            let n = (5 - self.have).min(data.len());
            self.prefix[self.have..self.have + n].copy_from_slice(&data[..n]);
            self.have += n;
            data = &data[n..];
            if self.have == 5 {
                let p = self.prefix;
                self.need = u32::from_be_bytes([p[1], p[2], p[3], p[4]]) as usize;
                self.have = 0;
                self.too_large = self.need > MAX_GRPC_MESSAGE;
                if !self.too_large {
                    echo.extend_from_slice(&p);
                }
            }
        }
    }

    /// The call's status once its request ended: gRPC's code and message.
    pub(super) fn status(&self) -> (&'static str, Option<&'static str>) {
        if self.too_large {
            ("8", Some("message larger than 4 MiB")) // RESOURCE_EXHAUSTED
        } else if self.have > 0 || self.need > 0 {
            ("13", Some("request ended inside a message")) // INTERNAL
        } else {
            ("0", None)
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Method {
    Get,
    Head,
    Other,
}

/// What a request's header block said, as far as this server reads it.
#[derive(Debug, Default)]
pub(super) struct Head {
    pub(super) method: Option<Method>,
    pub(super) path: bool,
    pub(super) scheme: bool,
    pub(super) authority: bool,
    pub(super) grpc: bool,
    pub(super) content_length: Option<u64>,
    /// A pseudo-header was seen (trailers may carry none).
    pub(super) pseudo: bool,
    pub(super) regular: bool,
    pub(super) malformed: bool,
}

impl Head {
    /// One field (§8.3, §8.2.2): pseudo-headers first and known, names in lower case, no
    /// connection-specific field, `te` only as `trailers`.
    pub(super) fn field(&mut self, name: &[u8], value: &[u8]) {
        if let Some(pseudo) = name.strip_prefix(b":") {
            self.pseudo = true;
            self.malformed |= self.regular;
            match pseudo {
                b"method" => {
                    self.malformed |= self.method.is_some() || value.is_empty();
                    self.method = Some(match value {
                        b"GET" => Method::Get,
                        b"HEAD" => Method::Head,
                        _ => Method::Other,
                    });
                }
                b"path" => {
                    self.malformed |= self.path || value.is_empty();
                    self.path = true;
                }
                b"scheme" => {
                    self.malformed |= self.scheme || value.is_empty();
                    self.scheme = true;
                }
                b"authority" => {
                    self.malformed |= self.authority;
                    self.authority = true;
                }
                _ => self.malformed = true,
            }
            return;
        }
        self.regular = true;
        self.malformed |= name.iter().any(u8::is_ascii_uppercase)
            || matches!(
                name,
                b"connection" | b"keep-alive" | b"proxy-connection" | b"transfer-encoding" | b"upgrade"
            )
            || (name == b"te" && value != b"trailers");
        match name {
            b"content-type" => self.grpc = value.starts_with(b"application/grpc"),
            b"content-length" => {
                let n = std::str::from_utf8(value).ok().and_then(|v| v.parse::<u64>().ok());
                self.malformed |= n.is_none() || self.content_length.is_some();
                self.content_length = n;
            }
            _ => {}
        }
    }
}
