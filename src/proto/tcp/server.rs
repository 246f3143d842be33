//! `serve tcp`: reads a client's set-up (the two sizes), then answers every request of the
//! first size with a response of the second (its bytes `x`), counting each as a request.
//!
//! Bounds, besides the engine's head, idle and write timeouts and `--max-conns`: sizes past
//! [`MAX_MESSAGE`] (16 MiB) close the connection at the set-up; one look at the input writes
//! answers until they pass [`OUT_AT_ONCE`] (64 MiB: at most that plus one answer, 80 MiB) and
//! leaves the rest of the input for later, so a client pipelining small requests for large
//! answers without reading them makes it hold no more than that. The floor's client keeps its
//! depth × response within it (`validate`): the engines look at what is left when more bytes
//! arrive (and the `uring` engine once the answers are written), and a request left past the
//! bound by a client that then waits would wait for its timeout.

use super::wire::{HELLO_LEN, MAX_MESSAGE, Sizes};
use crate::proto::{Awaiting, Served, ServerCodec};

/// The answer bytes after which one look at the input stops answering.
pub const OUT_AT_ONCE: usize = 64 << 20;

#[derive(Debug, Clone, Default)]
pub struct TcpServer {
    sizes: Option<Sizes>,
    /// Bytes of the current request read so far.
    have: usize,
}

impl ServerCodec for TcpServer {
    fn serve(&mut self, input: &[u8], out: &mut Vec<u8>) -> Served {
        let mut served = Served::default();
        let sizes = match self.sizes {
            Some(sizes) => sizes,
            None => {
                let Some(hello) = input.first_chunk::<HELLO_LEN>() else {
                    served.awaiting = if input.is_empty() { Awaiting::Request } else { Awaiting::Head };
                    return served;
                };
                let Some(sizes) = Sizes::of_hello(hello) else {
                    // Not a floor client, or sizes of 0 or past MAX_MESSAGE: nothing to answer.
                    served.consumed = input.len();
                    served.close = true;
                    return served;
                };
                served.consumed = HELLO_LEN;
                *self.sizes.insert(sizes)
            }
        };
        let (request, response) = (sizes.request as usize, sizes.response as usize);
        let start = out.len();
        // Bounded: each turn uses input, or ends.
        while served.consumed < input.len() && out.len() - start < OUT_AT_ONCE {
            let n = (request - self.have).min(input.len() - served.consumed);
            served.consumed += n;
            self.have += n;
            if self.have == request {
                self.have = 0;
                out.resize(out.len() + response, b'x');
                served.requests += 1;
            }
        }
        served.awaiting = if self.have == 0 { Awaiting::Request } else { Awaiting::Body };
        debug_assert!(response <= MAX_MESSAGE as usize);
        served
    }
}
