//! The floor's one piece of framing: the client's set-up, 8 bytes once per connection — the
//! request's size and the response's, each a 32-bit big-endian number — so that `serve tcp`
//! needs no flags and one server answers every client however it is sized. Everything after
//! it is the operations' bytes and nothing else: a request of exactly the first size, a
//! response of exactly the second (netperf's `TCP_RR`, neper's `tcp_rr`, whose sizes travel on
//! a control connection beside the data instead).

/// The set-up's length.
pub const HELLO_LEN: usize = 8;
/// The largest request or response either side takes (16 MiB): past it a set-up is refused,
/// so a server never writes more than this for one request read.
pub const MAX_MESSAGE: u32 = 16 << 20;

/// The sizes one connection's operations carry.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Sizes {
    pub request: u32,
    pub response: u32,
}

impl Sizes {
    /// The set-up that announces them.
    pub fn hello(self) -> [u8; HELLO_LEN] {
        let mut out = [0; HELLO_LEN];
        out[..4].copy_from_slice(&self.request.to_be_bytes());
        out[4..].copy_from_slice(&self.response.to_be_bytes());
        out
    }

    /// The sizes a set-up announces, if both are within 1 ..= [`MAX_MESSAGE`] bytes.
    pub fn of_hello(hello: &[u8; HELLO_LEN]) -> Option<Sizes> {
        let request = u32::from_be_bytes([hello[0], hello[1], hello[2], hello[3]]);
        let response = u32::from_be_bytes([hello[4], hello[5], hello[6], hello[7]]);
        let fits = |n: u32| (1..=MAX_MESSAGE).contains(&n);
        (fits(request) && fits(response)).then_some(Sizes { request, response })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_hello_is_the_two_sizes_big_endian() {
        let sizes = Sizes { request: 400, response: 1 };
        assert_eq!(sizes.hello(), [0, 0, 1, 0x90, 0, 0, 0, 1]);
        assert_eq!(Sizes::of_hello(&sizes.hello()), Some(sizes));
    }

    #[test]
    fn sizes_of_zero_or_past_the_limit_are_refused() {
        assert_eq!(Sizes::of_hello(&[0, 0, 0, 0, 0, 0, 0, 1]), None);
        assert_eq!(Sizes::of_hello(&[0, 0, 0, 1, 0, 0, 0, 0]), None);
        assert_eq!(Sizes::of_hello(&Sizes { request: MAX_MESSAGE + 1, response: 1 }.hello()), None);
        assert!(Sizes::of_hello(&Sizes { request: MAX_MESSAGE, response: MAX_MESSAGE }.hello()).is_some());
    }
}
