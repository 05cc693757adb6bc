//! `loadgen demo`: coordinated omission, shown on a server that freezes.
//!
//! The built-in target freezes for `--stall` every `--stall-every` (like a stop-the-world GC
//! pause). The generator attacks it open-loop, with a small fixed pool of connections as wrk or
//! hey would use. While the server is frozen, the pool's few connections are stuck, so the
//! requests due meanwhile cannot even be sent: timed from their actual send (service time),
//! they look fast; timed from when they were due (corrected), they show the freeze. The demo
//! prints the summary and then the two figures side by side, with the value the freezes imply.

use std::io::Write;
use std::time::Duration;

use crate::attack::{AttackPlan, Load};
use crate::cli::{DemoArgs, OutputFormat};
use crate::error::Error;
use crate::request::{RequestMix, RequestOptions, RequestSpec};
use crate::schedule::Schedule;
use crate::shutdown::Shutdown;
use crate::target::{Stall, TargetConfig, TargetServer};
use crate::{execute, print_summary, RunEnd};
use store::summary::{format_duration, format_ns, Summary};

/// Runs the demo: starts the target, attacks it, prints what it shows.
pub async fn run(args: &DemoArgs, shutdown: &Shutdown) -> Result<RunEnd, Error> {
    let stall = if args.stall.is_zero() {
        None
    } else if args.stall >= args.stall_every {
        return Err(Error::Usage(
            "--stall must be shorter than --stall-every, e.g. --stall 100ms --stall-every 1s"
                .into(),
        ));
    } else {
        Some(Stall {
            every: args.stall_every,
            length: args.stall,
        })
    };
    let target = TargetServer::start(TargetConfig {
        service_time: args.service_time,
        stall,
        record_responses: false,
    })
    .map_err(Error::Target)?;
    let spec = RequestSpec::new(&target.url("/now"), &RequestOptions::default())?;
    let plan = AttackPlan {
        mix: RequestMix::single(spec),
        load: Load::Open {
            schedule: Schedule::constant(args.rate, Some(args.duration))?,
            requests: None,
        },
        threads: args.threads,
        max_connections: args.max_connections,
        h2: false,
        insecure: false,
        keepalive: true,
        timeout: Duration::from_secs(30),
        interval: args.out.interval,
        grace: Duration::from_secs(3),
        max_lateness: None,
        batch: Duration::ZERO,
    };
    if args.out.output == OutputFormat::Text {
        let freezes = match stall {
            Some(s) => format!(
                "it freezes for {} every {}",
                format_duration(s.length),
                format_duration(s.every)
            ),
            None => "it does not freeze".into(),
        };
        println!(
            "Attacking the built-in target at {} ({freezes}): {} req/s for {}, at most {} connections.\n",
            target.addr(),
            args.rate,
            format_duration(args.duration),
            args.max_connections,
        );
    }
    let summary = execute(&plan, &args.out, shutdown).await?;
    drop(target);
    print_summary(&summary, args.out.output)?;
    if args.out.output == OutputFormat::Text {
        let mut out = std::io::stdout().lock();
        writeln!(out, "\n{}", explain(&summary, stall, args.max_connections))
            .map_err(Error::Output)?;
    }
    Ok(RunEnd::of(&summary))
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
                "  With only {} connections the generator could not send during the freezes ({waited} requests\n  \
                 waited for a connection): a tool that starts its clock at the send never sees that wait.\n",
                max_connections
            ));
        }
    }
    text
}
