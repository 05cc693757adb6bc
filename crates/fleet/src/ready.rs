//! One gun made ready over its [`Link`], whatever the transport: this build found where the
//! link says it may be (or installed there), checked by a `GunRequest::Check` (its SHA-256, its
//! CPUs, whether it reaches the target), and its clock measured by a `GunRequest::Clock`.

use std::path::Path;
use std::time::Duration;

use order::{GunCheck, GunRequest};
use store::run::now_ns;
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};

use crate::error::{ClockFault, FleetError, GunFault};
use crate::said::last_line;
use crate::transport::{Link, Session};

/// How long a gun has to answer a check.
const CHECK: Duration = Duration::from_secs(30);
/// How long a gun has to answer the clock's exchanges.
const CLOCK: Duration = Duration::from_secs(20);
/// The clock's exchanges over one session.
const EXCHANGES: usize = 16;

/// One gun, ready.
#[derive(Debug)]
pub struct ReadyGun {
    pub link: Box<dyn Link>,
    /// `loadgen` there (a path of the gun's; `$HOME` allowed).
    pub loadgen: String,
    /// Its clock minus this one's, and the half round trip that bounds the measurement.
    pub offset_ns: i64,
    pub uncertainty_ns: i64,
    /// What it said of itself.
    pub check: GunCheck,
    /// Whether this machine's build was installed there.
    pub copied: bool,
}

/// The gun's `loadgen`: this build (`local`, whose SHA-256 is `build`), found or installed;
/// `reach` checked from it; its clock measured. `asked`: `[guns] loadgen`. A gun refused is
/// closed before the refusal is returned (a pod told goodbye, an SSH master ended), not left to
/// a drop that the process's exit may outrun.
pub(crate) async fn ready(
    link: Box<dyn Link>,
    local: &Path,
    build: &str,
    asked: Option<&str>,
    reach: Option<&str>,
) -> Result<ReadyGun, FleetError> {
    match readied(&*link, local, build, asked, reach).await {
        Ok(Readied {
            loadgen,
            offset_ns,
            uncertainty_ns,
            check,
            copied,
        }) => Ok(ReadyGun {
            link,
            loadgen,
            offset_ns,
            uncertainty_ns,
            check,
            copied,
        }),
        Err(e) => {
            link.close().await;
            Err(e)
        }
    }
}

/// What [`ready`] found of a gun.
struct Readied {
    loadgen: String,
    offset_ns: i64,
    uncertainty_ns: i64,
    check: GunCheck,
    copied: bool,
}

async fn readied(
    link: &dyn Link,
    local: &Path,
    build: &str,
    asked: Option<&str>,
    reach: Option<&str>,
) -> Result<Readied, FleetError> {
    let mut seen: Option<GunCheck> = None;
    let mut found = None;
    for candidate in link.candidates(asked, build) {
        if let Some(check) = check(link, &candidate, reach).await? {
            if check.build == build {
                found = Some((candidate, check, false));
                break;
            }
            seen.get_or_insert(check);
        }
    }
    let (loadgen, check, copied) = match found {
        Some(found) => found,
        None => {
            let arch = seen.as_ref().map(|c| c.arch.as_str());
            let installed = link.install(local, build, arch).await?;
            match check(link, &installed, reach).await? {
                Some(c) if c.build == build => (installed, c, true),
                _ => {
                    return Err(FleetError::remote(
                        link.name(),
                        GunFault::NotThisBuild(installed),
                    ))
                }
            }
        }
    };
    if let Some(order::Reach::Unreachable { why }) = &check.reach {
        return Err(FleetError::remote(
            link.name(),
            GunFault::Unreachable(why.clone()),
        ));
    }
    let (offset_ns, uncertainty_ns) = clock(link, &loadgen).await?;
    Ok(Readied {
        loadgen,
        offset_ns,
        uncertainty_ns,
        check,
        copied,
    })
}

/// What a session said and how it ended.
struct Exchanged {
    output: Vec<u8>,
    errors: Vec<u8>,
    code: Option<i32>,
}

/// `loadgen gun` there run to its end with `input` on its standard input, within `limit`.
async fn exchange(
    link: &dyn Link,
    loadgen: &str,
    input: &[u8],
    limit: Duration,
) -> Result<Exchanged, FleetError> {
    let Session {
        input: mut stdin,
        mut output,
        mut errors,
        ended,
        kill: _,
    } = link.session(loadgen)?;
    let work = async {
        // A remote command that ends without reading its input (no such program on the gun)
        // closes the pipe: its exit status and output say why, not this write.
        match stdin.write_all(input).await {
            Err(e) if e.kind() != std::io::ErrorKind::BrokenPipe => return Err(e),
            _ => {}
        }
        let _ = stdin.shutdown().await;
        drop(stdin);
        let (out, err) = tokio::join!(
            crate::fired::read_capped(&mut output, crate::fired::KEEP_OUTPUT, false),
            crate::fired::read_capped(&mut errors, crate::fired::KEEP_ERRORS, true)
        );
        let code = ended.await?;
        Ok(Exchanged {
            output: out,
            errors: err,
            code,
        })
    };
    match tokio::time::timeout(limit, work).await {
        Ok(done) => done.map_err(|e| FleetError::remote(link.name(), GunFault::Io(e))),
        Err(_) => Err(FleetError::remote(
            link.name(),
            GunFault::Timeout {
                what: format!("{loadgen} gun"),
                limit,
            },
        )),
    }
}

/// `loadgen gun` at `loadgen` asked to check there: `None` when there is no such loadgen (or
/// not one that knows this request).
async fn check(
    link: &dyn Link,
    loadgen: &str,
    reach: Option<&str>,
) -> Result<Option<GunCheck>, FleetError> {
    let request = GunRequest::Check {
        reach: reach.map(str::to_string),
    };
    let out = exchange(link, loadgen, &order::line(&request), CHECK).await?;
    if link.lost(out.code) {
        return Err(FleetError::remote(
            link.name(),
            GunFault::LinkFailed {
                link: link.kind(),
                said: last_line(&String::from_utf8_lossy(&out.errors)).unwrap_or_default(),
            },
        ));
    }
    Ok(serde_json::from_slice(&out.output).ok())
}

/// The gun's clock against this one: `loadgen gun` asked for its clock answers each further
/// line with its time; of 16 exchanges over one session, the one with the shortest round
/// trip, whose midpoint is nearest the gun's reading.
async fn clock(link: &dyn Link, loadgen: &str) -> Result<(i64, i64), FleetError> {
    let failed = |why: ClockFault| FleetError::remote(link.name(), GunFault::Clock(why));
    let Session {
        mut input,
        output,
        mut errors,
        ended,
        kill: _,
    } = link.session(loadgen)?;
    // Each answer is one number of a few bytes: more than 64 a line, in all, is not read.
    let mut lines = BufReader::new(output.take(64 * (EXCHANGES as u64 + 1))).lines();
    let mut best: Option<(i64, i64)> = None;
    let exchange = async {
        input
            .write_all(&order::line(&GunRequest::Clock))
            .await
            .map_err(|e| failed(ClockFault::Io(e)))?;
        for _ in 0..EXCHANGES {
            // The round trip on the monotonic clock (a wall clock stepped or slewed meanwhile
            // would bend it), the wall clock read once, for the midpoint.
            let sent = std::time::Instant::now();
            let t0 = now_ns();
            input
                .write_all(b"t\n")
                .await
                .map_err(|e| failed(ClockFault::Io(e)))?;
            input.flush().await.map_err(|e| failed(ClockFault::Io(e)))?;
            let line = lines
                .next_line()
                .await
                .map_err(|e| failed(ClockFault::Io(e)))?
                .ok_or_else(|| failed(ClockFault::Closed))?;
            let rtt = i64::try_from(sent.elapsed().as_nanos()).unwrap_or(i64::MAX);
            let theirs: i64 = line
                .trim()
                .parse()
                .map_err(|_| failed(ClockFault::NotATime(line.clone())))?;
            let offset = theirs.saturating_sub(t0.saturating_add(rtt / 2));
            if best.is_none_or(|(_, r)| rtt < r) {
                best = Some((offset, rtt));
            }
        }
        Ok::<(), FleetError>(())
    };
    // What it says meanwhile is read and let go: a pipe nobody reads would stall it once full.
    let drain = async {
        let _ = tokio::io::copy(&mut errors, &mut tokio::io::sink()).await;
    };
    {
        let timed = tokio::time::timeout(CLOCK, exchange);
        tokio::pin!(timed);
        tokio::select! {
            done = &mut timed => done.map_err(|_| failed(ClockFault::Silent))??,
            () = drain => timed.await.map_err(|_| failed(ClockFault::Silent))??,
        }
    }
    let _ = input.shutdown().await;
    drop(input);
    let _ = ended.await;
    let (offset, rtt) = best.ok_or_else(|| failed(ClockFault::Closed))?;
    Ok((offset, rtt / 2))
}

/// How far a gun's clock may be from the runner's by default.
pub const CLOCK_TOLERANCE: std::time::Duration = std::time::Duration::from_millis(50);

/// The SHA-256 of a binary: one build, not only one version.
pub fn build_of(path: &std::path::Path) -> std::io::Result<String> {
    use sha2::Digest;
    let mut file = std::fs::File::open(path)?;
    let mut hash = sha2::Sha256::new();
    std::io::copy(&mut file, &mut hash)?;
    Ok(hex::encode(hash.finalize()))
}

/// This build's bytes (`local`, whose SHA-256 was `build` when the guns were prepared), for a
/// transport's [`Link::install`](crate::Link::install) to copy: refused when the file changed
/// since (a build ran meanwhile), so that what a gun is given is the build it was checked
/// against.
pub(crate) fn build_bytes(local: &Path, build: &str) -> Result<Vec<u8>, FleetError> {
    use sha2::Digest;
    let bytes = std::fs::read(local).map_err(|error| FleetError::Read {
        path: local.to_path_buf(),
        error,
    })?;
    if hex::encode(sha2::Sha256::digest(&bytes)) != build {
        return Err(FleetError::Changed(local.to_path_buf()));
    }
    Ok(bytes)
}
