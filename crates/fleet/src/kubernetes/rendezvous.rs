//! Where the pods dial: the runner's TLS listener (a certificate made for the sitting, pinned
//! by the pods through the Secret), each pod's hello checked (the sitting's token, an index of
//! the Job not already in), and the barrier: every index in, or those missing named once the
//! wait is over.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::io::BufReader;
use tokio::sync::{mpsc, Notify, OnceCell};

use super::link::KubeLink;
use super::wire::{self, Hello, Welcome};
use super::{KubeError, Resolved};
use crate::error::FleetError;
use crate::progress::Progress;

/// How long a pod has to finish its handshake and hello.
const HELLO: Duration = Duration::from_secs(10);

/// Handshakes in progress at once beyond the Job's pods: a connection past that is closed at
/// once, so that a flood of connections to the listener costs the runner nothing.
const SPARE_HANDSHAKES: usize = 16;

/// The runner's listener for one sitting's pods.
pub struct Rendezvous {
    listener: Mutex<Option<std::net::TcpListener>>,
    tls: probe::tls::ServerTls,
    token: String,
    count: u32,
    wait: Duration,
    namespace: String,
    job: String,
    /// Each index's link once its pod is in; taken by the fleet.
    slots: Arc<Mutex<Vec<Option<KubeLink>>>>,
    /// Each index claimed by a hello that passed (before its link is in the slot): a second
    /// hello of the same index is refused even while the first is still being welcomed.
    claimed: Arc<Mutex<Vec<bool>>>,
    /// Set once every pod is in: a pod dialling after that is refused.
    sealed: Arc<std::sync::atomic::AtomicBool>,
    arrived: Arc<Notify>,
    gathered: OnceCell<Result<(), String>>,
    accepting: Mutex<Option<tokio::task::JoinHandle<()>>>,
    /// Where each pod refused is told.
    told: mpsc::UnboundedSender<Progress>,
}

impl std::fmt::Debug for Rendezvous {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Rendezvous")
            .field("job", &self.job)
            .field("count", &self.count)
            .finish()
    }
}

impl Drop for Rendezvous {
    fn drop(&mut self) {
        if let Some(task) = self.accepting.lock().ok().and_then(|mut t| t.take()) {
            task.abort();
        }
    }
}

/// A token of 32 random bytes, hex.
fn token() -> Result<String, KubeError> {
    let mut bytes = [0u8; 32];
    let mut filled = 0;
    while filled < bytes.len() {
        let rest = bytes.get_mut(filled..).unwrap_or_default();
        match rustix::rand::getrandom(rest, rustix::rand::GetRandomFlags::empty()) {
            Ok(n) => filled += n,
            Err(e) => return Err(KubeError::Tls(format!("no randomness for a token: {e}"))),
        }
    }
    Ok(hex::encode(bytes))
}

impl Rendezvous {
    /// Listens on `resolved.listen` now (a port taken is said before anything is rendered);
    /// each pod refused is told to `told`.
    pub fn listen(
        resolved: &Resolved,
        tls: probe::tls::ServerTls,
        told: mpsc::UnboundedSender<Progress>,
    ) -> Result<Rendezvous, KubeError> {
        let listen_error = |error| KubeError::Listen {
            address: resolved.listen.clone(),
            error,
        };
        let listener = std::net::TcpListener::bind(&resolved.listen).map_err(listen_error)?;
        listener.set_nonblocking(true).map_err(listen_error)?;
        Ok(Rendezvous {
            listener: Mutex::new(Some(listener)),
            tls,
            token: token()?,
            count: resolved.job.count,
            wait: resolved.wait,
            namespace: resolved.job.namespace.clone(),
            job: resolved.job.name.clone(),
            slots: Arc::new(Mutex::new((0..resolved.job.count).map(|_| None).collect())),
            claimed: Arc::new(Mutex::new(vec![false; resolved.job.count as usize])),
            sealed: Arc::new(std::sync::atomic::AtomicBool::new(false)),
            arrived: Arc::new(Notify::new()),
            gathered: OnceCell::new(),
            accepting: Mutex::new(None),
            told,
        })
    }

    pub fn token(&self) -> &str {
        &self.token
    }

    pub fn fingerprint(&self) -> &str {
        &self.tls.fingerprint
    }

    /// `start` (the pods started, then gathered) run once, whoever asks first; its outcome
    /// told to every asker.
    pub async fn started<F, Fut>(&self, start: F) -> Result<(), FleetError>
    where
        F: FnOnce() -> Fut,
        Fut: std::future::Future<Output = Result<(), FleetError>>,
    {
        let outcome = self
            .gathered
            .get_or_init(|| async { start().await.map_err(|e| e.to_string()) })
            .await;
        outcome.clone().map_err(|why| KubeError::Gather(why).into())
    }

    /// Accepts pods until every index is in, or the wait is over (the missing named).
    pub async fn gather(&self) -> Result<(), KubeError> {
        self.accept();
        let deadline = tokio::time::Instant::now() + self.wait;
        loop {
            let notified = self.arrived.notified();
            let mut missing = self.missing();
            if missing.is_empty() {
                self.sealed.store(true, std::sync::atomic::Ordering::SeqCst);
                // Every pod is in: the listener is closed, nothing more is accepted.
                self.stop_accepting();
                return Ok(());
            }
            if tokio::time::timeout_at(deadline, notified).await.is_err() {
                self.stop_accepting();
                missing = self.missing();
                // Those that came are told goodbye (their pods end well), before the runner
                // gives up.
                let came: Vec<KubeLink> = match self.slots.lock() {
                    Ok(mut slots) => slots.iter_mut().filter_map(Option::take).collect(),
                    Err(_) => Vec::new(),
                };
                for link in came {
                    crate::transport::Link::close(Box::new(link)).await;
                }
                return Err(KubeError::Missing {
                    missing,
                    count: self.count,
                    waited: self.wait,
                    namespace: self.namespace.clone(),
                    job: self.job.clone(),
                });
            }
        }
    }

    fn missing(&self) -> Vec<u32> {
        match self.slots.lock() {
            Ok(slots) => (0..self.count)
                .filter(|i| slots.get(*i as usize).is_none_or(Option::is_none))
                .collect(),
            Err(_) => (0..self.count).collect(),
        }
    }

    /// Gun `n`'s link, once gathered.
    pub fn link(&self, n: usize) -> Result<KubeLink, FleetError> {
        self.slots
            .lock()
            .ok()
            .and_then(|mut s| s.get_mut(n).and_then(Option::take))
            .ok_or(FleetError::NoGuns)
    }

    /// Ends the accepting task, which closes the listener.
    fn stop_accepting(&self) {
        if let Some(task) = self.accepting.lock().ok().and_then(|mut t| t.take()) {
            task.abort();
        }
    }

    /// Starts the accepting task (once).
    fn accept(&self) {
        let Some(listener) = self.listener.lock().ok().and_then(|mut l| l.take()) else {
            return;
        };
        let Ok(listener) = tokio::net::TcpListener::from_std(listener) else {
            return;
        };
        let door = Door {
            acceptor: tokio_rustls::TlsAcceptor::from(self.tls.config.clone()),
            token: self.token.clone(),
            slots: self.slots.clone(),
            claimed: self.claimed.clone(),
            arrived: self.arrived.clone(),
            job: self.job.clone(),
            sealed: self.sealed.clone(),
            told: self.told.clone(),
        };
        let handshakes = Arc::new(tokio::sync::Semaphore::new(
            self.count as usize + SPARE_HANDSHAKES,
        ));
        let task = tokio::spawn(accept_pods(listener, door, handshakes));
        if let Ok(mut t) = self.accepting.lock() {
            *t = Some(task);
        }
    }
}

/// A pod's connection once its handshake is done.
type Dialled = BufReader<tokio_rustls::server::TlsStream<tokio::net::TcpStream>>;

/// What welcoming a pod needs of the rendezvous, cloned into each pod's task.
#[derive(Clone)]
struct Door {
    acceptor: tokio_rustls::TlsAcceptor,
    token: String,
    slots: Arc<Mutex<Vec<Option<KubeLink>>>>,
    claimed: Arc<Mutex<Vec<bool>>>,
    arrived: Arc<Notify>,
    job: String,
    sealed: Arc<std::sync::atomic::AtomicBool>,
    told: mpsc::UnboundedSender<Progress>,
}

impl Door {
    /// The pod's handshake and hello, answered: the hello and its connection when welcomed,
    /// nothing when refused (its index freed again when the welcome cannot be sent).
    async fn hello(
        &self,
        tcp: tokio::net::TcpStream,
        peer: std::net::SocketAddr,
    ) -> Option<(Hello, Dialled)> {
        let tls = self.acceptor.accept(tcp).await.ok()?;
        let mut tls = BufReader::new(tls);
        let hello: Hello = wire::read_line(&mut tls).await.ok()?;
        let refusal = if self.sealed.load(std::sync::atomic::Ordering::SeqCst) {
            Some(format!(
                "the sitting's guns are all in: index {} came late or twice",
                hello.index
            ))
        } else {
            refuse(&hello, &self.token, &self.claimed)
        };
        let answer = match &refusal {
            None => Welcome::Welcome,
            Some(why) => Welcome::Refused { why: why.clone() },
        };
        if wire::write_line(tls.get_mut(), &answer).await.is_err() {
            // Not welcomed after all: its index is free for the pod's retry.
            if refusal.is_none() {
                if let Ok(mut c) = self.claimed.lock() {
                    if let Some(slot) = c.get_mut(hello.index as usize) {
                        *slot = false;
                    }
                }
            }
            return None;
        }
        if let Some(why) = refusal {
            let _ = self.told.send(Progress::PodRefused { peer, why });
            return None;
        }
        Some((hello, tls))
    }
}

/// Accepts pods' connections until aborted, each welcomed in a task of its own while a
/// handshake is free (a connection past that is closed at once).
async fn accept_pods(
    listener: tokio::net::TcpListener,
    door: Door,
    handshakes: Arc<tokio::sync::Semaphore>,
) {
    loop {
        let (tcp, peer) = match listener.accept().await {
            Ok(accepted) => accepted,
            Err(_) => {
                // Out of descriptors, say: not a reason to spin.
                tokio::time::sleep(Duration::from_millis(50)).await;
                continue;
            }
        };
        let Ok(permit) = handshakes.clone().try_acquire_owned() else {
            continue;
        };
        let _ = tcp.set_nodelay(true);
        tokio::spawn(welcome(door.clone(), tcp, peer, permit));
    }
}

/// One pod welcomed (handshake and hello within [`HELLO`]): its link put in its index's slot,
/// and the gathering told.
async fn welcome(
    door: Door,
    tcp: tokio::net::TcpStream,
    peer: std::net::SocketAddr,
    permit: tokio::sync::OwnedSemaphorePermit,
) {
    let _permit = permit;
    let welcomed = tokio::time::timeout(HELLO, door.hello(tcp, peer)).await;
    let Ok(Some((hello, tls))) = welcomed else {
        return;
    };
    let name = format!("{}/{} ({})", door.job, hello.index, hello.node);
    let link = KubeLink::start(name, tls);
    if let Ok(mut s) = door.slots.lock() {
        if let Some(slot) = s.get_mut(hello.index as usize) {
            *slot = Some(link);
        }
    }
    door.arrived.notify_waiters();
}

/// Why a pod's hello is refused, if it is; its index claimed when it is not.
fn refuse(hello: &Hello, token: &str, claimed: &Mutex<Vec<bool>>) -> Option<String> {
    if !wire::same_token(&hello.token.0, token) {
        return Some("its token is not this sitting's (a pod of another sitting's Job?)".into());
    }
    if hello.version != wire::VERSION {
        return Some(format!(
            "it speaks version {} of the guns' protocol, this runner {}: build the image from this tree",
            hello.version,
            wire::VERSION
        ));
    }
    let Ok(mut claimed) = claimed.lock() else {
        return Some("the runner's registry is unusable".into());
    };
    let count = claimed.len();
    match claimed.get_mut(hello.index as usize) {
        None => Some(format!(
            "index {} is beyond the Job's {count} guns",
            hello.index
        )),
        Some(true) => Some(format!("index {} is in already", hello.index)),
        Some(slot) => {
            *slot = true;
            None
        }
    }
}
