//! `loadgen selftest`: what this machine can time, in about two minutes over loopback only.
//!
//! 1. The floor (`engine::floor`): a clock reading against a system call, and a timed wake-up's
//!    CPU and lateness.
//! 2. Coordinated omission against its truth: the built-in target freezes for 100 ms every
//!    second and is attacked open-loop at 1,000 req/s over 8 connections (as wrk holds). The
//!    requests due during a freeze wait for its rest, uniformly: its true p99 is
//!    S·(1 − 0.01·P/S) = 90 ms plus the server's normal latency. The corrected p99 must be
//!    within 2 % of it (exit 4 when it is not).
//! 3. Pacing: one thread's closed-loop rate against the built-in target (unthrottled), then
//!    open-loop runs at rising shares of it until one falls behind its schedule: the highest
//!    paced cleanly (no BEHIND SCHEDULE, sends p99 under 1 ms late), and its ratio to the
//!    unthrottled rate.
//!
//! Kept in the store (`store::selftest`); a run's page cites the newest of its host.

use std::time::{Duration, SystemTime};

use store::selftest::{OmissionCheck, PacingCheck, SelfTest};
use store::summary::{format_duration, format_ns, thousands, Summary, LATENESS_LIMIT_NS};

use crate::cli::{OutputFormat, SelftestArgs};
use crate::commands::demo::TargetProcess;
use crate::engine::attack::{AttackPlan, Load};
use crate::engine::request::{RequestMix, RequestOptions, RequestSpec};
use crate::engine::schedule::Schedule;
use crate::engine::shutdown::Shutdown;
use crate::error::{Error, UsageError};
use crate::keep::{self, Keeping};
use crate::RunEnd;

/// The freezing server: 100 ms every second, attacked at 1,000 req/s over 8 connections.
const STALL: Duration = Duration::from_millis(100);
const EVERY: Duration = Duration::from_secs(1);
const OMISSION_RATE: f64 = 1_000.0;
const OMISSION_CONNECTIONS: usize = 8;
/// The corrected p99 must be within this share of the truth.
const OMISSION_LIMIT: f64 = 0.02;
/// Connections of the unthrottled closed loop.
const UNTHROTTLED_CONNECTIONS: usize = 32;
/// The shares of the unthrottled rate paced, in order, until one falls behind.
const SHARES: [f64; 6] = [0.4, 0.55, 0.7, 0.8, 0.9, 1.0];

/// Runs the self-test, prints it and keeps it.
pub async fn run(args: &SelftestArgs, shutdown: &Shutdown) -> Result<RunEnd, Error> {
    if args.omission < Duration::from_secs(10) {
        return Err(UsageError::OmissionTooShort.into());
    }
    let text = args.output == OutputFormat::Text;
    let say = |line: &str| {
        if text {
            eprintln!("{line}");
        }
    };
    say("Measuring the clock and timed wake-ups…");
    let floor = tokio::task::spawn_blocking(crate::engine::floor::measure)
        .await
        .ok()
        .flatten()
        .ok_or(Error::NoTimer)?;
    say(&format!(
        "Coordinated omission: the built-in target freezing {} every {}, {} req/s over {} connections for {}…",
        format_duration(STALL),
        format_duration(EVERY),
        OMISSION_RATE,
        OMISSION_CONNECTIONS,
        format_duration(args.omission)
    ));
    let omission = omission(args.omission, shutdown).await?;
    say("Pacing: one thread, unthrottled, then paced at rising shares of it…");
    let pacing = pacing(args.pacing_step, shutdown, &say).await?;
    let host = store::run::HostFacts::current();
    let test = SelfTest {
        id: uuid::Uuid::now_v7().to_string(),
        host: host.hostname,
        kernel: host.kernel,
        cpus: host.cpus,
        measured_at_ns: SystemTime::now()
            .duration_since(SystemTime::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos() as i64),
        floor,
        omission,
        pacing,
    };
    keep_and_print(&test, args).await?;
    Ok(if test.omission.held() {
        RunEnd::Completed
    } else {
        RunEnd::SloMissed
    })
}

/// Keeps the self-test (unless `--no-store`) and prints it as text or JSON.
async fn keep_and_print(test: &SelfTest, args: &SelftestArgs) -> Result<(), Error> {
    let kept = if args.no_store {
        None
    } else {
        let store = store::Store::open(&args.db).await?;
        store.put_selftest(test).await?;
        Some(redact::text(&args.db))
    };
    if args.output == OutputFormat::Text {
        print!("{}", analysis::validity::selftest_report(test));
        if let Some(url) = kept {
            println!("Kept in {url}: the pages of runs on {} cite it.", test.host);
        }
    } else {
        println!(
            "{}",
            serde_json::to_string_pretty(test).map_err(|e| Error::Output(e.into()))?
        );
    }
    Ok(())
}

/// The built-in target's `/now`, attacked by one thread with `load`, kept nowhere.
async fn attack(
    target: &TargetProcess,
    load: Load,
    max_connections: usize,
    shutdown: &Shutdown,
) -> Result<Summary, Error> {
    let spec = RequestSpec::new(
        &format!("http://{}/now", target.addr),
        &RequestOptions::default(),
    )?;
    let plan = AttackPlan {
        mix: RequestMix::single(spec),
        load,
        threads: 1,
        max_connections,
        ready_connections: 0,
        h2: false,
        insecure: false,
        keepalive: true,
        timeout: Duration::from_secs(30),
        interval: Duration::from_millis(100),
        grace: Duration::from_secs(3),
        max_lateness: None,
        batch: Duration::ZERO,
        arrivals: Default::default(),
        shard: (0, 1),
    };
    let done = keep::execute(&plan, &Keeping::default(), shutdown).await?;
    if let Some(why) = &done.summary.stopped {
        return Err(Error::SelftestStopped { why: why.clone() });
    }
    Ok(done.summary)
}

/// The corrected p99 against the freezes' truth.
async fn omission(seconds: Duration, shutdown: &Shutdown) -> Result<OmissionCheck, Error> {
    let target = TargetProcess::start_with(STALL, EVERY, Duration::ZERO)?;
    let load = Load::Open {
        schedule: Schedule::constant(OMISSION_RATE, Some(seconds))?,
        requests: None,
    };
    let s = attack(&target, load, OMISSION_CONNECTIONS, shutdown).await?;
    let share = STALL.as_secs_f64() / EVERY.as_secs_f64();
    let truth = STALL.as_secs_f64() * 1e9 * (1.0 - 0.01 / share) + s.latency.service.p50_ns as f64;
    let measured = s.latency.corrected.p99_ns;
    Ok(OmissionCheck {
        rate: OMISSION_RATE,
        seconds: seconds.as_secs_f64(),
        connections: OMISSION_CONNECTIONS,
        stall_ns: STALL.as_nanos() as u64,
        every_ns: EVERY.as_nanos() as u64,
        truth_p99_ns: truth.round() as u64,
        corrected_p99_ns: measured,
        service_p99_ns: s.latency.service.p99_ns,
        error: (measured as f64 - truth).abs() / truth,
        limit: OMISSION_LIMIT,
    })
}

/// One thread unthrottled, then paced at rising shares of that rate until one falls behind.
async fn pacing(
    step: Duration,
    shutdown: &Shutdown,
    say: &dyn Fn(&str),
) -> Result<PacingCheck, Error> {
    let target = TargetProcess::start_with(Duration::ZERO, EVERY, Duration::ZERO)?;
    let closed = Load::Closed {
        connections: UNTHROTTLED_CONNECTIONS,
        requests: None,
        duration: Some(step),
    };
    let unthrottled = attack(&target, closed, UNTHROTTLED_CONNECTIONS, shutdown)
        .await?
        .requests
        .rate;
    let mut tried = Vec::new();
    let mut clean_rps: f64 = 0.0;
    for share in SHARES {
        let rate = (unthrottled * share).round().max(1.0);
        let load = Load::Open {
            schedule: Schedule::constant(rate, Some(step))?,
            requests: None,
        };
        let s = attack(&target, load, UNTHROTTLED_CONNECTIONS, shutdown).await?;
        let late = s.generator.lateness.p99_ns;
        let clean = !s.generator.behind && late < LATENESS_LIMIT_NS;
        say(&format!(
            "  {} req/s: {}, sends p99 {} late",
            thousands(rate),
            if clean { "paced cleanly" } else { "behind" },
            format_ns(late)
        ));
        tried.push((rate, clean, late));
        if !clean {
            break;
        }
        clean_rps = clean_rps.max(rate);
    }
    Ok(PacingCheck {
        unthrottled_rps: unthrottled,
        unthrottled_connections: UNTHROTTLED_CONNECTIONS,
        clean_rps,
        tried,
    })
}
