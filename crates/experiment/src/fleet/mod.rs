//! Several gun hosts as one generator, over SSH: each cell's rate split across them, every
//! gun starting at one instant, each writing its shard of the cell's run group to the shared
//! PostgreSQL store, where the shards merge exactly (`store::group`).
//!
//! Modules: [`spec`] (`[guns]` in an experiment file), [`ssh`] (one multiplexed OpenSSH
//! connection a gun). What the runner sends `loadgen gun` on a gun is an
//! [`order::GunRequest`], one JSON line on its standard input: nothing but `loadgen gun` is on
//! the remote command line, and everything secret travels in the request. Standard input stays
//! open for the whole attack: when it closes (the runner stopped it, or the SSH connection was
//! lost) the gun stops its attack as Ctrl-C would.
//!
//! Before the first cell, [`Fleet::prepare`] makes every gun ready: the same `loadgen` build
//! (its SHA-256 compared; this machine's copied over when the gun's differs), the gun's clock
//! measured against this one over its connection (NTP's way: the reply with the shortest
//! round trip; kept, and corrected for in each shard's start), its CPUs checked, the target
//! reached from it. A gun that fails any of these is refused, with why, before anything runs.

pub mod spec;
pub mod ssh;

use std::path::Path;
use std::process::Stdio;
use std::time::Duration;

use store::run::now_ns;

use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};

use crate::gun::{Attack, Fired};
use order::{GunCheck as Check, GunRequest, Order};
use spec::Resolved;
use ssh::Link;

/// How far ahead of now the guns are told to start: a session over the open connection,
/// `loadgen` started, the store and the probe reached, with room to spare.
const START_AHEAD: Duration = Duration::from_secs(3);
/// How long past its end a shard may take to report (its summary, its last writes) before it
/// is told to stop, and again before its session is ended.
const SHARD_GRACE: Duration = Duration::from_secs(60);

/// Where a copied `loadgen` goes on a gun.
const CACHE: &str = "$HOME/.cache/showdown";

/// Why the guns could not be made ready or fired.
#[derive(Debug, thiserror::Error)]
pub enum FleetError {
    #[error("cannot run ssh: {0} (install OpenSSH's client)")]
    NoSsh(std::io::Error),
    #[error("gun {gun}: cannot connect over SSH: {why}")]
    Connect { gun: String, why: String },
    #[error("gun {gun}: {why}")]
    Remote { gun: String, why: String },
    #[error("{0}")]
    Local(String),
}

/// One gun, ready.
#[derive(Debug)]
pub struct RemoteGun {
    pub link: Link,
    /// `loadgen` there (a shell word: a path, `$HOME` allowed).
    pub loadgen: String,
    /// Its clock minus this one's, and the half round trip that bounds the measurement.
    pub offset_ns: i64,
    pub uncertainty_ns: i64,
    /// What it said of itself.
    pub check: Check,
    /// Whether this machine's build was copied there.
    pub copied: bool,
}

impl RemoteGun {
    /// `loadgen gun` there, its pipes ours: an order in, the attack's output back.
    fn order_session(&self) -> tokio::process::Command {
        let mut command = self.link.command(&format!("{} gun", word(&self.loadgen)));
        command
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(true);
        command
    }
}

/// The guns of an experiment, ready.
#[derive(Debug)]
pub struct Fleet {
    pub guns: Vec<RemoteGun>,
    cpus: Option<String>,
    threads: Option<u32>,
    store_env_file: Option<String>,
    ssh_config: Option<std::path::PathBuf>,
    /// `[guns] loadgen`, as given.
    loadgen: Option<String>,
    /// The control sockets' directory (private, short: a socket path has 108 bytes).
    _dir: tempfile::TempDir,
}

/// One gun's part of an attack.
#[derive(Debug, Clone)]
pub struct Shot {
    pub gun: String,
    /// The shard's run id in the store.
    pub run_id: String,
    /// Its loadgen's result, or why there is none (the connection lost, the gun killed).
    pub fired: Result<Fired, String>,
}

/// The SHA-256 of a binary: one build, not only one version.
pub fn build_of(path: &Path) -> std::io::Result<String> {
    use sha2::Digest;
    let mut file = std::fs::File::open(path)?;
    let mut hash = sha2::Sha256::new();
    std::io::copy(&mut file, &mut hash)?;
    Ok(hex::encode(hash.finalize()))
}

/// A shell word for the gun's shell: the path quoted, `$HOME` left to expand.
fn word(path: &str) -> String {
    let quoted = format!("'{}'", path.replace('\'', r"'\''"));
    match path.strip_prefix("$HOME/") {
        Some(rest) => format!("\"$HOME\"/'{}'", rest.replace('\'', r"'\''")),
        None => quoted,
    }
}

impl Fleet {
    /// Connects to every gun and makes it ready (see the module's doc); `reach` is the
    /// target's URL, to be reached from every gun.
    pub async fn prepare(
        guns: &Resolved,
        cpus: Option<&probe::cpus::CpuList>,
        threads: Option<u32>,
        loadgen: Option<&str>,
        tolerance: Duration,
        local: &Path,
        reach: Option<&str>,
    ) -> Result<Fleet, FleetError> {
        let store_env_file = guns.store_env_file.clone();
        let resolved = guns;
        let dir = tempfile::Builder::new()
            .prefix("sd-guns-")
            .tempdir_in("/tmp")
            .map_err(|e| FleetError::Local(format!("cannot make a directory for SSH: {e}")))?;
        let build = build_of(local)
            .map_err(|e| FleetError::Local(format!("cannot read {}: {e}", local.display())))?;
        let mut tasks = tokio::task::JoinSet::new();
        for (n, destination) in guns.destinations.iter().enumerate() {
            let destination = destination.clone();
            let config = guns.ssh_config.clone();
            let sockets = dir.path().to_path_buf();
            let local = local.to_path_buf();
            let build = build.clone();
            let loadgen = loadgen.map(str::to_string);
            let reach = reach.map(str::to_string);
            let cpus = cpus.cloned();
            tasks.spawn(async move {
                let link = Link::open(&destination, config.as_deref(), &sockets, n).await?;
                let gun = ready(link, &local, &build, loadgen, reach.as_deref()).await?;
                if let Some(cpus) = &cpus {
                    let have: probe::cpus::CpuList = gun.check.cpus.parse().unwrap_or_default();
                    if cpus.intersection(&have).len() != cpus.len() {
                        return Err(FleetError::Remote {
                            gun: destination,
                            why: format!(
                                "[guns] cpus = {cpus}, but it may run on CPU {} only",
                                gun.check.cpus
                            ),
                        });
                    }
                }
                Ok((n, gun))
            });
        }
        let mut ready_guns = Vec::new();
        let mut first_error = None;
        while let Some(joined) = tasks.join_next().await {
            match joined {
                Ok(Ok(gun)) => ready_guns.push(gun),
                Ok(Err(e)) => {
                    first_error.get_or_insert(e);
                }
                Err(e) => {
                    first_error.get_or_insert(FleetError::Local(e.to_string()));
                }
            }
        }
        ready_guns.sort_by_key(|(n, _)| *n);
        let guns: Vec<RemoteGun> = ready_guns.into_iter().map(|(_, g)| g).collect();
        if let Some(e) = first_error {
            for g in guns {
                g.link.close().await;
            }
            return Err(e);
        }
        for g in &guns {
            if g.offset_ns.unsigned_abs() as u128 > tolerance.as_nanos() {
                let why = format!(
                    "its clock is {} off this machine's (more than clock_tolerance, {}): keep both with NTP (chrony) and run again",
                    signed_ms(g.offset_ns),
                    humantime::format_duration(tolerance)
                );
                let gun = g.link.destination.clone();
                for g in guns {
                    g.link.close().await;
                }
                return Err(FleetError::Remote { gun, why });
            }
        }
        Ok(Fleet {
            guns,
            cpus: cpus.map(|c| c.to_string()),
            threads,
            store_env_file,
            ssh_config: resolved.ssh_config.clone(),
            loadgen: loadgen.map(str::to_string),
            _dir: dir,
        })
    }

    /// `base` (a plain-HTTP URL) as this machine reaches it through the first gun: the runner's
    /// own checks of a target (its contract, its readiness) go where the guns' requests go, a
    /// target on the lab's private network included. HTTPS is reached directly (a forwarded
    /// port would not carry the name its certificate is for).
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
        let local = gun
            .link
            .forward(host.trim_matches(['[', ']']), port)
            .await?;
        let path = uri.path_and_query().map(|p| p.as_str()).unwrap_or("");
        let path = if path == "/" && !base.ends_with('/') {
            ""
        } else {
            path
        };
        Ok(format!("http://127.0.0.1:{local}{path}"))
    }

    /// The same guns, for a search order (a search cell's generator is the guns too).
    pub fn guns(&self) -> order::Guns {
        order::Guns {
            ssh: self
                .guns
                .iter()
                .map(|g| g.link.destination.clone())
                .collect(),
            ssh_config: self.ssh_config.as_ref().map(|c| c.display().to_string()),
            cpus: self.cpus.clone(),
            threads: self.threads,
            loadgen: self.loadgen.clone(),
            store_env_file: self.store_env_file.clone(),
            ..order::Guns::default()
        }
    }

    /// One line a gun: how it was found.
    pub fn describe(&self) -> Vec<String> {
        self.guns
            .iter()
            .map(|g| {
                format!(
                    "gun {}: loadgen {} ({}), clock {} ±{}, CPU {}{}",
                    g.link.destination,
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

    /// Fires `attack` from every gun as shards of the run group `attack.run_id`, all starting
    /// at one instant; `stop` turning true stops them all (their standard input closed).
    pub async fn fire(
        &self,
        attack: &Attack,
        stop: tokio::sync::watch::Receiver<bool>,
    ) -> Result<Vec<Shot>, FleetError> {
        let order = attack
            .order()
            .map_err(|e| FleetError::Local(e.to_string()))?;
        // A fixed load's shard is due once its time is up; a search's length is its own.
        let limit = match (&attack.search, attack.load.duration) {
            (None, Some(load)) => {
                Some(START_AHEAD + attack.pre_roll + load + attack.post_roll + SHARD_GRACE)
            }
            _ => None,
        };
        self.volley(&order, &attack.run_id, stop, limit).await
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
            gun.link.destination.clone(),
        );
        part.keeping.labels.insert(
            store::vocabulary::label::GUN_CLOCK.into(),
            format!("{} ±{}", signed_ms(gun.offset_ns), ms(gun.uncertainty_ns)),
        );
        part
    }

    /// Fires `order` from every gun as shards of the run group `group`.
    pub async fn volley(
        &self,
        order: &Order,
        group: &str,
        stop: tokio::sync::watch::Receiver<bool>,
        limit: Option<Duration>,
    ) -> Result<Vec<Shot>, FleetError> {
        let deadline = limit.map(|l| tokio::time::Instant::now() + l);
        let start_ns = now_ns() + i64::try_from(START_AHEAD.as_nanos()).unwrap_or(0);
        let mut tasks = tokio::task::JoinSet::new();
        for (i, gun) in self.guns.iter().enumerate() {
            let part = self.shard(order, i, group, start_ns);
            let run_id = part.keeping.run_id.clone().unwrap_or_default();
            let request = GunRequest::Fire {
                order: Box::new(part),
                cpus: self.cpus.clone(),
            };
            let command = gun.order_session();
            let destination = gun.link.destination.clone();
            let mut stop = stop.clone();
            tasks.spawn(async move {
                let fired = shoot(command, &request, &mut stop, deadline).await;
                (
                    i,
                    Shot {
                        gun: destination,
                        run_id,
                        fired,
                    },
                )
            });
        }
        let mut shots = Vec::new();
        while let Some(joined) = tasks.join_next().await {
            match joined {
                Ok(shot) => shots.push(shot),
                Err(e) => return Err(FleetError::Local(e.to_string())),
            }
        }
        shots.sort_by_key(|(i, _)| *i);
        Ok(shots.into_iter().map(|(_, s)| s).collect())
    }

    /// Fires `order` from the first gun alone, unsharded (a trickle between a search's steps,
    /// a first estimate): its result.
    pub async fn single(
        &self,
        order: &Order,
        stop: tokio::sync::watch::Receiver<bool>,
    ) -> Result<Fired, FleetError> {
        let Some(gun) = self.guns.first() else {
            return Err(FleetError::Local("no guns".into()));
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
        shoot(gun.order_session(), &request, &mut stop, None)
            .await
            .map_err(|why| FleetError::Remote {
                gun: gun.link.destination.clone(),
                why,
            })
    }

    /// Ends every connection.
    pub async fn close(self) {
        for g in self.guns {
            g.link.close().await;
        }
    }
}

/// One gun's shard: the order sent, its output read; standard input held open until the
/// attack ends or `stop` turns true.
async fn shoot(
    mut command: tokio::process::Command,
    request: &GunRequest,
    stop: &mut tokio::sync::watch::Receiver<bool>,
    deadline: Option<tokio::time::Instant>,
) -> Result<Fired, String> {
    let mut child = command
        .spawn()
        .map_err(|e| format!("cannot run ssh: {e}"))?;
    let session = child
        .id()
        .and_then(|p| rustix::process::Pid::from_raw(p as i32));
    let mut stdin = child.stdin.take();
    let line = order::line(request);
    if let Some(s) = stdin.as_mut() {
        s.write_all(&line)
            .await
            .map_err(|e| format!("cannot send the order: {e}"))?;
        let _ = s.flush().await;
    }
    let mut out = child.stdout.take();
    let mut err = child.stderr.take();
    let read_out = async {
        let mut buf = Vec::new();
        if let Some(o) = out.as_mut() {
            let _ = o.read_to_end(&mut buf).await;
        }
        buf
    };
    let read_err = async {
        let mut buf = Vec::new();
        if let Some(e) = err.as_mut() {
            let _ = e.read_to_end(&mut buf).await;
        }
        buf
    };
    let waiting = async {
        let (o, e) = tokio::join!(read_out, read_err);
        (o, e, child.wait().await)
    };
    tokio::pin!(waiting);
    // Past the deadline the gun is told to stop (its input closes); if its session has not
    // ended SHARD_GRACE later, ssh is killed: a gun that hangs does not hold the runner.
    let far = tokio::time::Instant::now() + Duration::from_secs(365 * 86_400);
    let timer = tokio::time::sleep_until(deadline.unwrap_or(far));
    tokio::pin!(timer);
    let mut overdue = 0;
    let (stdout, stderr, status) = loop {
        tokio::select! {
            done = &mut waiting => break done,
            changed = stop.changed(), if stdin.is_some() => {
                if changed.is_err() || *stop.borrow() {
                    // The gun stops its attack as Ctrl-C would when its input closes.
                    stdin = None;
                }
            }
            () = &mut timer, if overdue < 2 => {
                overdue += 1;
                if overdue == 1 {
                    stdin = None;
                    timer.as_mut().reset(tokio::time::Instant::now() + SHARD_GRACE);
                } else if let Some(pid) = session {
                    let _ = rustix::process::kill_process_group(pid, rustix::process::Signal::KILL);
                }
            }
        }
    };
    drop(stdin);
    if overdue > 0 {
        return Err(format!(
            "no result by the shard's end and {}s more: {}",
            SHARD_GRACE.as_secs(),
            if overdue > 1 {
                "its session was ended"
            } else {
                "it was told to stop"
            }
        ));
    }
    let status = status.map_err(|e| e.to_string())?;
    let fired = Fired::of(&stdout, &stderr, status.code());
    match status.code() {
        Some(0) | Some(3) => Ok(fired),
        // ssh's own failure: the connection, not the attack.
        Some(255) => Err(format!(
            "the SSH connection was lost: {}",
            if fired.said.is_empty() {
                "ssh exited 255".to_string()
            } else {
                fired.said
            }
        )),
        Some(code) => Err(format!("loadgen exited {code}: {}", fired.said)),
        None => Err(format!("ssh was killed: {}", fired.said)),
    }
}

fn ms(ns: i64) -> String {
    format!("{:.2} ms", ns as f64 / 1e6)
}

fn signed_ms(ns: i64) -> String {
    format!("{:+.2} ms", ns as f64 / 1e6)
}

/// The gun's `loadgen`: this build, found or copied; its clock measured.
async fn ready(
    link: Link,
    local: &Path,
    build: &str,
    loadgen: Option<String>,
    reach: Option<&str>,
) -> Result<RemoteGun, FleetError> {
    let cached = format!("{CACHE}/loadgen-{}", &build[..16.min(build.len())]);
    let candidates = [loadgen.unwrap_or_else(|| "loadgen".into()), cached.clone()];
    let mut seen = None;
    let mut found = None;
    for c in &candidates {
        if let Some(check) = check(&link, c, reach).await? {
            if check.build == build {
                found = Some((c.clone(), check, false));
                break;
            }
            seen.get_or_insert(check);
        }
    }
    if found.is_none() {
        let arch = match &seen {
            Some(c) => c.arch.clone(),
            None => {
                let out = link.run("uname -m", b"", Duration::from_secs(10)).await?;
                String::from_utf8_lossy(&out.stdout).trim().to_string()
            }
        };
        if arch != std::env::consts::ARCH {
            return Err(FleetError::Remote {
                gun: link.destination.clone(),
                why: format!(
                    "it is {arch}, this machine's loadgen is {}: build loadgen there and name it in [guns] loadgen",
                    std::env::consts::ARCH
                ),
            });
        }
        let bytes = std::fs::read(local)
            .map_err(|e| FleetError::Local(format!("cannot read {}: {e}", local.display())))?;
        let sent = {
            use sha2::Digest;
            hex::encode(sha2::Sha256::digest(&bytes))
        };
        if sent != build {
            return Err(FleetError::Local(format!(
                "{} changed while the guns were prepared (a build?): run again once it is done",
                local.display()
            )));
        }
        // A name of its own for each copy (two runners copying at once do not mix), checked
        // against the hash of what was sent before it takes the build's name: a copy cut
        // short (the connection lost, the runner stopped) is removed, never installed.
        let copy = format!(
            "mkdir -p {dir} && t=$(mktemp {dir}/.loadgen-XXXXXX) && {{ cat > \"$t\" && echo {sent}'  '\"$t\" | sha256sum -c --status && chmod 755 \"$t\" && mv -f \"$t\" {to}; }} || {{ rm -f \"$t\"; exit 1; }}",
            dir = word(CACHE),
            to = word(&cached)
        );
        let out = link.run(&copy, &bytes, Duration::from_secs(300)).await?;
        if !out.status.success() {
            return Err(FleetError::Remote {
                gun: link.destination.clone(),
                why: format!(
                    "cannot copy loadgen to {cached}: {}",
                    ssh::last_line(&String::from_utf8_lossy(&out.stderr)).unwrap_or_default()
                ),
            });
        }
        match check(&link, &cached, reach).await? {
            Some(c) if c.build == build => found = Some((cached.clone(), c, true)),
            _ => {
                return Err(FleetError::Remote {
                    gun: link.destination.clone(),
                    why: format!("the loadgen copied to {cached} is not this build"),
                })
            }
        }
    }
    let Some((loadgen, check, copied)) = found else {
        return Err(FleetError::Local("no loadgen".into()));
    };
    if let Some(Err(why)) = &check.reach {
        return Err(FleetError::Remote {
            gun: link.destination.clone(),
            why: format!("it cannot reach the target: {why}"),
        });
    }
    let (offset_ns, uncertainty_ns) = clock(&link, &loadgen).await?;
    Ok(RemoteGun {
        link,
        loadgen,
        offset_ns,
        uncertainty_ns,
        check,
        copied,
    })
}

/// `loadgen gun` asked to check there: `None` when there is no such loadgen (or not one that
/// knows this request).
async fn check(
    link: &Link,
    loadgen: &str,
    reach: Option<&str>,
) -> Result<Option<Check>, FleetError> {
    let request = GunRequest::Check {
        reach: reach.map(str::to_string),
    };
    let out = link
        .run(
            &format!("{} gun", word(loadgen)),
            &order::line(&request),
            Duration::from_secs(30),
        )
        .await?;
    if out.status.code() == Some(255) {
        return Err(FleetError::Remote {
            gun: link.destination.clone(),
            why: format!(
                "the SSH connection failed: {}",
                ssh::last_line(&String::from_utf8_lossy(&out.stderr)).unwrap_or_default()
            ),
        });
    }
    Ok(serde_json::from_slice(&out.stdout).ok())
}

/// The gun's clock against this one: `loadgen gun` asked for its clock answers each further
/// line with its time;
/// of 16 exchanges over one session, the one with the shortest round trip, whose midpoint is
/// nearest the gun's reading.
async fn clock(link: &Link, loadgen: &str) -> Result<(i64, i64), FleetError> {
    let failed = |why: String| FleetError::Remote {
        gun: link.destination.clone(),
        why: format!("cannot read its clock: {why}"),
    };
    let mut child = link
        .command(&format!("{} gun", word(loadgen)))
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .map_err(FleetError::NoSsh)?;
    let (Some(mut input), Some(output)) = (child.stdin.take(), child.stdout.take()) else {
        return Err(failed("no pipes".into()));
    };
    let mut lines = BufReader::new(output).lines();
    let mut best: Option<(i64, i64)> = None;
    let exchange = async {
        input
            .write_all(&order::line(&GunRequest::Clock))
            .await
            .map_err(|e| failed(e.to_string()))?;
        for _ in 0..16 {
            // The round trip on the monotonic clock (a wall clock stepped or slewed meanwhile
            // would bend it), the wall clock read once, for the midpoint.
            let sent = std::time::Instant::now();
            let t0 = now_ns();
            input
                .write_all(b"t\n")
                .await
                .map_err(|e| failed(e.to_string()))?;
            input.flush().await.map_err(|e| failed(e.to_string()))?;
            let line = lines
                .next_line()
                .await
                .map_err(|e| failed(e.to_string()))?
                .ok_or_else(|| failed("it closed the session".into()))?;
            let rtt = i64::try_from(sent.elapsed().as_nanos()).unwrap_or(i64::MAX);
            let theirs: i64 = line
                .trim()
                .parse()
                .map_err(|_| failed(format!("{line:?}")))?;
            let offset = theirs.saturating_sub(t0.saturating_add(rtt / 2));
            if best.is_none_or(|(_, r)| rtt < r) {
                best = Some((offset, rtt));
            }
        }
        Ok::<(), FleetError>(())
    };
    tokio::time::timeout(Duration::from_secs(20), exchange)
        .await
        .map_err(|_| failed("no answer within 20 s".into()))??;
    drop(input);
    let _ = child.wait().await;
    let (offset, rtt) = best.ok_or_else(|| failed("no exchange".into()))?;
    Ok((offset, rtt / 2))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_path_is_one_word_on_the_guns_shell() {
        assert_eq!(word("/usr/bin/loadgen"), "'/usr/bin/loadgen'");
        assert_eq!(word("$HOME/.cache/x"), "\"$HOME\"/'.cache/x'");
        assert_eq!(word("a'b"), "'a'\\''b'");
    }
}
