//! The HTTP side of the publish sink (`/pub`, `/mpub`, `/ping`), answering as nsqd's Go server
//! does: the same status lines, headers in the same order, the same bodies, and a live `Date`.

use super::sink::{MpubProgress, parse_mpub_body};
use super::{ByteWriter, MAX_REQ_TIMEOUT_MS, SinkLimits, valid_topic};
use crate::proto::http1::{self, Refusal, Request, RequestLimits};
use crate::proto::{Ask, Served, ServerCodec, Tell};
use std::fmt::Write as _;

/// Go's request-head limit (`http.DefaultMaxHeaderBytes` plus its 4 KiB slack).
const GO_MAX_HEADER_BYTES: usize = (1 << 20) + 4096;

/// The HTTP side of the sink (`/pub`, `/mpub`, `/ping`), answering as nsqd's Go server does:
/// same status lines, headers in the same order, same bodies, and a live `Date`.
#[derive(Debug, Clone)]
pub struct NsqHttpServer {
    limits: SinkLimits,
    date: [u8; 29],
    date_secs: u64,
    reader: http1::RequestReader,
}

impl NsqHttpServer {
    pub fn new(limits: SinkLimits) -> Self {
        NsqHttpServer { limits, date: http_date(0), date_secs: 0, reader: http1::RequestReader::default() }
    }

    /// Route one request; returns (status, extra leading header, body, published messages).
    fn route(&self, r: &Request<'_>) -> (u16, Option<&'static str>, Result<&'static str, String>, u64) {
        let (path, query) = r.target.split_once('?').unwrap_or((r.target, ""));
        let allowed = match path {
            "/pub" | "/mpub" => "POST",
            "/ping" => "GET",
            _ => return (404, None, Err("NOT_FOUND".into()), 0),
        };
        if r.method != allowed {
            let allow = if allowed == "POST" { "Allow: OPTIONS, POST" } else { "Allow: GET, OPTIONS" };
            return (405, Some(allow), Err("METHOD_NOT_ALLOWED".into()), 0);
        }
        if path == "/ping" {
            return (200, None, Ok("OK"), 0);
        }
        let body: std::borrow::Cow<'_, [u8]> =
            if r.chunked { http1::head::dechunk(r.body).into() } else { std::borrow::Cow::Borrowed(r.body) };
        let topic = query_value(query, "topic");
        let topic_error = match &topic {
            None => Some("MISSING_ARG_TOPIC"),
            Some(t) if !valid_topic(t.as_bytes()) => Some("INVALID_TOPIC"),
            Some(_) => None,
        };
        if path == "/pub" {
            if body.len() as u64 > self.limits.max_msg_size {
                return (413, None, Err("MSG_TOO_BIG".into()), 0);
            }
            if body.is_empty() {
                return (400, None, Err("MSG_EMPTY".into()), 0);
            }
            if let Some(e) = topic_error {
                return (400, None, Err(e.into()), 0);
            }
            if let Some(d) = query_value(query, "defer") {
                match d.parse::<i64>() {
                    Ok(ms) if (0..=MAX_REQ_TIMEOUT_MS).contains(&ms) => {}
                    _ => return (400, None, Err("INVALID_DEFER".into()), 0),
                }
            }
            return (200, None, Ok("OK"), 1);
        }
        // /mpub
        if body.len() as u64 > self.limits.max_body_size {
            return (413, None, Err("BODY_TOO_BIG".into()), 0);
        }
        if let Some(e) = topic_error {
            return (400, None, Err(e.into()), 0);
        }
        let binary = query_value(query, "binary")
            .is_some_and(|v| !matches!(v.as_str(), "false" | "0" | "f" | "F" | "FALSE" | "False"));
        if binary {
            return match parse_mpub_body(&body, self.limits, &mut MpubProgress::default()) {
                Ok(Some((_, n))) => (200, None, Ok("OK"), n),
                Ok(None) => (413, None, Err("BAD_MESSAGE".into()), 0),
                Err((code, _)) => (413, None, Err(code[2..].into()), 0),
            };
        }
        let mut count = 0;
        for line in body.split(|&b| b == b'\n').filter(|l| !l.is_empty()) {
            if line.len() as u64 > self.limits.max_msg_size {
                return (413, None, Err("MSG_TOO_BIG".into()), 0);
            }
            count += 1;
        }
        (200, None, Ok("OK"), count)
    }

    /// One answer; `request`: the request answered (`None` for a refused one: HTTP/1.1 and a
    /// close), for the status line's version and the `Connection` header, as Go writes them.
    fn respond(
        &self,
        status: u16,
        lead: Option<&str>,
        body: Result<&str, String>,
        request: Option<&Request<'_>>,
        out: &mut Vec<u8>,
    ) {
        let reason = match status {
            200 => "OK",
            400 => "Bad Request",
            404 => "Not Found",
            405 => "Method Not Allowed",
            413 => "Request Entity Too Large",
            _ => "Error",
        };
        let date = std::str::from_utf8(&self.date).unwrap_or_default();
        let mut w = ByteWriter(out);
        let minor = request.map_or(1, |r| r.minor_version);
        let _ = write!(w, "HTTP/1.{minor} {status} {reason}\r\n");
        if let Some(h) = lead {
            let _ = write!(w, "{h}\r\n");
        }
        // Go writes the handler's headers sorted, then Date, Content-Length, a sniffed
        // Content-Type and Connection.
        let text = match &body {
            Ok(text) => {
                let _ = write!(
                    w,
                    "X-Nsq-Content-Type: nsq; version=1.0\r\nDate: {date}\r\nContent-Length: {}\r\nContent-Type: text/plain; charset=utf-8\r\n",
                    text.len()
                );
                text.to_string()
            }
            Err(message) => {
                let json = format!("{{\"message\":\"{message}\"}}");
                let _ = write!(
                    w,
                    "Content-Type: application/json; charset=utf-8\r\nX-Nsq-Content-Type: nsq; version=1.0\r\nDate: {date}\r\nContent-Length: {}\r\n",
                    json.len()
                );
                json
            }
        };
        let connection = request.map_or(Some("Connection: close\r\n"), Request::connection_header);
        let _ = write!(w, "{}\r\n{text}", connection.unwrap_or_default());
    }
}

impl ServerCodec for NsqHttpServer {
    fn serve(&mut self, input: &[u8], out: &mut Vec<u8>) -> Served {
        let max_body = usize::try_from(self.limits.max_body_size).unwrap_or(usize::MAX).saturating_add(1);
        let limits = RequestLimits { max_head: GO_MAX_HEADER_BYTES, max_body };
        let mut messages = 0;
        let mut reader = std::mem::take(&mut self.reader);
        let mut served = http1::serve_requests(input, out, limits, &mut reader, |request, out| {
            match request {
            Ok(r) => {
                let (status, lead, body, n) = self.route(r);
                messages += n;
                if r.target.starts_with("/ping") && status == 200 {
                    // /ping is PlainText in nsqd: no X-Nsq-Content-Type.
                    let date = std::str::from_utf8(&self.date).unwrap_or_default();
                    let connection = r.connection_header().unwrap_or_default();
                    let minor = r.minor_version;
                    let _ = write!(ByteWriter(out), "HTTP/1.{minor} 200 OK\r\nDate: {date}\r\nContent-Length: 2\r\nContent-Type: text/plain; charset=utf-8\r\n{connection}\r\nOK");
                } else {
                    self.respond(status, lead, body, Some(r), out);
                }
            }
            Err(Refusal::BodyTooLarge) => self.respond(413, None, Err("MSG_TOO_BIG".into()), None, out),
            Err(Refusal::HeadTooLarge) => out.extend_from_slice(
                b"HTTP/1.1 431 Request Header Fields Too Large\r\nContent-Type: text/plain; charset=utf-8\r\nConnection: close\r\n\r\n431 Request Header Fields Too Large",
            ),
            Err(Refusal::BadRequest) => out.extend_from_slice(
                b"HTTP/1.1 400 Bad Request\r\nContent-Type: text/plain; charset=utf-8\r\nConnection: close\r\n\r\n400 Bad Request",
            ),
        }
        });
        self.reader = reader;
        served.messages = messages;
        served
    }

    fn ask(&self, question: Ask<'_>) {
        if let Ask::Busy(out) = question {
            out.extend_from_slice(http1::RESPONSE_BUSY);
        }
    }

    fn tell(&mut self, news: Tell<'_>) {
        if let Tell::UnixTime(secs) = news
            && secs != self.date_secs
        {
            self.date = http_date(secs);
            self.date_secs = secs;
        }
    }
}

/// The first value of `key` in a query string, decoded as Go's `url.ParseQuery` does.
fn query_value(query: &str, key: &str) -> Option<String> {
    form_urlencoded::parse(query.as_bytes()).find(|(k, _)| k == key).map(|(_, v)| v.into_owned())
}

/// `Mon, 30 Nov 2026 08:55:20 GMT` (IMF-fixdate, always 29 bytes) for Unix time `secs`.
pub fn http_date(secs: u64) -> [u8; 29] {
    let text = httpdate::fmt_http_date(std::time::UNIX_EPOCH + std::time::Duration::from_secs(secs));
    let mut out = [b' '; 29];
    out.copy_from_slice(&text.as_bytes()[..29]);
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::proto::Hooks as _;

    #[test]
    fn http_date_is_imf_fixdate() {
        assert_eq!(&http_date(0), b"Thu, 01 Jan 1970 00:00:00 GMT");
        assert_eq!(&http_date(1_796_028_920), b"Mon, 30 Nov 2026 08:55:20 GMT");
    }

    fn http_sink(input: &[u8]) -> Vec<u8> {
        let mut s = NsqHttpServer::new(SinkLimits::default());
        s.set_unix_time(1_796_028_920);
        let mut out = Vec::new();
        s.serve(input, &mut out);
        out
    }

    /// Byte-exact against what nsqd v1.3.0 answered on loopback (Date aside, same length).
    #[test]
    fn http_sink_answers_like_nsqd() {
        let body = vec![b'x'; 400];
        let req = [
            b"POST /pub?topic=test HTTP/1.1\r\nHost: 127.0.0.1:4151\r\nContent-Length: 400\r\n\r\n"
                .as_slice(),
            &body,
        ]
        .concat();
        let ok = b"HTTP/1.1 200 OK\r\nX-Nsq-Content-Type: nsq; version=1.0\r\nDate: Mon, 30 Nov 2026 08:55:20 GMT\r\nContent-Length: 2\r\nContent-Type: text/plain; charset=utf-8\r\n\r\nOK";
        assert_eq!(http_sink(&req), ok);
        assert_eq!(ok.len(), 156);
        assert_eq!(
            http_sink(b"POST /pub?topic=bad! HTTP/1.1\r\nHost: x\r\nContent-Length: 3\r\n\r\nabc"),
            b"HTTP/1.1 400 Bad Request\r\nContent-Type: application/json; charset=utf-8\r\nX-Nsq-Content-Type: nsq; version=1.0\r\nDate: Mon, 30 Nov 2026 08:55:20 GMT\r\nContent-Length: 27\r\n\r\n{\"message\":\"INVALID_TOPIC\"}"
        );
        assert_eq!(
            http_sink(b"GET /ping HTTP/1.1\r\nHost: x\r\n\r\n"),
            b"HTTP/1.1 200 OK\r\nDate: Mon, 30 Nov 2026 08:55:20 GMT\r\nContent-Length: 2\r\nContent-Type: text/plain; charset=utf-8\r\n\r\nOK"
        );
        assert_eq!(
            http_sink(b"GET /pub?topic=test HTTP/1.1\r\nHost: x\r\n\r\n"),
            b"HTTP/1.1 405 Method Not Allowed\r\nAllow: OPTIONS, POST\r\nContent-Type: application/json; charset=utf-8\r\nX-Nsq-Content-Type: nsq; version=1.0\r\nDate: Mon, 30 Nov 2026 08:55:20 GMT\r\nContent-Length: 32\r\n\r\n{\"message\":\"METHOD_NOT_ALLOWED\"}"
        );
        assert_eq!(
            http_sink(b"garbage\r\n\r\n"),
            b"HTTP/1.1 400 Bad Request\r\nContent-Type: text/plain; charset=utf-8\r\nConnection: close\r\n\r\n400 Bad Request"
        );
    }
}
