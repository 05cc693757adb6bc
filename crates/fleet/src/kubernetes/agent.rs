//! A gun's pod: `loadgen gun --dial HOST:PORT --secrets DIR` connects out to the runner over
//! TLS (the runner's certificate pinned by the fingerprint in the Job's Secret, the sitting's
//! token in its hello), says its index (`JOB_COMPLETION_INDEX`), pod and node, and then runs
//! each session the runner opens as a `loadgen gun` process of its own, its standard streams
//! carried as frames. When the connection is lost, every session's standard input closes (an
//! attack stops as Ctrl-C would, keeping what it recorded) and the pod exits non-zero, which
//! fails its index: a gun is never replaced mid-step.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

use tokio::io::{AsyncRead, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::process::{Child, ChildStdin, Command};
use tokio::sync::mpsc;

use super::wire::{self, Frame, Hello, Welcome};

/// How long a pod keeps dialling a runner that does not answer yet.
pub const DIAL_FOR: Duration = Duration::from_secs(120);
/// How long sessions are given to end once the connection is gone.
const GRACE: Duration = Duration::from_secs(30);

/// Where and as whom a pod dials.
#[derive(Debug, Clone)]
pub struct Dial {
    /// `host:port` of the runner.
    pub address: String,
    /// The mounted Secret: `token` and `fingerprint`.
    pub secrets: PathBuf,
    pub index: u32,
    pub pod: String,
    pub node: String,
    /// This `loadgen`, run as `loadgen gun` for each session.
    pub loadgen: PathBuf,
}

/// Why a pod's gun ended other than by the runner's goodbye.
#[derive(Debug, thiserror::Error)]
pub enum AgentError {
    #[error("cannot read {}: {error} (the Job's Secret is mounted there)", .path.display())]
    Secret {
        path: PathBuf,
        #[source]
        error: std::io::Error,
    },
    #[error("the Secret's fingerprint: {0}")]
    Fingerprint(#[from] probe::tls::TlsError),
    #[error(
        "JOB_COMPLETION_INDEX is {0:?}, not an index: run as a pod of an Indexed Job (or set it)"
    )]
    Index(String),
    #[error("cannot reach the runner at {address} within {}s: {why}", DIAL_FOR.as_secs())]
    Unreachable { address: String, why: String },
    #[error("the runner refused this gun: {0}")]
    Refused(String),
    #[error("the connection to the runner was lost: {0}")]
    Lost(String),
}

/// The index this pod is, from `raw`: the Job's `JOB_COMPLETION_INDEX`, as the caller read
/// it (empty when unset).
pub fn parse_index(raw: &str) -> Result<u32, AgentError> {
    raw.trim()
        .parse()
        .map_err(|_| AgentError::Index(raw.to_string()))
}

fn read_secret(dir: &Path, name: &str) -> Result<String, AgentError> {
    let path = dir.join(name);
    std::fs::read_to_string(&path)
        .map(|s| s.trim().to_string())
        .map_err(|error| AgentError::Secret { path, error })
}

/// The runner's TLS stream, as the pod dials it.
type Link = tokio_rustls::client::TlsStream<tokio::net::TcpStream>;

/// Dials the runner and serves its sessions until it says goodbye (`Ok`) or the connection is
/// lost (`Err`, after every session has ended or been ended); `welcomed` is called once the
/// runner has welcomed this pod, for the caller to say so.
pub async fn serve(dial: &Dial, welcomed: impl FnOnce() + Send) -> Result<(), AgentError> {
    let token = read_secret(&dial.secrets, "token")?;
    let tls = greet(connect(dial).await?, dial, token).await?;
    welcomed();
    // The reader, not its inner stream: what it read past the welcome (the first frames) is
    // in its buffer.
    let (read, mut write) = tokio::io::split(tls);
    // Frames out: every session's output, errors and exit.
    let (out, mut outgoing) = mpsc::unbounded_channel::<Frame>();
    let writer = tokio::spawn(async move {
        while let Some(frame) = outgoing.recv().await {
            if wire::write_frame(&mut write, &frame).await.is_err() {
                break;
            }
        }
    });
    // Frames in, read apart so that a frame is never cut by a select.
    let (incoming_tx, mut incoming) = mpsc::unbounded_channel();
    let reader = tokio::spawn(async move {
        let mut read = read;
        loop {
            let next = wire::read_frame(&mut read).await;
            let end = !matches!(next, Ok(Some(_)));
            let _ = incoming_tx.send(next);
            if end {
                break;
            }
        }
    });
    let (ended_tx, mut ended) = mpsc::unbounded_channel::<u32>();
    let mut sessions = Sessions {
        running: HashMap::new(),
        loadgen: &dial.loadgen,
        out: out.clone(),
        ended: ended_tx,
    };
    let outcome = sessions.answer(&mut incoming, &mut ended).await;
    let running = std::mem::take(&mut sessions.running);
    drop(sessions);
    end_sessions(running, &mut ended).await;
    drop(out);
    reader.abort();
    let _ = tokio::time::timeout(Duration::from_secs(5), writer).await;
    outcome
}

/// Every session's standard input closed: an attack stops as Ctrl-C would and keeps what it
/// recorded; one still running after the grace is ended.
async fn end_sessions(
    mut running: HashMap<u32, Running>,
    ended: &mut mpsc::UnboundedReceiver<u32>,
) {
    for r in running.values_mut() {
        r.stdin = None;
    }
    let _ = tokio::time::timeout(GRACE, async {
        while !running.is_empty() {
            match ended.recv().await {
                Some(id) => {
                    running.remove(&id);
                }
                None => break,
            }
        }
    })
    .await;
    for r in running.values_mut() {
        r.kill();
    }
}

/// The TLS connection to the runner, its certificate pinned by the fingerprint in the pod's
/// Secret: tried every second, each attempt given 10 s, until [`DIAL_FOR`] has passed.
async fn connect(dial: &Dial) -> Result<Link, AgentError> {
    let fingerprint = read_secret(&dial.secrets, "fingerprint")?;
    let pin = probe::tls::parse_fingerprint(&fingerprint)?;
    let client = probe::tls::ClientTls::new(&probe::tls::Trust::Fingerprint(pin))?;
    let connector = tokio_rustls::TlsConnector::from(client.config);
    let host = dial
        .address
        .rsplit_once(':')
        .map_or(dial.address.as_str(), |(h, _)| h);
    let name = probe::tls::ClientTls::server_name(host).map_err(|e| AgentError::Unreachable {
        address: dial.address.clone(),
        why: e.to_string(),
    })?;
    let deadline = tokio::time::Instant::now() + DIAL_FOR;
    loop {
        let attempt = async {
            let tcp = tokio::net::TcpStream::connect(&dial.address).await?;
            let _ = tcp.set_nodelay(true);
            connector.connect(name.clone(), tcp).await
        };
        match tokio::time::timeout(Duration::from_secs(10), attempt).await {
            Ok(Ok(tls)) => return Ok(tls),
            failed => {
                if tokio::time::Instant::now() >= deadline {
                    return Err(AgentError::Unreachable {
                        address: dial.address.clone(),
                        why: match failed {
                            Ok(Err(e)) => e.to_string(),
                            _ => "no answer within 10 s".into(),
                        },
                    });
                }
                tokio::time::sleep(Duration::from_secs(1)).await;
            }
        }
    }
}

/// The pod says who it is, with the runner's token; the runner welcomes it or refuses.
async fn greet(tls: Link, dial: &Dial, token: String) -> Result<BufReader<Link>, AgentError> {
    let mut tls = BufReader::new(tls);
    let hello = Hello {
        version: wire::VERSION,
        token: order::Secret(token),
        index: dial.index,
        pod: dial.pod.clone(),
        node: dial.node.clone(),
    };
    let lost = |e: wire::WireError| AgentError::Lost(e.to_string());
    wire::write_line(tls.get_mut(), &hello)
        .await
        .map_err(lost)?;
    match wire::read_line::<Welcome, _>(&mut tls)
        .await
        .map_err(lost)?
    {
        Welcome::Welcome => Ok(tls),
        Welcome::Refused { why } => Err(AgentError::Refused(why)),
    }
}

/// The sessions the runner opened on this pod, each a `loadgen gun` process.
struct Sessions<'a> {
    running: HashMap<u32, Running>,
    loadgen: &'a Path,
    out: mpsc::UnboundedSender<Frame>,
    ended: mpsc::UnboundedSender<u32>,
}

impl Sessions<'_> {
    /// The runner's frames taken (and each session that ends let go) until the connection
    /// ends: its goodbye (`Ok`), or lost.
    async fn answer(
        &mut self,
        incoming: &mut mpsc::UnboundedReceiver<Result<Option<Frame>, wire::WireError>>,
        ended: &mut mpsc::UnboundedReceiver<u32>,
    ) -> Result<(), AgentError> {
        loop {
            tokio::select! {
                next = incoming.recv() => match next {
                    Some(Ok(Some(frame))) => {
                        if let Some(end) = self.take(frame).await {
                            break end;
                        }
                    }
                    Some(Ok(None)) | None => break Err(AgentError::Lost("the runner closed it without a goodbye".into())),
                    Some(Err(e)) => break Err(AgentError::Lost(e.to_string())),
                },
                Some(id) = ended.recv() => { self.running.remove(&id); }
            }
        }
    }

    /// Does what a frame from the runner says: open a session, feed or close its input, end
    /// it; `Some` where the connection ends (a goodbye, or a frame not of the protocol).
    async fn take(&mut self, frame: Frame) -> Option<Result<(), AgentError>> {
        match frame.tag {
            wire::OPEN => {
                match open(
                    self.loadgen,
                    frame.session,
                    self.out.clone(),
                    self.ended.clone(),
                ) {
                    Ok(r) => {
                        self.running.insert(frame.session, r);
                    }
                    Err(e) => {
                        let why = format!("cannot run {}: {e}\n", self.loadgen.display());
                        let _ = self.out.send(Frame::new(
                            wire::ERRORS,
                            frame.session,
                            why.into_bytes(),
                        ));
                        let _ = self.out.send(Frame::exit(frame.session, Some(127)));
                    }
                }
            }
            wire::INPUT => {
                if let Some(stdin) = self
                    .running
                    .get_mut(&frame.session)
                    .and_then(|r| r.stdin.as_mut())
                {
                    // A session whose process is gone: its exit says so.
                    let _ = stdin.write_all(&frame.bytes).await;
                }
            }
            wire::INPUT_END => {
                if let Some(r) = self.running.get_mut(&frame.session) {
                    r.stdin = None;
                }
            }
            wire::KILL => {
                if let Some(r) = self.running.get_mut(&frame.session) {
                    r.kill();
                }
            }
            wire::BYE => return Some(Ok(())),
            other => {
                return Some(Err(AgentError::Lost(format!(
                    "a frame of kind {other} is not the protocol"
                ))))
            }
        }
        None
    }
}

/// A session's `loadgen gun` process, as far as the loop holds it.
struct Running {
    stdin: Option<ChildStdin>,
    pid: Option<u32>,
}

impl Running {
    /// Ends its process group at once (`loadgen gun` and the `loadgen order` it runs).
    fn kill(&mut self) {
        self.stdin = None;
        if let Some(pid) = self
            .pid
            .and_then(|p| rustix::process::Pid::from_raw(p as i32))
        {
            let _ = rustix::process::kill_process_group(pid, rustix::process::Signal::KILL);
        }
    }
}

/// `loadgen gun` started for session `id`, in a process group of its own: its output and
/// errors sent as frames, its exit too (and `id` on `ended`).
fn open(
    loadgen: &Path,
    id: u32,
    out: mpsc::UnboundedSender<Frame>,
    ended: mpsc::UnboundedSender<u32>,
) -> std::io::Result<Running> {
    let mut child: Child = Command::new(loadgen)
        .arg("gun")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0)
        .kill_on_drop(true)
        .spawn()?;
    let stdin = child.stdin.take();
    let pid = child.id();
    let pumps: Vec<_> = [
        child
            .stdout
            .take()
            .map(|s| pump(Box::new(s), wire::OUTPUT, id, out.clone())),
        child
            .stderr
            .take()
            .map(|s| pump(Box::new(s), wire::ERRORS, id, out.clone())),
    ]
    .into_iter()
    .flatten()
    .collect();
    tokio::spawn(async move {
        let status = child.wait().await;
        for p in pumps {
            let _ = p.await;
        }
        let code = status.ok().and_then(|s| s.code());
        let _ = out.send(Frame::exit(id, code));
        let _ = ended.send(id);
    });
    Ok(Running { stdin, pid })
}

fn pump(
    mut from: Box<dyn AsyncRead + Send + Unpin>,
    tag: u8,
    id: u32,
    out: mpsc::UnboundedSender<Frame>,
) -> tokio::task::JoinHandle<()> {
    tokio::spawn(async move {
        let mut buf = vec![0u8; 16 << 10];
        while let Ok(n) = from.read(&mut buf).await {
            if n == 0 {
                break;
            }
            let bytes = buf.get(..n).unwrap_or_default().to_vec();
            if out.send(Frame::new(tag, id, bytes)).is_err() {
                break;
            }
        }
    })
}
