//! What breaks an HTTP/2 connection from the client's side: its errors, each named as RFC 9113
//! names the connection error it is.

use super::super::{frame, hpack};
use crate::proto::CodecError;

/// What can break an HTTP/2 connection from this side's view.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum Error {
    #[error(transparent)]
    Frame(#[from] frame::Error),
    #[error("HTTP/2 COMPRESSION_ERROR: {0}")]
    Hpack(#[from] hpack::Error),
    #[error("HTTP/2 PROTOCOL_ERROR: PUSH_PROMISE, with push disabled")]
    Push,
    #[error("HTTP/2 PROTOCOL_ERROR: {0} while a header block awaited its CONTINUATION")]
    Interleaved(&'static str),
    #[error("HTTP/2 PROTOCOL_ERROR: CONTINUATION without a header block to continue")]
    StrayContinuation,
    #[error("HTTP/2 PROTOCOL_ERROR: a response without a valid :status")]
    NoStatus,
    #[error("HTTP/2 FLOW_CONTROL_ERROR: the server sent more DATA than its window")]
    FlowControl,
    #[error("HTTP/2 PROTOCOL_ERROR: DATA before a response's final HEADERS")]
    DataBeforeHeaders,
    #[error("HTTP/2 FLOW_CONTROL_ERROR: the server's WINDOW_UPDATE or SETTINGS took a window past 2^31-1")]
    WindowOverflow,
    #[error("HTTP/2 PROTOCOL_ERROR: {0} on stream {1}, which this side never opened")]
    IdleStream(&'static str, u32),
    /// A GOAWAY with an error code: the server ends the connection for a reason (its debug
    /// data, if any, is the codec's [`error_detail`](ClientCodec::error_detail)).
    #[error("HTTP/2 GOAWAY {0} from the server")]
    GoAway(&'static str),
    #[error("HTTP/2 PROTOCOL_ERROR: SETTINGS_ENABLE_PUSH 1 from a server (§6.5.2)")]
    PushEnabled,
    #[error("HTTP/2 PROTOCOL_ERROR: {0} before the server's SETTINGS (its preface, §3.4)")]
    NoSettingsFirst(&'static str),
}

impl CodecError for Error {}

impl From<frame::BlockError> for Error {
    fn from(e: frame::BlockError) -> Error {
        match e {
            frame::BlockError::Interleaved(kind) => Error::Interleaved(kind),
            frame::BlockError::Stray => Error::StrayContinuation,
            frame::BlockError::TooLarge => Error::Hpack(hpack::Error::TooLarge),
        }
    }
}
