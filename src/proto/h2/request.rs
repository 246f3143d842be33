//! A request as HTTP/2 and HTTP/3 send it: what the file or the flags give ([`RequestSpec`]),
//! made once into its header fields in the order they go and its body ([`Request`]) — both
//! protocols forbid the connection-specific headers and carry `:authority` for `Host`.

/// Headers HTTP/2 forbids (RFC 9113 §8.2.2); `host` becomes `:authority`.
const CONNECTION_SPECIFIC: [&str; 6] =
    ["connection", "keep-alive", "proxy-connection", "transfer-encoding", "upgrade", "host"];

/// One request as the file or the flags give it.
#[derive(Debug, Clone)]
pub struct RequestSpec {
    pub method: String,
    /// `:scheme`: `http` for `h2c://`, `https` over TLS.
    pub scheme: &'static str,
    /// `:authority`: the URL's, or a `Host` header's.
    pub authority: String,
    pub path: String,
    /// Extra headers, in order (names lower-cased here; connection-specific ones dropped).
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
    /// A gRPC call: `body` is its length-prefixed message, `content-type: application/grpc`
    /// and `te: trailers` go with it, no `content-length`, and the answer succeeds on
    /// `grpc-status: 0` in its trailers.
    pub grpc: bool,
}

impl RequestSpec {
    /// A request of `method` on `/` of `authority`, with no extra headers: the fuzz targets'
    /// and the HTTP/3 tests' (an `https` scheme, as HTTP/3 always is).
    pub fn plain(method: &str, scheme: &'static str, authority: &str, body: Vec<u8>) -> RequestSpec {
        RequestSpec {
            method: method.into(),
            scheme,
            authority: authority.into(),
            path: "/".into(),
            headers: vec![],
            body,
            grpc: false,
        }
    }
}

/// A header field: its name and value.
pub(crate) type Field = (Box<[u8]>, Box<[u8]>);

/// A request's header fields, in the order they go, and its body: HTTP/2's and HTTP/3's alike
/// (both forbid the connection-specific headers and carry `:authority` for `Host`).
#[derive(Debug, Clone)]
pub(crate) struct Request {
    pub(crate) fields: Vec<Field>,
    pub(crate) body: Box<[u8]>,
}

impl Request {
    pub(crate) fn new(spec: &RequestSpec) -> Request {
        let authority = (spec.headers.iter().find(|(n, _)| n.eq_ignore_ascii_case("host")))
            .map_or(spec.authority.as_str(), |(_, v)| v.as_str());
        let mut fields: Vec<(String, String)> = vec![
            (":method".into(), spec.method.to_ascii_uppercase()),
            (":scheme".into(), spec.scheme.into()),
            (":authority".into(), authority.into()),
            (":path".into(), spec.path.clone()),
        ];
        for (name, value) in &spec.headers {
            let name = name.to_ascii_lowercase();
            // gRPC's own content-type and te go below, once.
            let grpc_own = spec.grpc && (name == "content-type" || name == "te");
            // `te` may only say `trailers` (§8.2.2): any other is dropped as `connection` is.
            let bad_te = name == "te" && !value.trim().eq_ignore_ascii_case("trailers");
            if !CONNECTION_SPECIFIC.contains(&name.as_str())
                && name != "content-length"
                && !grpc_own
                && !bad_te
            {
                fields.push((name, value.clone()));
            }
        }
        if spec.grpc {
            fields.push(("content-type".into(), "application/grpc".into()));
            fields.push(("te".into(), "trailers".into()));
        } else if !spec.body.is_empty() {
            fields.push(("content-length".into(), spec.body.len().to_string()));
        }
        let fields =
            fields.into_iter().map(|(n, v)| (n.into_bytes().into(), v.into_bytes().into())).collect();
        Request { fields, body: spec.body.clone().into() }
    }
}
