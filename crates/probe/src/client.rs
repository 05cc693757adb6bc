//! The subscriber side of the protocol: for loadgen, for `probe top --connect`, for tests.
//!
//! [`Subscriber::connect`] says `hello` and waits for `welcome`; [`Subscriber::next`] yields
//! records, gaps and clock estimates. To resume after a lost connection, connect again with
//! `Start::After { seq: last, instance }`: nothing is missed unless the probe's buffer evicted
//! it, and then a gap says exactly what; if the probe restarted meanwhile (another
//! [`Subscriber::instance`]), the stream starts with the new probe's oldest record.
//!
//! # Clock offset
//!
//! [`Subscriber::ping`] notes the local monotonic time `t0`; the probe answers with its own
//! clocks `p`; the answer arrives at `t1`. Assuming the two legs take equally long, the probe's
//! clock read `p` at local time `(t0 + t1) / 2`, so `offset = p − (t0 + t1) / 2`, uncertain by
//! at most half the round trip `t1 − t0`. [`ClockSync`] keeps the exchange with the shortest
//! round trip, whose estimate is the tightest.

use std::collections::HashMap;

use futures_util::{SinkExt, StreamExt};
use thiserror::Error;
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::net::{TcpStream, ToSocketAddrs};
use tokio_util::codec::Framed;

use crate::clock::{mono_ns, wall_ns};
use crate::protocol::{
    ClientCodec, ClientMessage, FrameError, ProbeMessage, Record, Start, VERSION,
};
use crate::sample::HostInfo;
use crate::tls::ClientTls;

/// Why subscribing failed.
#[derive(Debug, Error)]
pub enum ClientError {
    #[error("cannot connect to the probe at {addr}: {source}; is `probe serve` running there?")]
    Connect {
        addr: String,
        #[source]
        source: std::io::Error,
    },
    #[error("TLS with the probe at {addr} failed: {reason}")]
    Tls { addr: String, reason: String },
    #[error("the probe refused the subscription: {0}")]
    Refused(String),
    #[error("the probe broke the protocol: {0}")]
    Protocol(String),
    #[error("the connection to the probe failed: {0}")]
    Frame(#[from] FrameError),
    #[error("the probe closed the connection")]
    Closed,
    #[error("the probe at {addr} did not answer within {secs} s: is it frozen, or does a firewall drop the packets?")]
    TimedOut { addr: String, secs: u64 },
}

/// How long connecting, the TLS handshake and the hello may take before the probe counts as
/// unreachable: a frozen probe or a link that drops packets must not hang its subscriber.
pub const CONNECT_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(5);

/// One clock comparison with the probe.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ClockSample {
    /// Round trip of the ping, ns.
    pub rtt_ns: u64,
    /// Probe monotonic clock minus ours, ns.
    pub mono_offset_ns: i64,
    /// Probe wall clock minus ours, ns.
    pub wall_offset_ns: i64,
}

/// The best clock estimate so far: the sample with the shortest round trip.
#[derive(Debug, Clone, Default)]
pub struct ClockSync {
    best: Option<ClockSample>,
    samples: u32,
}

impl ClockSync {
    pub fn add(&mut self, sample: ClockSample) {
        self.samples += 1;
        if self.best.is_none_or(|b| sample.rtt_ns < b.rtt_ns) {
            self.best = Some(sample);
        }
    }

    /// The estimate, with its uncertainty (half the round trip).
    pub fn best(&self) -> Option<ClockSample> {
        self.best
    }

    pub fn samples(&self) -> u32 {
        self.samples
    }
}

/// What the probe sends after `welcome`.
#[derive(Debug, Clone, PartialEq)]
pub enum Incoming {
    Record {
        seq: u64,
        record: Record,
    },
    /// Records `from..=to` were lost (evicted from the probe's buffer).
    Gap {
        from: u64,
        to: u64,
    },
    /// The answer to a ping, already folded into [`Subscriber::clock`].
    Pong(ClockSample),
}

/// The connection under a subscription: plain TCP or TLS.
pub trait Connection: AsyncRead + AsyncWrite + Unpin + Send + std::fmt::Debug {}
impl<T: AsyncRead + AsyncWrite + Unpin + Send + std::fmt::Debug> Connection for T {}

/// A subscription to a probe.
#[derive(Debug)]
pub struct Subscriber {
    framed: Framed<Box<dyn Connection>, ClientCodec>,
    pub host: HostInfo,
    /// The oldest and next sequence numbers the probe held at connection.
    pub oldest_seq: u64,
    pub next_seq: u64,
    /// The probe's instance: its records' numbers count within it (see [`Start::After`]).
    pub instance: u64,
    pings: HashMap<u64, (u64, u64)>,
    next_ping: u64,
    clock: ClockSync,
}

impl Subscriber {
    /// Connects over plain TCP, says hello and waits for the welcome.
    pub async fn connect(
        addr: impl ToSocketAddrs + std::fmt::Display,
        token: Option<&str>,
        start: Start,
        client: &str,
    ) -> Result<Self, ClientError> {
        Self::connect_with(addr, token, None, start, client).await
    }

    /// Connects (over TLS when `tls` is given: the handshake first, then the hello and its
    /// token inside it), says hello and waits for the welcome.
    pub async fn connect_with(
        addr: impl ToSocketAddrs + std::fmt::Display,
        token: Option<&str>,
        tls: Option<&ClientTls>,
        start: Start,
        client: &str,
    ) -> Result<Self, ClientError> {
        let shown = addr.to_string();
        tokio::time::timeout(
            CONNECT_TIMEOUT,
            Self::connect_now(addr, token, tls, start, client),
        )
        .await
        .unwrap_or(Err(ClientError::TimedOut {
            addr: shown,
            secs: CONNECT_TIMEOUT.as_secs(),
        }))
    }

    async fn connect_now(
        addr: impl ToSocketAddrs + std::fmt::Display,
        token: Option<&str>,
        tls: Option<&ClientTls>,
        start: Start,
        client: &str,
    ) -> Result<Self, ClientError> {
        let stream = TcpStream::connect(&addr)
            .await
            .map_err(|source| ClientError::Connect {
                addr: addr.to_string(),
                source,
            })?;
        let _ = stream.set_nodelay(true);
        let stream: Box<dyn Connection> = match tls {
            None => Box::new(stream),
            Some(tls) => {
                let text = addr.to_string();
                Self::tls_handshake(stream, &text, tls).await?
            }
        };
        Self::hello(
            Framed::new(stream, ClientCodec::default()),
            token,
            start,
            client,
        )
        .await
    }

    /// The TLS handshake with the probe at `addr` (as `host:port`) over `stream`.
    async fn tls_handshake(
        stream: TcpStream,
        addr: &str,
        tls: &ClientTls,
    ) -> Result<Box<dyn Connection>, ClientError> {
        let tls_error = |reason: String| ClientError::Tls {
            addr: addr.to_string(),
            reason,
        };
        let host = addr.rsplit_once(':').map_or(addr, |(h, _)| h);
        let name = ClientTls::server_name(host).map_err(|e| tls_error(e.to_string()))?;
        let connector = tokio_rustls::TlsConnector::from(tls.config.clone());
        let stream = connector.connect(name, stream).await.map_err(|e| {
            tls_error(match e.get_ref().map(|inner| inner.to_string()) {
                Some(inner) if !inner.is_empty() => inner,
                _ => format!(
                    "{e}; does the probe run with TLS (probe serve --tls-cert or --tls-generate)?"
                ),
            })
        })?;
        Ok(Box::new(stream))
    }

    /// Says hello over `framed` and waits for the welcome.
    async fn hello(
        mut framed: Framed<Box<dyn Connection>, ClientCodec>,
        token: Option<&str>,
        start: Start,
        client: &str,
    ) -> Result<Self, ClientError> {
        framed
            .send(ClientMessage::Hello {
                version: VERSION,
                client: client.to_string(),
                token: token.map(str::to_string),
                start,
            })
            .await?;
        match framed.next().await {
            Some(Ok(ProbeMessage::Welcome {
                version,
                host,
                oldest_seq,
                next_seq,
                instance,
            })) if version == VERSION => Ok(Subscriber {
                framed,
                host: *host,
                oldest_seq,
                next_seq,
                instance,
                pings: HashMap::new(),
                next_ping: 0,
                clock: ClockSync::default(),
            }),
            Some(Ok(ProbeMessage::Welcome { version, .. })) => Err(ClientError::Protocol(format!(
                "the probe speaks protocol version {version}, this client {VERSION}"
            ))),
            Some(Ok(ProbeMessage::Refused { reason })) => Err(ClientError::Refused(reason)),
            Some(Ok(other)) => Err(ClientError::Protocol(format!(
                "expected welcome, got {other:?}"
            ))),
            Some(Err(e)) => Err(e.into()),
            None => Err(ClientError::Closed),
        }
    }

    /// Sends a ping; its pong comes back through [`Subscriber::next`].
    pub async fn ping(&mut self) -> Result<(), ClientError> {
        let id = self.next_ping;
        self.next_ping += 1;
        self.pings.insert(id, (mono_ns(), wall_ns()));
        self.framed.send(ClientMessage::Ping { id }).await?;
        Ok(())
    }

    /// The next record, gap or pong; `None` when the probe closed the connection.
    pub async fn next(&mut self) -> Result<Option<Incoming>, ClientError> {
        let Some(message) = self.framed.next().await else {
            return Ok(None);
        };
        match message? {
            ProbeMessage::Record { seq, record } => Ok(Some(Incoming::Record { seq, record })),
            ProbeMessage::Gap { from_seq, to_seq } => Ok(Some(Incoming::Gap {
                from: from_seq,
                to: to_seq,
            })),
            ProbeMessage::Pong {
                id,
                mono_ns: probe_mono,
                wall_ns: probe_wall,
            } => {
                let (t0, w0) = self
                    .pings
                    .remove(&id)
                    .ok_or_else(|| ClientError::Protocol(format!("pong for unknown ping {id}")))?;
                let (t1, w1) = (mono_ns(), wall_ns());
                let sample = ClockSample {
                    rtt_ns: t1.saturating_sub(t0),
                    mono_offset_ns: probe_mono as i64 - ((t0 as i128 + t1 as i128) / 2) as i64,
                    wall_offset_ns: probe_wall as i64 - ((w0 as i128 + w1 as i128) / 2) as i64,
                };
                self.clock.add(sample);
                Ok(Some(Incoming::Pong(sample)))
            }
            ProbeMessage::Refused { reason } => Err(ClientError::Refused(reason)),
            ProbeMessage::Welcome { .. } => Err(ClientError::Protocol("a second welcome".into())),
        }
    }

    pub fn clock(&self) -> &ClockSync {
        &self.clock
    }

    /// Ends the subscription politely.
    pub async fn bye(mut self) -> Result<(), ClientError> {
        self.framed.send(ClientMessage::Bye).await?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_shortest_round_trip_wins() {
        let mut c = ClockSync::default();
        for (rtt, off) in [(900, 10), (200, 55), (400, 70)] {
            c.add(ClockSample {
                rtt_ns: rtt,
                mono_offset_ns: off,
                wall_offset_ns: off,
            });
        }
        assert_eq!(c.best().map(|b| b.mono_offset_ns), Some(55));
        assert_eq!(c.samples(), 3);
    }
}
