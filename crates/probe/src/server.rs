//! `probe serve`: streams the buffer to subscribers over TCP.
//!
//! Each connection is one task: it reads the `hello`, checks version and token, answers
//! `welcome`, then sends records from the subscriber's cursor as they arrive, a `gap` if the
//! buffer evicted some before they could be sent, and a `pong` for every `ping` (see
//! `protocol.rs`). A slow subscriber only slows itself. A subscriber slot is taken only once a
//! client has proved its token, so clients that have not (a TLS handshake, a hello on its way,
//! a wrong token waiting for its answer) cannot keep loadgen out: they are capped apart
//! (`max_pending`, and [`PENDING_PER_ADDRESS`] from one address), and a connection beyond the
//! cap is closed at once. A wrong token is logged and answered only after a delay that doubles
//! with each failure from the same address (up to 30 s); accept errors (out of FDs) back off
//! instead of spinning.
//!
//! With TLS, the handshake comes first and the `hello` (with its token) travels inside it. A
//! client that speaks plain TCP to a TLS probe is told so in a plain frame (its first byte is a
//! length prefix, never a TLS handshake record) and disconnected.

use std::collections::HashMap;
use std::future::Future;
use std::net::{IpAddr, SocketAddr};
use std::ops::ControlFlow;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use futures_util::{SinkExt, StreamExt};
use subtle::ConstantTimeEq;
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::Semaphore;
use tokio_util::codec::Framed;

use crate::buffer::{Read, SharedBuffer};
use crate::clock::{mono_ns, wall_ns};
use crate::protocol::{
    ClientMessage, Encoded, FrameError, ProbeCodec, ProbeMessage, Start, VERSION,
};
use crate::sample::HostInfo;

/// How the server behaves.
#[derive(Debug, Clone)]
pub struct ServeConfig {
    /// Required in `hello` when set.
    pub token: Option<String>,
    pub max_subscribers: usize,
    /// Connections not yet authenticated (TLS handshake, hello, a wrong token's delay).
    pub max_pending: usize,
    pub max_frame: usize,
    /// A subscriber must say `hello` within this time.
    pub hello_timeout: Duration,
    /// Added to the times in `pong` (tests only: a probe whose clock is off, on purpose).
    pub clock_shift_ns: i64,
    /// TLS: every subscriber must handshake first.
    pub tls: Option<Arc<rustls::ServerConfig>>,
}

impl Default for ServeConfig {
    fn default() -> Self {
        ServeConfig {
            token: None,
            max_subscribers: 16,
            max_pending: 64,
            max_frame: crate::protocol::MAX_FRAME,
            hello_timeout: Duration::from_secs(5),
            clock_shift_ns: 0,
            tls: None,
        }
    }
}

/// Failed token attempts per address, to slow down guessing.
#[derive(Debug, Default)]
struct Failures(Mutex<HashMap<IpAddr, (u32, Instant)>>);

/// The most addresses [`Failures`] remembers: past it, those quiet for ten minutes are
/// forgotten, and while it is still full a new address waits the longest delay (an attacker
/// with many addresses fills it; the probe's memory does not grow with them).
const MAX_FAILING_ADDRESSES: usize = 4096;

impl Failures {
    /// Records a failure and returns how long to wait before answering it.
    fn delay(&self, ip: IpAddr) -> Duration {
        let longest = Duration::from_secs(30);
        let mut map = self.0.lock().unwrap_or_else(|e| e.into_inner());
        if map.len() >= MAX_FAILING_ADDRESSES && !map.contains_key(&ip) {
            map.retain(|_, (_, at)| at.elapsed() <= Duration::from_secs(600));
            if map.len() >= MAX_FAILING_ADDRESSES {
                return longest;
            }
        }
        let entry = map.entry(ip).or_insert((0, Instant::now()));
        // Forget failures older than ten minutes.
        if entry.1.elapsed() > Duration::from_secs(600) {
            entry.0 = 0;
        }
        entry.0 = entry.0.saturating_add(1);
        entry.1 = Instant::now();
        Duration::from_millis(250u64.saturating_mul(1 << entry.0.min(7))).min(longest)
    }
}

/// The most connections one address may have waiting to authenticate.
pub const PENDING_PER_ADDRESS: usize = 8;

/// Connections that have not authenticated yet, in all and per address.
#[derive(Debug)]
struct Pending {
    all: Arc<Semaphore>,
    by_address: Arc<Mutex<HashMap<IpAddr, usize>>>,
}

/// One connection's place among the pending ones, given back when dropped.
#[derive(Debug)]
struct PendingSlot {
    _permit: tokio::sync::OwnedSemaphorePermit,
    ip: IpAddr,
    by_address: Arc<Mutex<HashMap<IpAddr, usize>>>,
}

impl Pending {
    fn new(max: usize) -> Self {
        Pending {
            all: Arc::new(Semaphore::new(max.max(1))),
            by_address: Arc::default(),
        }
    }

    /// A place for a connection from `ip`, if the caps allow it.
    fn take(&self, ip: IpAddr) -> Option<PendingSlot> {
        let permit = self.all.clone().try_acquire_owned().ok()?;
        let mut map = self.by_address.lock().unwrap_or_else(|e| e.into_inner());
        let count = map.entry(ip).or_insert(0);
        if *count >= PENDING_PER_ADDRESS {
            return None;
        }
        *count += 1;
        Some(PendingSlot {
            _permit: permit,
            ip,
            by_address: self.by_address.clone(),
        })
    }
}

impl Drop for PendingSlot {
    fn drop(&mut self) {
        let mut map = self.by_address.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(count) = map.get_mut(&self.ip) {
            *count -= 1;
            if *count == 0 {
                map.remove(&self.ip);
            }
        }
    }
}

#[derive(Debug)]
struct Shared {
    buffer: SharedBuffer,
    host: HostInfo,
    config: ServeConfig,
    failures: Failures,
    permits: Arc<Semaphore>,
    pending: Pending,
}

/// A probe sampling in the background and serving subscribers on a listener, until dropped.
#[derive(Debug)]
pub struct RunningProbe {
    pub addr: std::net::SocketAddr,
    pub sampling: crate::sampler::Background,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
}

impl RunningProbe {
    /// Starts sampling (a history of at most `max_records` and `max_bytes`) and serving on
    /// `listener`, on the current tokio runtime.
    pub fn start(
        sampler: crate::sampler::Sampler,
        listener: TcpListener,
        config: ServeConfig,
        max_records: usize,
        max_bytes: usize,
    ) -> Result<Self, crate::error::Error> {
        let addr = listener
            .local_addr()
            .map_err(|source| crate::error::Error::Io {
                what: "read the listening address".into(),
                source,
            })?;
        let host = sampler.host_info();
        let sampling = crate::sampler::Background::start(sampler, max_records, max_bytes)?;
        let (stop, stopped) = tokio::sync::oneshot::channel();
        tokio::spawn(serve(
            listener,
            sampling.buffer.clone(),
            host,
            config,
            async {
                let _ = stopped.await;
            },
        ));
        Ok(RunningProbe {
            addr,
            sampling,
            stop: Some(stop),
        })
    }
}

impl Drop for RunningProbe {
    fn drop(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
    }
}

/// Serves subscribers until `shutdown` completes.
pub async fn serve(
    listener: TcpListener,
    buffer: SharedBuffer,
    host: HostInfo,
    config: ServeConfig,
    shutdown: impl Future<Output = ()>,
) {
    let shared = Arc::new(Shared {
        buffer,
        host,
        permits: Arc::new(Semaphore::new(config.max_subscribers.max(1))),
        pending: Pending::new(config.max_pending),
        config,
        failures: Failures::default(),
    });
    tokio::pin!(shutdown);
    let mut backoff = Duration::from_millis(10);
    loop {
        let accepted = tokio::select! {
            _ = &mut shutdown => return,
            accepted = listener.accept() => accepted,
        };
        match accepted {
            Ok((stream, peer)) => {
                backoff = Duration::from_millis(10);
                let Some(pending) = shared.pending.take(peer.ip()) else {
                    tracing::warn!(%peer, "closed a connection: too many are waiting to authenticate");
                    continue;
                };
                let shared = shared.clone();
                tokio::spawn(async move {
                    if let Err(e) = session(stream, peer, &shared, pending).await {
                        tracing::info!(%peer, "subscriber session ended: {e}");
                    }
                });
            }
            Err(e) => {
                tracing::warn!("accept failed: {e}; retrying in {backoff:?}");
                tokio::time::sleep(backoff).await;
                backoff = (backoff * 2).min(Duration::from_secs(1));
            }
        }
    }
}

async fn session(
    stream: TcpStream,
    peer: SocketAddr,
    shared: &Shared,
    pending: PendingSlot,
) -> Result<(), FrameError> {
    let _ = stream.set_nodelay(true);
    let Some(tls) = &shared.config.tls else {
        return subscription(stream, peer, shared, pending).await;
    };
    let mut first = [0u8; 1];
    let peeked = tokio::time::timeout(shared.config.hello_timeout, stream.peek(&mut first)).await;
    match peeked {
        Ok(Ok(1)) if first[0] == TLS_HANDSHAKE_RECORD => {}
        Ok(Ok(1)) => {
            tracing::warn!(%peer, "refused a plain-TCP subscriber: this probe requires TLS (anything it sent, a token included, crossed the network in clear)");
            let mut framed = Framed::new(stream, ProbeCodec::new(shared.config.max_frame));
            return framed
                .send(ProbeMessage::Refused {
                    reason:
                        "this probe requires TLS: connect with --probe-fingerprint or --probe-ca"
                            .into(),
                })
                .await;
        }
        Ok(_) => return Ok(()),
        Err(_) => return Ok(()),
    }
    let acceptor = tokio_rustls::TlsAcceptor::from(tls.clone());
    match tokio::time::timeout(shared.config.hello_timeout, acceptor.accept(stream)).await {
        Ok(Ok(stream)) => subscription(stream, peer, shared, pending).await,
        Ok(Err(e)) => {
            tracing::info!(%peer, "TLS handshake failed: {e}");
            Ok(())
        }
        Err(_) => {
            tracing::info!(%peer, "no TLS handshake within the time limit");
            Ok(())
        }
    }
}

/// The first byte of a TLS connection: a handshake record's content type.
const TLS_HANDSHAKE_RECORD: u8 = 0x16;

/// One subscriber, from `hello` to the end, over plain TCP or TLS.
async fn subscription<S: AsyncRead + AsyncWrite + Unpin>(
    stream: S,
    peer: SocketAddr,
    shared: &Shared,
    pending: PendingSlot,
) -> Result<(), FrameError> {
    let mut framed = Framed::new(stream, ProbeCodec::new(shared.config.max_frame));
    let refuse = |reason: String| ProbeMessage::Refused { reason };
    let (client, start) = match read_hello(&mut framed, peer, shared).await {
        ControlFlow::Continue(hello) => hello,
        ControlFlow::Break(ended) => return ended,
    };
    // Authenticated: from here on a subscriber slot, not a pending one.
    drop(pending);
    let Ok(_permit) = shared.permits.clone().try_acquire_owned() else {
        let reason = format!(
            "the probe already serves {} subscribers (raise --max-subscribers)",
            shared.config.max_subscribers
        );
        return framed.send(refuse(reason)).await;
    };
    tracing::info!(%peer, client, ?start, "subscriber connected");
    let cursor = welcome(&mut framed, shared, start).await?;
    stream_records(&mut framed, shared, cursor).await
}

/// Reads the subscriber's `hello` and checks its version and token: the client's name and where
/// it starts, or how the subscription ended (refused, or the client gone).
async fn read_hello<S: AsyncRead + AsyncWrite + Unpin>(
    framed: &mut Framed<S, ProbeCodec>,
    peer: SocketAddr,
    shared: &Shared,
) -> ControlFlow<Result<(), FrameError>, (String, Start)> {
    let refuse = |reason: String| ProbeMessage::Refused { reason };
    let hello = match tokio::time::timeout(shared.config.hello_timeout, framed.next()).await {
        Ok(Some(Ok(hello))) => hello,
        Ok(Some(Err(e))) => {
            let _ = framed.send(refuse(format!("bad hello: {e}"))).await;
            return ControlFlow::Break(Err(e));
        }
        Ok(None) => return ControlFlow::Break(Ok(())),
        Err(_) => {
            let reason = "no hello within the time limit".into();
            return ControlFlow::Break(framed.send(refuse(reason)).await);
        }
    };
    let ClientMessage::Hello {
        version,
        client,
        token,
        start,
    } = hello
    else {
        let reason = "the first message must be hello".into();
        return ControlFlow::Break(framed.send(refuse(reason)).await);
    };
    if version != VERSION {
        let reason =
            format!("protocol version {version} is not supported; this probe speaks {VERSION}");
        return ControlFlow::Break(framed.send(refuse(reason)).await);
    }
    if let Some(expected) = &shared.config.token {
        let given = token.unwrap_or_default();
        if !bool::from(given.as_bytes().ct_eq(expected.as_bytes())) {
            let delay = shared.failures.delay(peer.ip());
            tracing::warn!(%peer, client, "refused a subscriber with a wrong token; answering in {delay:?}");
            tokio::time::sleep(delay).await;
            return ControlFlow::Break(framed.send(refuse("wrong token".into())).await);
        }
    }
    ControlFlow::Continue((client, start))
}

/// Tells the subscriber in `welcome` what the buffer holds; returns where its records start.
async fn welcome<S: AsyncRead + AsyncWrite + Unpin>(
    framed: &mut Framed<S, ProbeCodec>,
    shared: &Shared,
    start: Start,
) -> Result<u64, FrameError> {
    let (oldest, next, instance) = shared
        .buffer
        .with(|b| (b.oldest_seq(), b.next_seq(), b.instance()));
    let cursor = match start {
        Start::Live => next,
        Start::Oldest => oldest,
        // Numbers of another run of the probe mean nothing here: all it holds is new.
        Start::After {
            instance: Some(theirs),
            ..
        } if theirs != instance => oldest,
        Start::After { seq, .. } => seq.saturating_add(1),
        Start::Back { ns } => {
            let since = mono_ns().saturating_sub(ns);
            shared.buffer.with(|b| b.seq_since(since))
        }
    };
    framed
        .send(ProbeMessage::Welcome {
            version: VERSION,
            host: Box::new(shared.host.clone()),
            oldest_seq: oldest,
            next_seq: next,
            instance,
        })
        .await?;
    Ok(cursor)
}

/// Sends records from `cursor` on as they arrive, and answers pings, until the subscriber
/// leaves.
async fn stream_records<S: AsyncRead + AsyncWrite + Unpin>(
    framed: &mut Framed<S, ProbeCodec>,
    shared: &Shared,
    mut cursor: u64,
) -> Result<(), FrameError> {
    let refuse = |reason: String| ProbeMessage::Refused { reason };
    let mut appended = shared.buffer.subscribe();
    loop {
        if send_held(framed, shared, &mut cursor).await? {
            continue;
        }
        tokio::select! {
            changed = appended.changed() => if changed.is_err() { return Ok(()) },
            incoming = framed.next() => match incoming {
                Some(Ok(ClientMessage::Ping { id })) => {
                    let shift = shared.config.clock_shift_ns;
                    framed.send(ProbeMessage::Pong {
                        id,
                        mono_ns: mono_ns().saturating_add_signed(shift),
                        wall_ns: wall_ns().saturating_add_signed(shift),
                    }).await?;
                }
                Some(Ok(ClientMessage::Bye)) | None => return Ok(()),
                Some(Ok(ClientMessage::Hello { .. })) => {
                    return framed.send(refuse("hello may only be sent once".into())).await;
                }
                Some(Err(e)) => return Err(e),
            },
        }
    }
}

/// Sends the records the buffer holds from `cursor` on (a `gap` for those it no longer holds)
/// and moves `cursor` past them; says whether there were any.
async fn send_held<S: AsyncRead + AsyncWrite + Unpin>(
    framed: &mut Framed<S, ProbeCodec>,
    shared: &Shared,
    cursor: &mut u64,
) -> Result<bool, FrameError> {
    let at = *cursor;
    match shared
        .buffer
        .with(|b| b.read_encoded(at, 256, shared.config.max_frame))
    {
        Read::Gap { from, to } => {
            framed
                .send(ProbeMessage::Gap {
                    from_seq: from,
                    to_seq: to,
                })
                .await?;
            *cursor = to + 1;
            Ok(true)
        }
        Read::Records(records) if !records.is_empty() => {
            *cursor += records.len() as u64;
            for json in records {
                framed.feed(Encoded(json)).await?;
            }
            SinkExt::<Encoded>::flush(&mut *framed).await?;
            Ok(true)
        }
        Read::Records(_) => Ok(false),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_failure_table_stays_bounded_however_many_addresses_fail() {
        let failures = Failures::default();
        for i in 0..(MAX_FAILING_ADDRESSES as u32 + 500) {
            let ip = IpAddr::from(std::net::Ipv6Addr::from(u128::from(i)));
            failures.delay(ip);
        }
        let held = failures.0.lock().unwrap().len();
        assert_eq!(held, MAX_FAILING_ADDRESSES);
        // A new address while the table is full of recent failures waits the longest.
        let new = IpAddr::from(std::net::Ipv6Addr::from(u128::MAX));
        assert_eq!(failures.delay(new), Duration::from_secs(30));
        // One already known goes on as before: its second failure waits 1 s.
        let known = IpAddr::from(std::net::Ipv6Addr::from(1u128));
        assert_eq!(failures.delay(known), Duration::from_secs(1));
    }

    #[test]
    fn failures_from_one_address_wait_longer_each_time() {
        let f = Failures::default();
        let ip: IpAddr = "10.0.0.1".parse().unwrap();
        let delays: Vec<Duration> = (0..10).map(|_| f.delay(ip)).collect();
        assert_eq!(delays[0], Duration::from_millis(500));
        assert!(delays.windows(2).all(|w| w[1] >= w[0]));
        assert_eq!(*delays.last().unwrap(), Duration::from_secs(30));
        assert_eq!(
            f.delay("10.0.0.2".parse().unwrap()),
            Duration::from_millis(500)
        );
    }
}
