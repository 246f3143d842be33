//! gRPC unary calls over HTTP/2: `grpc://HOST:PORT/package.Service/Method` (cleartext, prior
//! knowledge) and `grpcs://` (TLS, agreed by ALPN `h2`). An operation is one call: its request
//! is the payload (`--size`, `--body-file`, or a `--requests` entry's body) sent as one
//! uncompressed length-prefixed message, with `content-type: application/grpc` and
//! `te: trailers`; it succeeds when the answer's trailers say `grpc-status: 0`, and any other
//! status fails it as `status`, counted by name (`grpc UNAVAILABLE: 3`). The HTTP/2 client
//! ([`super::client`]) carries it: the calls are its streams.

use crate::plan::{CompareRow, Drive, LoadPlan, Prepared, Protocol, Scheme};

/// The path `compare` calls on the built-in server (which echoes any method).
pub const ECHO_PATH: &str = "/wirebench.Echo/Unary";

/// A call's `grpc-status`, by name, as its answer (`OK` is the success).
pub const fn answer(code: &'static str) -> crate::outcome::Answer {
    let ok = matches!(code.as_bytes(), b"OK");
    crate::outcome::Answer::new("grpc", crate::outcome::Code::Name(code), ok)
}

/// A call answered with a status other than `OK` (or none), counted as `status`.
pub const fn failure(code: &'static str) -> crate::outcome::Failure {
    use crate::outcome::{Code, ErrorClass, Failure};
    Failure::new(ErrorClass::Status, "grpc", Code::Name(code))
}

pub static PROTOCOL: Protocol = Protocol {
    name: "grpc",
    schemes: &[
        Scheme { name: "grpc", default_port: 50051, tls: None, datagrams: false },
        Scheme {
            name: "grpcs",
            default_port: 443,
            tls: Some(crate::tls::options::TlsStart::AtConnect),
            datagrams: false,
        },
    ],
    default_payload: 0,
    validate,
    check_payload: super::any_payload,
    messages_per_op: crate::plan::one_message,
    compare_rows,
    option_groups: &["h2-options"],
    http_method: None,
    alpn: Some((b"h2", true)),
    recognize: crate::plan::recognizes_none,
};

/// A call names its method: `/package.Service/Method`.
fn validate(plan: &LoadPlan) -> anyhow::Result<()> {
    let path = &plan.target.path;
    let mut parts = path.strip_prefix('/').unwrap_or_default().split('/');
    match (parts.next(), parts.next(), parts.next()) {
        (Some(service), Some(method), None) if !service.is_empty() && !method.is_empty() => Ok(()),
        _ => anyhow::bail!(
            "{}: a gRPC URL names the method it calls, e.g. grpc://127.0.0.1:50051/package.Service/Method",
            plan.target.url
        ),
    }
}

/// The message as gRPC frames it: uncompressed, its length (32 bits big-endian: a message
/// is at most `plan::MAX_PAYLOAD`), itself.
pub fn framed(message: &[u8]) -> Vec<u8> {
    [&[0][..], &(message.len() as u32).to_be_bytes(), message].concat()
}

/// Build its client for each target and have `D` drive it.
pub fn run<D: Drive>(p: &Prepared) -> anyhow::Result<crate::stats::Report> {
    D::drive(p, |p| super::client_for(p, "POST".into(), framed(&p.body), true))
}

/// One row: a unary call the built-in server echoes (its payload crosses twice).
fn compare_rows(plan: &LoadPlan) -> Vec<CompareRow> {
    vec![CompareRow {
        label: "gRPC unary".into(),
        plan: plan.clone(),
        payload_crossings: 2,
        versus: None,
        floor: false,
    }]
}
