//! One pod, dialled in: its TLS connection carrying every session of `loadgen gun` there as
//! frames (`wire`), each session's standard streams a pair of pipes on this side.

use std::collections::HashMap;
use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::sync::{Arc, Mutex};

use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::sync::{mpsc, oneshot};

use super::wire::{self, Frame};
use crate::error::{FleetError, GunFault};
use crate::transport::{BoxFuture, Link, Session};

/// The exit a session is given when its pod's connection was lost (no process exits so).
pub const LOST: i32 = -255;

/// A session's ends on this side.
struct Ends {
    output: mpsc::UnboundedSender<Vec<u8>>,
    errors: mpsc::UnboundedSender<Vec<u8>>,
    exit: oneshot::Sender<Option<i32>>,
}

#[derive(Default)]
struct Shared {
    sessions: Mutex<HashMap<u32, Ends>>,
    alive: AtomicBool,
}

impl Shared {
    /// Every session ended as lost: the connection is gone.
    fn lose(&self) {
        self.alive.store(false, Ordering::SeqCst);
        let ends: Vec<Ends> = match self.sessions.lock() {
            Ok(mut s) => s.drain().map(|(_, e)| e).collect(),
            Err(_) => Vec::new(),
        };
        for e in ends {
            let _ = e.exit.send(Some(LOST));
        }
    }
}

/// A pod's link.
pub struct KubeLink {
    name: String,
    frames: mpsc::UnboundedSender<Frame>,
    shared: Arc<Shared>,
    next: AtomicU32,
    writer: Mutex<Option<tokio::task::JoinHandle<()>>>,
    reader: tokio::task::JoinHandle<()>,
}

impl std::fmt::Debug for KubeLink {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("KubeLink")
            .field("name", &self.name)
            .finish()
    }
}

impl Drop for KubeLink {
    /// A link the runner lets go of says goodbye (its pod exits 0); only a runner that dies
    /// leaves its pods to find the connection lost.
    fn drop(&mut self) {
        let _ = self.frames.send(Frame::new(wire::BYE, 0, Vec::new()));
        self.reader.abort();
    }
}

impl KubeLink {
    /// The link over `stream`, a pod's connection past its hello; `name` as the pages show it.
    pub fn start<S>(name: String, stream: S) -> KubeLink
    where
        S: AsyncRead + AsyncWrite + Send + 'static,
    {
        let (mut read, mut write) = tokio::io::split(stream);
        let (frames, mut outgoing) = mpsc::unbounded_channel::<Frame>();
        let shared = Arc::new(Shared {
            alive: AtomicBool::new(true),
            ..Shared::default()
        });
        let writer = tokio::spawn(async move {
            while let Some(frame) = outgoing.recv().await {
                let bye = frame.tag == wire::BYE;
                if wire::write_frame(&mut write, &frame).await.is_err() {
                    break;
                }
                if bye {
                    let _ = write.shutdown().await;
                    break;
                }
            }
        });
        let theirs = shared.clone();
        let reader = tokio::spawn(async move {
            while let Ok(Some(frame)) = wire::read_frame(&mut read).await {
                let mut sessions = match theirs.sessions.lock() {
                    Ok(s) => s,
                    Err(_) => break,
                };
                match frame.tag {
                    wire::OUTPUT | wire::ERRORS => {
                        if let Some(ends) = sessions.get(&frame.session) {
                            let to = if frame.tag == wire::OUTPUT {
                                &ends.output
                            } else {
                                &ends.errors
                            };
                            let _ = to.send(frame.bytes);
                        }
                    }
                    wire::EXIT => {
                        if let Some(ends) = sessions.remove(&frame.session) {
                            let _ = ends.exit.send(frame.code());
                        }
                    }
                    // Anything else from a pod is not the protocol: the link is not to be trusted.
                    _ => break,
                }
            }
            theirs.lose();
        });
        KubeLink {
            name,
            frames,
            shared,
            next: AtomicU32::new(1),
            writer: Mutex::new(Some(writer)),
            reader,
        }
    }
}

/// A pipe fed from a channel: its reading end, and the task that feeds it.
fn piped(mut from: mpsc::UnboundedReceiver<Vec<u8>>) -> tokio::io::DuplexStream {
    let (mut theirs, ours) = tokio::io::duplex(64 << 10);
    tokio::spawn(async move {
        while let Some(bytes) = from.recv().await {
            if theirs.write_all(&bytes).await.is_err() {
                break;
            }
        }
    });
    ours
}

impl Link for KubeLink {
    fn name(&self) -> &str {
        &self.name
    }

    fn kind(&self) -> &'static str {
        "pod's"
    }

    fn program(&self) -> &'static str {
        "the pod's loadgen"
    }

    fn session(&self, _loadgen: &str) -> Result<Session, FleetError> {
        let id = self.next.fetch_add(1, Ordering::SeqCst);
        let (output_tx, output_rx) = mpsc::unbounded_channel();
        let (errors_tx, errors_rx) = mpsc::unbounded_channel();
        let (exit_tx, exit_rx) = oneshot::channel();
        let (input, mut theirs_in) = tokio::io::duplex(64 << 10);
        let registered = self.shared.alive.load(Ordering::SeqCst)
            && match self.shared.sessions.lock() {
                Ok(mut s) => {
                    s.insert(
                        id,
                        Ends {
                            output: output_tx,
                            errors: errors_tx,
                            exit: exit_tx,
                        },
                    );
                    true
                }
                Err(_) => false,
            };
        if registered
            && self
                .frames
                .send(Frame::new(wire::OPEN, id, Vec::new()))
                .is_ok()
        {
            let frames = self.frames.clone();
            tokio::spawn(async move {
                let mut buf = vec![0u8; 16 << 10];
                loop {
                    match theirs_in.read(&mut buf).await {
                        Ok(0) | Err(_) => {
                            let _ = frames.send(Frame::new(wire::INPUT_END, id, Vec::new()));
                            break;
                        }
                        Ok(n) => {
                            let bytes = buf.get(..n).unwrap_or_default().to_vec();
                            if frames.send(Frame::new(wire::INPUT, id, bytes)).is_err() {
                                break;
                            }
                        }
                    }
                }
            });
        } else if let Ok(mut s) = self.shared.sessions.lock() {
            // The connection is gone: the session ends at once, as lost.
            if let Some(ends) = s.remove(&id) {
                let _ = ends.exit.send(Some(LOST));
            }
        }
        let frames = self.frames.clone();
        Ok(Session {
            input: Box::new(input),
            output: Box::new(piped(output_rx)),
            errors: Box::new(piped(errors_rx)),
            ended: Box::pin(async move { Ok(exit_rx.await.unwrap_or(Some(LOST))) }),
            kill: Box::new(move || {
                let _ = frames.send(Frame::new(wire::KILL, id, Vec::new()));
            }),
        })
    }

    fn lost(&self, code: Option<i32>) -> bool {
        code == Some(LOST)
    }

    /// The image's own `loadgen`, whatever `[guns] loadgen` says: a pod runs its image.
    fn candidates(&self, _asked: Option<&str>, _build: &str) -> Vec<String> {
        vec![super::render::LOADGEN.to_string()]
    }

    /// Refused, as a link that cannot install is by default, in words that say how to run the
    /// image's own build instead.
    fn install<'a>(
        &'a self,
        _local: &'a Path,
        _build: &'a str,
        _arch: Option<&'a str>,
    ) -> BoxFuture<'a, Result<String, FleetError>> {
        Box::pin(async move {
            Err(FleetError::remote(
                &self.name,
                GunFault::Image(
                    "its image's loadgen is not this runner's build (their SHA-256s differ): run the runner from the image's own loadgen, copied out with id=$(docker create IMAGE) && docker cp \"$id\":/usr/local/bin/loadgen . (docs/guns.md, In a container)".into(),
                ),
            ))
        })
    }

    fn close(self: Box<Self>) -> BoxFuture<'static, ()> {
        Box::pin(async move {
            let _ = self.frames.send(Frame::new(wire::BYE, 0, Vec::new()));
            let writer = self.writer.lock().ok().and_then(|mut w| w.take());
            if let Some(writer) = writer {
                let _ = tokio::time::timeout(std::time::Duration::from_secs(5), writer).await;
            }
        })
    }
}
