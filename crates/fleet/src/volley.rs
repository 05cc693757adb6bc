//! The guns, ready ([`Fleet`]): an order fired from every gun as the shards of one run group,
//! all starting at one instant ([`Fleet::volley`]), or from the first gun alone
//! ([`Fleet::single`]); and a target reached through the first gun ([`Fleet::reach`]).
//!
//! Each shard is an `order::GunRequest::Fire` on the standard input of `loadgen gun` over a
//! session of the gun's link, held open until the attack ends: its closing stops the gun's
//! attack as Ctrl-C would. A fixed load's shard that has not reported by its end and a minute
//! more is told to stop; if its session has not ended a minute later, it is ended: a gun that hangs does not hold the runner.

use std::time::Duration;

use order::{GunRequest, Order};
use store::run::now_ns;
use tokio::io::AsyncWriteExt;

use crate::error::{FleetError, ShotError};
use crate::fired::Fired;
use crate::ready::ReadyGun;
use crate::said::{ms, signed_ms};
use crate::transport::{Link, Session, Transport};

/// How far ahead of now the guns are told to start: a session over the open link, `loadgen`
/// started, the store and the probe reached, with room to spare.
const START_AHEAD: Duration = Duration::from_secs(3);
/// How long past its end a shard may take to report (its summary, its last writes) before it
/// is told to stop, and again before its session is ended.
const SHARD_GRACE: Duration = Duration::from_secs(60);

/// The guns, ready.
#[derive(Debug)]
pub struct Fleet {
    pub(crate) guns: Vec<ReadyGun>,
    /// How they are reached, in words ("over SSH").
    pub(crate) over: &'static str,
    /// Who they are, resolved, as an order names them.
    pub(crate) hosts: order::GunHosts,
    pub(crate) cpus: Option<String>,
    pub(crate) threads: Option<u32>,
    pub(crate) store_env_file: Option<String>,
    /// `[guns] loadgen`, as given.
    pub(crate) loadgen: Option<String>,
    pub(crate) clock_tolerance_ns: Option<u64>,
    /// What the links share (the SSH control sockets' directory), kept until they close.
    pub(crate) _transport: Box<dyn Transport>,
}

/// One gun's part of an attack.
#[derive(Debug)]
pub struct Shot {
    pub gun: String,
    /// The shard's run id in the store.
    pub run_id: String,
    /// Its loadgen's result, or why there is none (the link lost, the gun killed).
    pub fired: Result<Fired, ShotError>,
}

impl Fleet {
    /// How many guns.
    pub fn count(&self) -> usize {
        self.guns.len()
    }

    /// The guns' names, in order.
    pub fn names(&self) -> Vec<&str> {
        self.guns.iter().map(|g| g.link.name()).collect()
    }

    /// How they are reached, in words ("over SSH").
    pub fn over(&self) -> &'static str {
        self.over
    }

    /// The same guns, for a search order (a search cell's generator is the guns too).
    pub fn guns(&self) -> order::Guns {
        order::Guns {
            hosts: self.hosts.clone(),
            cpus: self.cpus.clone(),
            threads: self.threads,
            loadgen: self.loadgen.clone(),
            store_env_file: self.store_env_file.clone(),
            clock_tolerance_ns: self.clock_tolerance_ns,
        }
    }

    /// One line a gun: how it was found.
    pub fn describe(&self) -> Vec<String> {
        self.guns
            .iter()
            .map(|g| {
                format!(
                    "gun {}: loadgen {} ({}), clock {} ±{}, CPU {}{}",
                    g.link.name(),
                    g.check.version,
                    if g.copied {
                        "this build, copied"
                    } else {
                        "this build"
                    },
                    signed_ms(g.offset_ns),
                    ms(g.uncertainty_ns),
                    g.check.cpus,
                    self.cpus
                        .as_ref()
                        .map(|c| format!(", the generator held to CPU {c}"))
                        .unwrap_or_default()
                )
            })
            .collect()
    }

    /// `base` (a plain-HTTP URL) as this machine reaches it through the first gun: the runner's
    /// own checks of a target (its contract, its readiness) go where the guns' requests go, a
    /// target on the lab's private network included. HTTPS is reached directly (a forwarded
    /// port would not carry the name its certificate is for), and so is every target when the
    /// transport does not forward.
    pub async fn reach(&self, base: &str) -> Result<String, FleetError> {
        let Some(gun) = self.guns.first() else {
            return Ok(base.to_string());
        };
        let Ok(uri) = base.parse::<http::Uri>() else {
            return Ok(base.to_string());
        };
        if uri.scheme_str() != Some("http") {
            return Ok(base.to_string());
        }
        let Some(host) = uri.host() else {
            return Ok(base.to_string());
        };
        let port = uri.port_u16().unwrap_or(80);
        let Some(local) = gun
            .link
            .forward(host.trim_matches(['[', ']']), port)
            .await?
        else {
            return Ok(base.to_string());
        };
        let path = uri.path_and_query().map(|p| p.as_str()).unwrap_or("");
        let path = if path == "/" && !base.ends_with('/') {
            ""
        } else {
            path
        };
        Ok(format!("http://127.0.0.1:{local}{path}"))
    }

    /// Gun `i`'s part of `order` in the run group `group` started at `start_ns` (this
    /// machine's clock), kept under an id of its own.
    fn shard(&self, order: &Order, i: usize, group: &str, start_ns: i64) -> Order {
        let gun = &self.guns[i];
        // The gun's clock reads the common instant as this much later or earlier; an offset
        // within its measurement's uncertainty is no offset known.
        let offset = if gun.offset_ns.abs() > gun.uncertainty_ns {
            gun.offset_ns
        } else {
            0
        };
        let mut part = order.for_shard(i as u32, self.guns.len() as u32, group, start_ns + offset);
        part.keeping.run_id = Some(store::run::RunMeta::new_id());
        if let Some(t) = self.threads {
            part.pacing.threads = Some(t);
        }
        if let (Some(path), Some(_)) = (&self.store_env_file, &part.keeping.store) {
            part.keeping.store = Some(order::StoreAt::GunFile { path: path.clone() });
        }
        part.keeping.labels.insert(
            store::vocabulary::label::GUN.into(),
            gun.link.name().to_string(),
        );
        part.keeping.labels.insert(
            store::vocabulary::label::GUN_CLOCK.into(),
            format!("{} ±{}", signed_ms(gun.offset_ns), ms(gun.uncertainty_ns)),
        );
        part
    }

    /// Fires `order` from every gun as shards of the run group `group`, all starting at one
    /// instant; `stop` turning true stops them all (their standard input closed). `length`:
    /// how long the attack runs, when that is known (a fixed load's pre-roll, load and
    /// post-roll): a shard is due by then, a few seconds after it is sent.
    pub async fn volley(
        &self,
        order: &Order,
        group: &str,
        stop: tokio::sync::watch::Receiver<bool>,
        length: Option<Duration>,
    ) -> Result<Vec<Shot>, FleetError> {
        let deadline = length.map(|l| tokio::time::Instant::now() + START_AHEAD + l + SHARD_GRACE);
        let start_ns = now_ns() + i64::try_from(START_AHEAD.as_nanos()).unwrap_or(0);
        let shots = self.guns.iter().enumerate().map(|(i, gun)| {
            let part = self.shard(order, i, group, start_ns);
            let run_id = part.keeping.run_id.clone().unwrap_or_default();
            let request = GunRequest::Fire {
                order: Box::new(part),
                cpus: self.cpus.clone(),
            };
            let mut stop = stop.clone();
            async move {
                let fired = shoot(&*gun.link, &gun.loadgen, &request, &mut stop, deadline).await;
                Shot {
                    gun: gun.link.name().to_string(),
                    run_id,
                    fired,
                }
            }
        });
        Ok(futures_util::future::join_all(shots).await)
    }

    /// Fires `order` from the first gun alone, unsharded (a trickle between a search's steps,
    /// a first estimate): its result.
    pub async fn single(
        &self,
        order: &Order,
        stop: tokio::sync::watch::Receiver<bool>,
    ) -> Result<Fired, FleetError> {
        let Some(gun) = self.guns.first() else {
            return Err(FleetError::NoGuns);
        };
        let mut order = order.clone();
        if let Some(t) = self.threads {
            order.pacing.threads = Some(t);
        }
        let request = GunRequest::Fire {
            order: Box::new(order),
            cpus: self.cpus.clone(),
        };
        let mut stop = stop;
        shoot(&*gun.link, &gun.loadgen, &request, &mut stop, None)
            .await
            .map_err(|why| FleetError::Shot {
                gun: gun.link.name().to_string(),
                why: Box::new(why),
            })
    }

    /// Ends every link.
    pub async fn close(self) {
        for g in self.guns {
            g.link.close().await;
        }
    }
}

/// One gun's shard: the request sent over a session, its output read; standard input held
/// open until the attack ends or `stop` turns true.
async fn shoot(
    link: &dyn Link,
    loadgen: &str,
    request: &GunRequest,
    stop: &mut tokio::sync::watch::Receiver<bool>,
    deadline: Option<tokio::time::Instant>,
) -> Result<Fired, ShotError> {
    let session = link
        .session(loadgen)
        .map_err(|e| ShotError::Session(Box::new(e)))?;
    let (stdout, stderr, status) = attend(session, request, stop, deadline).await?;
    let code = status.map_err(ShotError::Wait)?;
    verdict(link, code, Fired::of(&stdout, &stderr, code))
}

/// A session's output, its errors (both as kept) and its exit code (`None`: killed).
type Ended = (Vec<u8>, Vec<u8>, std::io::Result<Option<i32>>);

/// The request sent over `session`, then its output, its errors and its end read; overdue past
/// `deadline`, it is the error.
async fn attend(
    session: Session,
    request: &GunRequest,
    stop: &mut tokio::sync::watch::Receiver<bool>,
    deadline: Option<tokio::time::Instant>,
) -> Result<Ended, ShotError> {
    let Session {
        input,
        mut output,
        mut errors,
        ended,
        mut kill,
    } = session;
    let mut stdin = Some(input);
    if let Some(s) = stdin.as_mut() {
        s.write_all(&order::line(request))
            .await
            .map_err(ShotError::Send)?;
        let _ = s.flush().await;
    }
    let read_out = crate::fired::read_capped(&mut output, crate::fired::KEEP_OUTPUT, false);
    let read_err = crate::fired::read_capped(&mut errors, crate::fired::KEEP_ERRORS, true);
    let waiting = async {
        let (o, e) = tokio::join!(read_out, read_err);
        (o, e, ended.await)
    };
    tokio::pin!(waiting);
    let (done, overdue) = watch(waiting, &mut stdin, stop, deadline, &mut *kill).await;
    drop(stdin);
    if overdue > 0 {
        return Err(ShotError::Overdue {
            grace: SHARD_GRACE,
            ended: overdue > 1,
        });
    }
    Ok(done)
}

/// `waiting` awaited, `stdin` closed when `stop` turns true: with how overdue it was (1: past
/// `deadline`, its input closed; 2: its session ended by `kill` SHARD_GRACE later).
async fn watch<W: std::future::Future>(
    mut waiting: std::pin::Pin<&mut W>,
    stdin: &mut Option<Box<dyn tokio::io::AsyncWrite + Send + Unpin>>,
    stop: &mut tokio::sync::watch::Receiver<bool>,
    deadline: Option<tokio::time::Instant>,
    kill: &mut (dyn FnMut() + Send),
) -> (W::Output, u8) {
    // Past the deadline the gun is told to stop (its input closes); if its session has not
    // ended SHARD_GRACE later, it is ended: a gun that hangs does not hold the runner.
    let far = tokio::time::Instant::now() + Duration::from_secs(365 * 86_400);
    let timer = tokio::time::sleep_until(deadline.unwrap_or(far));
    tokio::pin!(timer);
    let mut overdue = 0;
    let done = loop {
        tokio::select! {
            done = &mut waiting => break done,
            changed = stop.changed(), if stdin.is_some() => {
                if changed.is_err() || *stop.borrow() {
                    // The gun stops its attack as Ctrl-C would when its input closes.
                    *stdin = None;
                }
            }
            () = &mut timer, if overdue < 2 => {
                overdue += 1;
                if overdue == 1 {
                    *stdin = None;
                    timer.as_mut().reset(tokio::time::Instant::now() + SHARD_GRACE);
                } else {
                    kill();
                }
            }
        }
    };
    (done, overdue)
}

/// The shard's result from its exit `code`: the attack's, or the link's own failure, or the
/// gun's.
fn verdict(link: &dyn Link, code: Option<i32>, fired: Fired) -> Result<Fired, ShotError> {
    match code {
        Some(0) | Some(3) => Ok(fired),
        // The link's own failure, not the attack's.
        code if link.lost(code) => Err(ShotError::Lost {
            link: link.kind(),
            said: if fired.said.is_empty() {
                format!(
                    "{} exited {}",
                    link.program(),
                    code.map_or_else(|| "on a signal".to_string(), |c| c.to_string())
                )
            } else {
                fired.said
            },
        }),
        Some(code) => Err(ShotError::Exited {
            code,
            said: fired.said,
        }),
        None => Err(ShotError::Killed {
            program: link.program(),
            said: fired.said,
        }),
    }
}
