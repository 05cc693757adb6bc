//! The HTTP client: connections, one exchange at a time, and what went wrong.
//!
//! Built on hyper's low-level connection API rather than a pooled client, because the pool is
//! the generator's business (see `pool.rs`): it must grow on demand, honour a cap and count
//! waits. An HTTP/1.1 [`H1Conn`] is polled in the same task as its requests ([`H1Conn::drive`]),
//! so that a request costs no cross-task wake-up; an HTTP/2 connection runs in its own task and
//! multiplexes requests from many.
//!
//! Every failure becomes an [`ErrorKind`]; nothing here panics or returns early on a bad
//! peer, because a dead or misbehaving target must make a run full of errors, not a crash.

use std::future::Future;
use std::io;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::Arc;
use std::task::Poll;
use std::time::Duration;

use bytes::Bytes;
use http::Request;
use http_body_util::{BodyExt, Full};
use hyper::body::Incoming;
use hyper::client::conn::{http1, http2};
use hyper_util::rt::{TokioExecutor, TokioIo, TokioTimer};
use rustls::pki_types::ServerName;
use thiserror::Error;
use tokio::net::TcpStream;
use tokio_rustls::client::TlsStream;
use tokio_rustls::TlsConnector;
use tokio_util::either::Either;

use crate::engine::clock::{self, Nanos};
use crate::engine::recorder::Exchange;
use crate::engine::request::Origin;
use store::model::ErrorKind;

/// A plain or TLS stream.
pub type Stream = Either<TcpStream, TlsStream<TcpStream>>;

/// Why the client could not be set up.
#[derive(Debug, Error)]
pub enum ClientError {
    #[error("cannot resolve {host}: {source}; check the host name in the URL")]
    Resolve {
        host: String,
        #[source]
        source: io::Error,
    },
    #[error("{host} resolves to no address; check the host name in the URL")]
    NoAddress { host: String },
    /// The URL's host, which TLS cannot name the server by (not a DNS name or an IP address).
    #[error("cannot set up TLS: {host}: {source}")]
    TlsServerName {
        host: String,
        #[source]
        source: rustls::pki_types::InvalidDnsNameError,
    },
    /// rustls refused its own default protocol versions with the crypto provider.
    #[error("cannot set up TLS: {0}")]
    TlsVersions(#[source] rustls::Error),
    /// No root certificate on this host to check the server's against.
    #[error("cannot set up TLS: no trusted root certificates found on this host: install ca-certificates, or pass --insecure")]
    NoRootCertificates,
}

/// Opens connections to one origin.
#[derive(Clone)]
pub struct Connector {
    addrs: Arc<[SocketAddr]>,
    tls: Option<(TlsConnector, ServerName<'static>)>,
    pub h2: bool,
}

impl std::fmt::Debug for Connector {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Connector")
            .field("addrs", &self.addrs)
            .field("tls", &self.tls.is_some())
            .field("h2", &self.h2)
            .finish()
    }
}

impl Connector {
    /// Resolves the origin once (connections then go to its first address) and prepares TLS.
    /// `insecure` accepts any server certificate, for self-signed test servers.
    pub async fn new(origin: &Origin, h2: bool, insecure: bool) -> Result<Self, ClientError> {
        let addrs: Vec<SocketAddr> = tokio::net::lookup_host((origin.host.as_str(), origin.port))
            .await
            .map_err(|source| ClientError::Resolve {
                host: origin.host.clone(),
                source,
            })?
            .collect();
        if addrs.is_empty() {
            return Err(ClientError::NoAddress {
                host: origin.host.clone(),
            });
        }
        let tls = if origin.tls {
            let config = tls_config(h2, insecure)?;
            let name = ServerName::try_from(origin.host.clone()).map_err(|source| {
                ClientError::TlsServerName {
                    host: origin.host.clone(),
                    source,
                }
            })?;
            Some((TlsConnector::from(Arc::new(config)), name))
        } else {
            None
        };
        Ok(Connector {
            addrs: addrs.into(),
            tls,
            h2,
        })
    }

    /// Plain HTTP/1.1 (no TLS, no HTTP/2): the event loop's case.
    pub fn plain_h1(&self) -> bool {
        self.tls.is_none() && !self.h2
    }

    /// The address connections go to.
    pub fn addr(&self) -> SocketAddr {
        self.addrs[0]
    }

    /// Opens a TCP connection (and TLS session) to the target.
    pub async fn connect(&self) -> Result<Stream, ErrorKind> {
        let tcp = TcpStream::connect(self.addrs[0])
            .await
            .map_err(|e| classify_connect(&e))?;
        // Requests are small and latency is what is measured: never wait to coalesce.
        let _ = tcp.set_nodelay(true);
        match &self.tls {
            None => Ok(Either::Left(tcp)),
            Some((connector, name)) => connector
                .connect(name.clone(), tcp)
                .await
                .map(Either::Right)
                .map_err(|_| ErrorKind::Tls),
        }
    }

    /// Opens an HTTP/1.1 connection.
    pub async fn connect_h1(&self) -> Result<H1Conn, ErrorKind> {
        let stream = self.connect().await?;
        let (sender, conn) = http1::Builder::new()
            .writev(false)
            .handshake(TokioIo::new(stream))
            .await
            .map_err(|e| classify(&e))?;
        Ok(H1Conn {
            sender,
            conn: Box::pin(conn),
            closed: None,
        })
    }

    /// Opens an HTTP/2 connection, driven by a task of its own on the current runtime.
    pub async fn connect_h2(&self) -> Result<http2::SendRequest<Full<Bytes>>, ErrorKind> {
        let stream = self.connect().await?;
        let (sender, conn) = http2::Builder::new(TokioExecutor::new())
            .timer(TokioTimer::new())
            .handshake(TokioIo::new(stream))
            .await
            .map_err(|e| classify(&e))?;
        tokio::spawn(async move {
            // Errors surface on the requests that were using the connection.
            let _ = conn.await;
        });
        Ok(sender)
    }
}

fn tls_config(h2: bool, insecure: bool) -> Result<rustls::ClientConfig, ClientError> {
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let builder = rustls::ClientConfig::builder_with_provider(provider.clone())
        .with_safe_default_protocol_versions()
        .map_err(ClientError::TlsVersions)?;
    let mut config = if insecure {
        builder
            .dangerous()
            .with_custom_certificate_verifier(Arc::new(AcceptAnyCertificate(provider)))
            .with_no_client_auth()
    } else {
        let mut roots = rustls::RootCertStore::empty();
        let native = rustls_native_certs::load_native_certs();
        roots.add_parsable_certificates(native.certs);
        if roots.is_empty() {
            return Err(ClientError::NoRootCertificates);
        }
        builder.with_root_certificates(roots).with_no_client_auth()
    };
    config.alpn_protocols = vec![if h2 {
        b"h2".to_vec()
    } else {
        b"http/1.1".to_vec()
    }];
    Ok(config)
}

/// `--insecure`: accepts any certificate, but still checks the handshake signatures.
#[derive(Debug)]
struct AcceptAnyCertificate(Arc<rustls::crypto::CryptoProvider>);

impl rustls::client::danger::ServerCertVerifier for AcceptAnyCertificate {
    fn verify_server_cert(
        &self,
        _end_entity: &rustls::pki_types::CertificateDer<'_>,
        _intermediates: &[rustls::pki_types::CertificateDer<'_>],
        _server_name: &ServerName<'_>,
        _ocsp_response: &[u8],
        _now: rustls::pki_types::UnixTime,
    ) -> Result<rustls::client::danger::ServerCertVerified, rustls::Error> {
        Ok(rustls::client::danger::ServerCertVerified::assertion())
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &rustls::pki_types::CertificateDer<'_>,
        dss: &rustls::DigitallySignedStruct,
    ) -> Result<rustls::client::danger::HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls12_signature(
            message,
            cert,
            dss,
            &self.0.signature_verification_algorithms,
        )
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &rustls::pki_types::CertificateDer<'_>,
        dss: &rustls::DigitallySignedStruct,
    ) -> Result<rustls::client::danger::HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls13_signature(
            message,
            cert,
            dss,
            &self.0.signature_verification_algorithms,
        )
    }

    fn supported_verify_schemes(&self) -> Vec<rustls::SignatureScheme> {
        self.0.signature_verification_algorithms.supported_schemes()
    }
}

/// An HTTP/1.1 connection whose I/O is polled by whoever awaits on it.
pub struct H1Conn {
    sender: http1::SendRequest<Full<Bytes>>,
    conn: Pin<Box<http1::Connection<TokioIo<Stream>, Full<Bytes>>>>,
    /// Set once the connection has ended: `Some(None)` closed cleanly, `Some(Some(kind))` failed.
    closed: Option<Option<ErrorKind>>,
}

impl std::fmt::Debug for H1Conn {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("H1Conn")
            .field("closed", &self.closed)
            .finish()
    }
}

impl H1Conn {
    /// Whether a new request can no longer be sent on this connection.
    pub fn is_closed(&self) -> bool {
        self.closed.is_some() || self.sender.is_closed()
    }

    /// Awaits `fut` while driving the connection's I/O. Returns `None` if the connection ended
    /// and `fut` could not complete without it.
    pub async fn drive<F: Future>(&mut self, fut: F) -> Option<F::Output> {
        let mut fut = std::pin::pin!(fut);
        std::future::poll_fn(|cx| {
            if let Poll::Ready(v) = fut.as_mut().poll(cx) {
                return Poll::Ready(Some(v));
            }
            if self.closed.is_some() {
                return Poll::Ready(None);
            }
            if let Poll::Ready(result) = self.conn.as_mut().poll(cx) {
                self.closed = Some(result.err().map(|e| classify(&e)));
                // The connection may have delivered what `fut` waits for as it ended.
                return match fut.as_mut().poll(cx) {
                    Poll::Ready(v) => Poll::Ready(Some(v)),
                    Poll::Pending => Poll::Ready(None),
                };
            }
            Poll::Pending
        })
        .await
    }

    /// Sends `request` (at `sent`, monotonic ns) and reads the whole response, within
    /// `deadline`. After an error or a timeout the connection is not reused.
    pub async fn exchange(
        &mut self,
        request: Request<Full<Bytes>>,
        sent: Nanos,
        deadline: Nanos,
    ) -> Exchange {
        let response = self.sender.send_request(request);
        let work = async {
            match self.drive(response).await {
                Some(Ok(response)) => read_response(Some(&mut *self), response, sent).await,
                Some(Err(e)) => partial(sent, None, 0, classify(&e)),
                None => partial(sent, None, 0, self.closed_kind()),
            }
        };
        let outcome = tokio::select! {
            biased;
            out = work => Some(out),
            _ = deadline_sleep(deadline) => None,
        };
        let outcome = outcome.unwrap_or_else(|| timed_out(sent, deadline));
        if outcome.error.is_some() && self.closed.is_none() {
            self.closed = Some(outcome.error);
        }
        outcome
    }

    fn closed_kind(&self) -> ErrorKind {
        match self.closed {
            Some(Some(kind)) => kind,
            // A clean close with a request outstanding: the server hung up on it.
            _ => ErrorKind::Reset,
        }
    }
}

/// Sends `request` on an HTTP/2 connection (at `sent`) and reads the whole response, within
/// `deadline`.
pub async fn exchange_h2(
    sender: &mut http2::SendRequest<Full<Bytes>>,
    request: Request<Full<Bytes>>,
    sent: Nanos,
    deadline: Nanos,
) -> Exchange {
    let work = async {
        match sender.send_request(request).await {
            Ok(response) => read_response(None, response, sent).await,
            Err(e) => partial(sent, None, 0, classify(&e)),
        }
    };
    tokio::select! {
        biased;
        out = work => out,
        _ = deadline_sleep(deadline) => timed_out(sent, deadline),
    }
}

/// Reads a response's body to the end, counting its bytes. For HTTP/1.1 the connection is
/// driven meanwhile.
async fn read_response(
    mut conn: Option<&mut H1Conn>,
    response: http::Response<Incoming>,
    sent: Nanos,
) -> Exchange {
    let first_byte = clock::now();
    let status = response.status().as_u16();
    let mut body = response.into_body();
    let mut bytes_in = 0u64;
    loop {
        let frame = match conn.as_deref_mut() {
            Some(c) => match c.drive(body.frame()).await {
                Some(frame) => frame,
                None => {
                    let kind = match c.closed_kind() {
                        ErrorKind::Reset => ErrorKind::BodyRead,
                        other => other,
                    };
                    return partial(sent, Some((first_byte, status)), bytes_in, kind);
                }
            },
            None => body.frame().await,
        };
        match frame {
            None => break,
            Some(Ok(frame)) => {
                if let Some(data) = frame.data_ref() {
                    bytes_in += data.len() as u64;
                }
            }
            Some(Err(e)) => {
                let kind = match classify(&e) {
                    ErrorKind::Timeout => ErrorKind::Timeout,
                    _ => ErrorKind::BodyRead,
                };
                return partial(sent, Some((first_byte, status)), bytes_in, kind);
            }
        }
    }
    Exchange {
        sent,
        first_byte: Some(first_byte),
        completed: clock::now(),
        status: Some(status),
        bytes_in,
        error: None,
    }
}

fn partial(sent: Nanos, head: Option<(Nanos, u16)>, bytes_in: u64, kind: ErrorKind) -> Exchange {
    Exchange {
        sent,
        first_byte: head.map(|(t, _)| t),
        completed: clock::now(),
        status: head.map(|(_, s)| s),
        bytes_in,
        error: Some(kind),
    }
}

fn timed_out(sent: Nanos, deadline: Nanos) -> Exchange {
    Exchange {
        sent,
        first_byte: None,
        completed: deadline.max(sent),
        status: None,
        bytes_in: 0,
        error: Some(ErrorKind::Timeout),
    }
}

/// Sleeps until the monotonic instant `deadline` (millisecond precision is plenty for timeouts).
pub fn deadline_sleep(deadline: Nanos) -> tokio::time::Sleep {
    let left = deadline.saturating_sub(clock::now());
    tokio::time::sleep(Duration::from_nanos(left))
}

/// Classifies a failure to connect.
pub(crate) fn classify_connect(e: &io::Error) -> ErrorKind {
    match e.kind() {
        io::ErrorKind::ConnectionRefused => ErrorKind::Refused,
        io::ErrorKind::TimedOut => ErrorKind::Timeout,
        io::ErrorKind::ConnectionReset | io::ErrorKind::ConnectionAborted => ErrorKind::Reset,
        _ => ErrorKind::Connect,
    }
}

/// Classifies a hyper error by what the user can do about it.
pub fn classify(e: &hyper::Error) -> ErrorKind {
    if e.is_timeout() {
        return ErrorKind::Timeout;
    }
    if e.is_parse() || e.is_parse_status() || e.is_parse_too_large() {
        return ErrorKind::Protocol;
    }
    let mut source = std::error::Error::source(e);
    while let Some(s) = source {
        if let Some(io) = s.downcast_ref::<io::Error>() {
            return match io.kind() {
                io::ErrorKind::TimedOut => ErrorKind::Timeout,
                io::ErrorKind::InvalidData => ErrorKind::Tls,
                _ => ErrorKind::Reset,
            };
        }
        if s.downcast_ref::<rustls::Error>().is_some() {
            return ErrorKind::Tls;
        }
        source = s.source();
    }
    // Incomplete messages, closed or cancelled connections, h2 stream resets.
    ErrorKind::Reset
}
