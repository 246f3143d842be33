//! What carries a connection's protocol bytes: the socket itself, or a TLS session over it
//! ([`crate::tls::ClientSession`]). Bytes to send are sealed into records in their place,
//! bytes received are opened, and every byte is counted on both layers — the wire's, and the
//! plaintext inside by the same classes — with TLS's own records (the handshake, tickets,
//! alerts) a class of their own.

use super::send::SendQueue;
use crate::clock::Instant;
use crate::recv::RecvBuf;
use crate::stats::{CoreRecorder, Traffic};
use crate::tls::options::{ClientTls, TlsStart};
use crate::tls::{Carried, ClientSession, Opened, SessionError};
use std::sync::Arc;

/// The socket's bytes as they are, or in TLS records.
#[derive(Default)]
pub struct Carrier {
    /// TLS with this target (`None`: plaintext), and the current socket's session.
    tls: Option<Arc<ClientTls>>,
    session: Option<Box<ClientSession>>,
}

impl Carrier {
    #[inline]
    pub fn new(tls: Option<Arc<ClientTls>>) -> Carrier {
        Carrier { tls, session: None }
    }

    /// TLS starts at the connect (`https://`), not when the protocol asks (`tls_v1`).
    #[inline]
    pub fn at_connect(&self) -> bool {
        self.tls.as_ref().is_some_and(|t| t.start == TlsStart::AtConnect)
    }

    /// The current socket speaks TLS.
    #[inline]
    pub fn active(&self) -> bool {
        self.session.is_some()
    }

    /// TLS's handshake is under way.
    #[inline]
    pub fn handshaking(&self) -> bool {
        self.session.as_ref().is_some_and(|s| s.conn.is_handshaking())
    }

    /// Start TLS on this socket (its ClientHello is then flushed).
    #[inline]
    pub fn start(&mut self, now: Instant) -> Result<(), String> {
        let Some(tls) = &self.tls else {
            return Err("the protocol asked for TLS, and the URL set up none".into());
        };
        self.session = Some(Box::new(ClientSession::new(tls, now).map_err(|e| e.to_string())?));
        Ok(())
    }

    /// The socket is gone: its session too. Returns the wire bytes it held unconsumed.
    #[inline]
    pub fn end(&mut self) -> Option<u64> {
        self.session.take().map(|mut s| s.leftover())
    }

    /// Where the socket's bytes land: the session's ciphertext buffer, or the protocol's.
    #[inline]
    pub fn in_buf<'a>(&'a mut self, plain: &'a mut RecvBuf) -> &'a mut RecvBuf {
        match &mut self.session {
            Some(session) => &mut session.wire_in,
            None => plain,
        }
    }

    /// Ciphertext arrived: open whole records into `plain`; TLS's own bytes counted.
    #[inline]
    pub fn received(
        &mut self,
        plain: &mut RecvBuf,
        rec: &mut CoreRecorder,
    ) -> Option<Result<Opened, SessionError>> {
        let session = self.session.as_mut()?;
        Some(session.received(plain).inspect(|opened| {
            rec.rx.add(Traffic::Tls, opened.tls_bytes);
            rec.tls.records_rx.add(Traffic::Tls, opened.tls_records);
        }))
    }

    /// The bytes appended to `send` from `from` on are plaintext of class `traffic` (and
    /// operation `op`'s, by its place in the ledger): with TLS, sealed into records in their
    /// place (plaintext and records counted). Returns their length on the wire.
    #[inline]
    pub fn seal(
        &mut self,
        send: &mut SendQueue,
        from: usize,
        (traffic, op): (Traffic, Option<u64>),
        rec: &mut CoreRecorder,
    ) -> u64 {
        let plain = send.len() - from;
        if plain == 0 {
            return 0;
        }
        if let Some(session) = &mut self.session
            && !session.conn.is_handshaking()
        {
            let records = session.seal_tail(send.buf(), from);
            rec.tls.plain_tx.add(traffic, plain as u64);
            rec.tls.records_tx.add(traffic, records);
        }
        send.tag(from, traffic, op)
    }

    /// Queue what the TLS session has to send (handshake messages, alerts) as `tls` bytes.
    #[inline]
    pub fn flush(&mut self, send: &mut SendQueue, rec: &mut CoreRecorder) {
        if let Some(session) = &mut self.session {
            let from = send.len();
            let records = crate::tls::flush(&mut session.conn, send.buf());
            let len = (send.len() - from) as u64;
            if session.in_handshake {
                session.handshake_tx += len;
            }
            rec.tls.records_tx.add(Traffic::Tls, records);
            send.tag(from, Traffic::Tls, None);
        }
    }

    /// TLS's goodbye (`close_notify`), queued.
    #[inline]
    pub fn goodbye(&mut self, send: &mut SendQueue, rec: &mut CoreRecorder) {
        if let Some(session) = &mut self.session {
            session.conn.send_close_notify();
            self.flush(send, rec);
        }
    }

    /// The handshake is over: counted (full or resumed, with its bytes). Returns when it began.
    #[inline]
    pub fn established(&mut self, rec: &mut CoreRecorder) -> Option<Instant> {
        let session = self.session.as_mut()?;
        session.in_handshake = false;
        let kind = match session.conn.handshake_kind() {
            Some(rustls::HandshakeKind::Resumed) => &mut rec.tls.resumed,
            _ => &mut rec.tls.full,
        };
        kind.count += 1;
        kind.tx += session.handshake_tx;
        kind.rx += session.handshake_rx;
        Some(session.started)
    }

    /// The wire bytes that carried `plain` consumed bytes.
    #[inline]
    pub fn carried(&mut self, plain: usize) -> Carried {
        match &mut self.session {
            Some(session) => session.carried(plain),
            None => Carried { wire: plain as u64, plain: plain as u64, records: 0 },
        }
    }

    /// Count received bytes the protocol consumed as `traffic` (wire, and with TLS plaintext
    /// and records).
    #[inline]
    pub fn count_rx(&self, traffic: Traffic, c: Carried, rec: &mut CoreRecorder) {
        rec.rx.add(traffic, c.wire);
        if self.session.is_some() {
            rec.tls.plain_rx.add(traffic, c.plain);
            rec.tls.records_rx.add(traffic, c.records);
        }
    }

    /// An idle connection gives its ciphertext buffer back.
    #[inline]
    pub fn release(&mut self) {
        if let Some(session) = &mut self.session {
            session.wire_in.release();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Without TLS the wire is the plaintext: consumed bytes carried by themselves, no record.
    #[test]
    fn plaintext_is_carried_by_itself() {
        let mut c = Carrier::new(None);
        assert!(!c.active() && !c.at_connect() && !c.handshaking());
        assert_eq!(c.carried(42), Carried { wire: 42, plain: 42, records: 0 });
        let mut send = SendQueue::default();
        let mut rec = CoreRecorder::new(0);
        send.buf().extend_from_slice(b"GET");
        assert_eq!(c.seal(&mut send, 0, (Traffic::Op, Some(0)), &mut rec), 3);
        assert_eq!(rec.tls.plain_tx.total(), 0, "no plaintext apart without TLS");
        assert!(c.start(Instant::now()).is_err(), "TLS asked for where the URL set up none");
    }
}
