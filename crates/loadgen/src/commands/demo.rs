//! `loadgen demo`: coordinated omission, shown on a server that freezes, watched by a probe.
//!
//! The built-in target runs as a process of its own (`loadgen target`) and freezes for
//! `--stall` every `--stall-every` (like a stop-the-world GC pause). A probe, started here on a
//! loopback port, samples that process; the generator attacks it open-loop with a small fixed
//! pool of connections, as wrk or hey would use, subscribed to the probe. While the server is
//! frozen the pool's few connections are stuck, so the requests due meanwhile cannot even be
//! sent: timed from their actual send (service time) they look fast; timed from when they were
//! due (corrected) they show the freeze. The demo prints the summary, the two figures side by
//! side with the value the freezes imply, and what the probe saw of the target process. The run
//! is kept in the store like any other.

use std::io::{BufRead, Write};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use probe::protocol::Record;
use store::summary::{format_duration, format_ns, Summary};

use crate::cli::{DemoArgs, OutputFormat};
use crate::commands::target::Stall;
use crate::engine::attack::{AttackPlan, Load};
use crate::engine::request::{RequestMix, RequestOptions, RequestSpec};
use crate::engine::schedule::Schedule;
use crate::engine::shutdown::Shutdown;
use crate::error::{Error, UsageError};
use crate::keep::probes::ProbeTarget;
use crate::output::{draw_report, print_kept, print_summary};
use crate::{keep, RunEnd};

/// The built-in target in a child process; ended when dropped.
pub(crate) struct TargetProcess {
    child: Child,
    pub(crate) addr: String,
}

impl TargetProcess {
    fn start(args: &DemoArgs) -> Result<Self, Error> {
        Self::start_with(args.stall, args.stall_every, args.service_time)
    }

    /// The built-in target freezing for `stall` (0: never) every `every`, answering in
    /// `service` otherwise.
    pub(crate) fn start_with(
        stall: Duration,
        every: Duration,
        service: Duration,
    ) -> Result<Self, Error> {
        let exe = std::env::current_exe().map_err(Error::Target)?;
        let mut child = Command::new(exe)
            .arg("target")
            .args(["--stall", &humantime::format_duration(stall).to_string()])
            .args([
                "--stall-every",
                &humantime::format_duration(every).to_string(),
            ])
            .args([
                "--service-time",
                &humantime::format_duration(service).to_string(),
            ])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .map_err(Error::Target)?;
        let mut line = String::new();
        if let Some(out) = child.stdout.take() {
            let _ = std::io::BufReader::new(out).read_line(&mut line);
        }
        let Some(addr) = line
            .trim()
            .strip_prefix("listening on ")
            .map(str::to_string)
        else {
            let _ = child.kill();
            return Err(Error::Target(std::io::Error::other(format!(
                "the built-in target did not start (it said {line:?})"
            ))));
        };
        Ok(TargetProcess { child, addr })
    }
}

impl Drop for TargetProcess {
    fn drop(&mut self) {
        drop(self.child.stdin.take());
        let _ = self.child.wait();
    }
}

/// A probe on a loopback port watching the target process, as `probe serve --pid` would.
async fn local_probe(pid: i32, profile: bool) -> Result<probe::server::RunningProbe, Error> {
    let probe_error = |message: String| Error::Probe {
        address: "127.0.0.1".into(),
        message,
    };
    let mut config = probe::sampler::SamplerConfig::new(probe::selector::Selector::Pid(pid));
    config.profile = profile.then(probe::profile::ProfileConfig::default);
    let sampler = probe::sampler::Sampler::new(config).map_err(|e| probe_error(e.to_string()))?;
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .map_err(|e| probe_error(e.to_string()))?;
    probe::server::RunningProbe::start(sampler, listener, Default::default(), 100_000, 64 << 20)
        .map_err(|e| probe_error(e.to_string()))
}

/// Runs the demo: starts the target and a probe, attacks, prints what it shows.
pub async fn run(
    args: &DemoArgs,
    shutdown: &Shutdown,
    command_line: &[String],
) -> Result<RunEnd, Error> {
    let stall = stall(args)?;
    let target = TargetProcess::start(args)?;
    let plan = plan(args, &target)?;
    let mut keeping = demo_keeping(args, command_line)?;
    // Without a store there is nowhere to keep the probe's samples: the demo runs without one.
    let local_probe = match keeping.store_url {
        Some(_) => Some(local_probe(target.child.id() as i32, args.profile).await?),
        None => None,
    };
    if let Some(p) = &local_probe {
        keeping.probes = vec![ProbeTarget {
            address: p.addr.to_string(),
            token: None,
            tls: None,
        }];
        keeping.pre_roll = Duration::from_secs(1);
        keeping.post_roll = Duration::from_secs(1);
    }
    if args.out.output == OutputFormat::Text {
        announce(args, &target, stall, local_probe.is_some());
    }
    let done = keep::execute(&plan, &keeping, shutdown).await?;
    drop(local_probe);
    drop(target);
    print_summary(&done.summary, None, args.out.output)?;
    if args.out.output == OutputFormat::Text {
        print_explanation(args, &done, &keeping, stall).await?;
    }
    print_kept(&done, &keeping, args.out.output);
    if let Some(dir) = &args.store.report {
        draw_report(dir, &done, &keeping, args.out.output).await?;
    }
    Ok(RunEnd::of(&done.summary))
}

/// How the demo's run is kept: as the flags say, named and labelled as the demo's by default.
fn demo_keeping(args: &DemoArgs, command_line: &[String]) -> Result<keep::Keeping, Error> {
    let mut keeping = args.store.keeping(command_line)?;
    keeping.hdr_log = args.out.hdr_log.clone();
    if keeping.name.is_none() {
        keeping.name = Some("demo: built-in target freezing like a GC pause".into());
    }
    keeping
        .labels
        .entry("target".into())
        .or_insert_with(|| "built-in".into());
    Ok(keeping)
}

/// The line that opens the demo: the target, how it freezes, and the attack.
fn announce(args: &DemoArgs, target: &TargetProcess, stall: Option<Stall>, watched: bool) {
    let freezes = match stall {
        Some(s) => format!(
            "it freezes for {} every {}",
            format_duration(s.length),
            format_duration(s.every)
        ),
        None => "it does not freeze".into(),
    };
    println!(
        "Attacking the built-in target (PID {}, at {}; {freezes}): {} req/s for {}, at most {} connections{}.\n",
        target.child.id(),
        target.addr,
        args.rate,
        format_duration(args.duration),
        args.max_connections,
        if watched { ", watched by a probe" } else { "" },
    );
}

/// What the run shows of coordinated omission, and what the probe saw of the target process.
async fn print_explanation(
    args: &DemoArgs,
    done: &keep::Executed,
    keeping: &keep::Keeping,
    stall: Option<Stall>,
) -> Result<(), Error> {
    let mut text = explain(&done.summary, stall, args.max_connections);
    if let (Some(id), Some(url)) = (&done.run_id, &keeping.store_url) {
        if let Ok(store) = store::Store::open(url).await {
            if let Ok(run) = store.load_run(id).await {
                text.push_str(&process_figures(&run, args.duration));
            }
        }
    }
    let mut out = std::io::stdout().lock();
    write!(out, "\n{text}").map_err(Error::Output)?;
    Ok(())
}

/// How the built-in target freezes (`--stall`, `--stall-every`), or not at all.
fn stall(args: &DemoArgs) -> Result<Option<Stall>, Error> {
    if args.stall.is_zero() {
        Ok(None)
    } else if args.stall >= args.stall_every {
        Err(UsageError::StallNotShorter.into())
    } else {
        Ok(Some(Stall {
            every: args.stall_every,
            length: args.stall,
        }))
    }
}

/// The demo's attack: GET /now of the built-in target at `--rate`, open loop, for
/// `--duration`.
fn plan(args: &DemoArgs, target: &TargetProcess) -> Result<AttackPlan, Error> {
    let spec = RequestSpec::new(
        &format!("http://{}/now", target.addr),
        &RequestOptions::default(),
    )?;
    Ok(AttackPlan {
        mix: RequestMix::single(spec),
        load: Load::Open {
            schedule: Schedule::constant(args.rate, Some(args.duration))?,
            requests: None,
        },
        threads: args.threads,
        max_connections: args.max_connections,
        ready_connections: 0,
        h2: false,
        insecure: false,
        keepalive: true,
        timeout: Duration::from_secs(30),
        interval: args.out.interval_for(Some(args.duration)),
        grace: Duration::from_secs(3),
        max_lateness: None,
        batch: Duration::ZERO,
        arrivals: Default::default(),
        shard: (0, 1),
    })
}

/// What the probe saw of the target during the attack.
fn process_figures(run: &store::StoredRun, duration: Duration) -> String {
    let end = duration.as_nanos() as i64;
    let mut cpu = Vec::new();
    let (mut rss, mut threads, mut sockets) = (0u64, 0u64, 0u64);
    let mut fds: Option<u64> = None;
    for probe in &run.probes {
        for r in &probe.records {
            let Record::Sample(s) = &r.record else {
                continue;
            };
            let Some(t) = &s.total else { continue };
            if r.t_ns < 0 || r.t_ns > end {
                continue;
            }
            cpu.extend(t.cpu_pct);
            rss = rss.max(t.rss_bytes);
            threads = threads.max(t.threads);
            fds = fds.max(t.fds);
            sockets = sockets.max(t.fd_kinds.as_ref().map_or(0, |k| k.socket));
        }
    }
    if cpu.is_empty() {
        return String::new();
    }
    let mean = cpu.iter().sum::<f64>() / cpu.len() as f64;
    let max = cpu.iter().copied().fold(0.0, f64::max);
    let near_zero = cpu.iter().filter(|&&c| c < 1.0).count();
    format!(
        "  The probe sampled the target process {} times during the attack (every 100 ms): CPU mean {mean:.1}%\n  \
         of a core, max {max:.1}%, {near_zero} samples near 0% (frozen); RSS up to {:.1} MiB, {threads} threads,\n  \
         {} open FDs ({sockets} sockets).\n",
        cpu.len(),
        rss as f64 / 1048576.0,
        fds.map_or("unknown (not readable)".to_string(), |n| n.to_string())
    )
}

/// What the demo shows, in a few lines built from the run's own figures.
pub fn explain(summary: &Summary, stall: Option<Stall>, max_connections: usize) -> String {
    let corrected = &summary.latency.corrected;
    let service = &summary.latency.service;
    let mut text = String::from("What this shows:\n");
    text.push_str(&format!(
        "  corrected p99 {:>9}   latency from the intended send time: what the server's users waited\n",
        format_ns(corrected.p99_ns)
    ));
    text.push_str(&format!(
        "  service   p99 {:>9}   latency from the actual send time: what wrk, hey or ab would report\n",
        format_ns(service.p99_ns)
    ));
    if let Some(stall) = stall {
        let share = stall.length.as_secs_f64() / stall.every.as_secs_f64();
        if share > 0.01 {
            // Requests due during a freeze of length S wait for its remainder, uniformly 0..S;
            // they are a share f = S/P of all requests, so the p99 is S·(1 − 0.01/f).
            let expected = stall.length.as_secs_f64() * (1.0 - 0.01 / share);
            text.push_str(&format!(
                "  The target froze for {} every {} ({:.0}% of the time); requests due during a freeze wait for\n  \
                 the rest of it, so the true p99 is about {} above the normal latency.\n",
                format_duration(stall.length),
                format_duration(stall.every),
                share * 100.0,
                format_ns((expected * 1e9) as u64),
            ));
        }
        let waited = summary.generator.waited_for_connection;
        if waited > 0 {
            text.push_str(&format!(
                "  With only {max_connections} connections the generator could not send during the freezes ({waited} requests\n  \
                 waited for a connection): a tool that starts its clock at the send never sees that wait.\n"
            ));
        }
    }
    text
}
