//! What held a run back when its sends ran late, and what to change: one place for the
//! decision ([`cause`], from the run's measurements), its explanation with its figures
//! ([`explain`], the summary's warning), and what an experiment makes of it
//! ([`generator_fell_behind`]: a cell the generator limited is failed, since it says nothing of
//! the server). loadgen's summary, the experiment runner and the pages all read this.
//!
//! The causes, in the order they are tested: a worker thread of the generator saturated its
//! core; the generator's CPUs were saturated (by its own threads, still the generator, or by
//! other processes); the generator started its schedule late (its first send after its time,
//! the requests due meanwhile at least half of the late ones); requests waited for a free
//! connection (because the cap is too low for the rate even at the server's fastest pace, or
//! because the server slowed down: Little's law at its fastest response tells which); new
//! connections were slow to be accepted (a SYN retransmitted: the server's accept queue was
//! full); else no measurement explains it.

use hdrhistogram::Histogram;

use crate::model::IntervalStats;
use crate::summary::figures::Summary;
use crate::summary::figures::LATENESS_LIMIT_NS;
use crate::summary::text::format_ns;
use crate::vocabulary::LimitedBy;

/// Above this share of a core, a generator thread is saturated; above this share of its CPUs'
/// time, the generator's CPUs are.
pub const SATURATED: f64 = 0.9;

/// When the generator's CPUs were saturated, the share of their time that other processes
/// must have taken to be blamed for it (else the generator's own threads are).
pub const OTHERS_TO_BLAME: f64 = 0.25;

/// A connection that took this long to establish needed a SYN retransmission (Linux's initial
/// retransmission timeout is 1 s): the server's accept queue was full.
pub const SYN_RETRANSMISSION_NS: u64 = 900_000_000;

/// What a diagnosis reads of a run that fell behind.
#[derive(Debug)]
pub struct Evidence<'a> {
    pub totals: &'a IntervalStats,
    /// Requests sent later than the limit after their time.
    pub late: u64,
    /// From time zero to the last request sent, s.
    pub attack_s: f64,
    pub max_connections: usize,
    /// The busiest worker thread's share of a core.
    pub busiest_thread: Option<f64>,
    /// How busy the generator's CPUs were, every process counted.
    pub cpus_busy: Option<f64>,
    /// The generator's own share of those CPUs' time.
    pub own_share: Option<f64>,
    /// Time to establish each new connection.
    pub connect: Option<&'a Histogram<u64>>,
    /// Connections that took a SYN retransmission.
    pub slow_connects: u64,
    /// Lateness beyond which a send counts as late, ns.
    pub limit_ns: u64,
    /// The first request's actual send − its intended time, ns.
    pub start_late_ns: Option<i64>,
}

/// Connections `rate` req/s needs if every response took `fastest_ns` (Little's law).
pub fn needed_connections(rate: f64, fastest_ns: u64) -> f64 {
    rate * fastest_ns as f64 / 1e9
}

/// What held the sends back, from the measurements.
pub fn cause(e: &Evidence<'_>) -> LimitedBy {
    let t = e.totals;
    if e.busiest_thread.is_some_and(|b| b >= SATURATED) {
        return LimitedBy::Generator;
    }
    if let Some(busy) = e.cpus_busy.filter(|&b| b >= SATURATED) {
        // The generator's own threads count as the generator: only when other processes took a
        // fair share of its CPUs are they to blame.
        return if busy - e.own_share.unwrap_or(0.0) < OTHERS_TO_BLAME {
            LimitedBy::Generator
        } else {
            LimitedBy::GeneratorCpusShared
        };
    }
    let rate = if e.attack_s > 0.0 {
        t.requests as f64 / e.attack_s
    } else {
        0.0
    };
    // A start later than the limit makes every request due meanwhile late: the cause when
    // those are at least half of the late ones.
    if let Some(start) = e.start_late_ns.filter(|&s| s > e.limit_ns as i64) {
        if 2.0 * rate * start as f64 / 1e9 >= e.late as f64 {
            return LimitedBy::LateStart;
        }
    }
    if t.waited_for_connection > 0 && t.waited_for_connection * 2 >= e.late {
        // The pool filled. Little's law at the server's fastest response says how many
        // connections the rate needs if the server kept that pace: if the cap is well above it,
        // the pool filled because the server slowed down, not because the cap is small.
        let needed = needed_connections(rate, t.service.min()).max(1.0);
        return if !t.service.is_empty() && e.max_connections as f64 >= 2.0 * needed {
            LimitedBy::ServerResponses
        } else {
            LimitedBy::ConnectionCap
        };
    }
    if e.slow_connects > 0
        || e.connect
            .is_some_and(|h| h.value_at_quantile(0.99) > e.limit_ns)
    {
        return LimitedBy::ServerAccept;
    }
    LimitedBy::Unknown
}

/// A number of connections in words that never round to nonsense: "fewer than one".
fn connections_text(n: f64) -> String {
    if n < 1.0 {
        "fewer than one connection".into()
    } else if n < 1.5 {
        "about one connection".into()
    } else {
        format!("about {n:.0} connections")
    }
}

/// "BEHIND SCHEDULE: 1,234 requests (2.1 %) were sent over 1ms after their time … Cause: …",
/// the summary's warning where its sends fell behind; `None` where they did not.
pub fn behind(summary: &Summary) -> Option<String> {
    let g = &summary.generator;
    if !g.behind {
        return None;
    }
    let share = 100.0 * g.late as f64 / summary.requests.sent.max(1) as f64;
    Some(format!(
        "BEHIND SCHEDULE: {} requests ({share:.1} %) were sent over {} after their time (p99 lateness {}). \
         Corrected latencies still count from the intended send times, but the server received less load than scheduled. {}",
        g.late,
        format_ns(LATENESS_LIMIT_NS + g.batch_ns),
        format_ns(g.lateness.p99_ns),
        explain(summary)
    ))
}

/// The cause of a run's lateness in a sentence, with the figures that show it and what to
/// change: the generator's CPUs, the pool's cap and the pacing window are the summary's (an
/// attack paced in batches already is not told to pace in batches).
pub fn explain(summary: &Summary) -> String {
    let g = &summary.generator;
    let (cpus, batch_ns) = (g.cpus.as_str(), g.batch_ns);
    // A run kept before the cap was kept with its summary names the flag alone.
    let max_connections = match g.max_connections {
        0 => String::new(),
        n => format!(" {n}"),
    };
    let batch = if batch_ns == 0 {
        "Pace in batches (--batch 1ms, as wrk2 does), "
    } else {
        "Already paced in batches: "
    };
    let pct = |v: Option<f64>| v.map_or("?".to_string(), |v| format!("{:.0} %", v * 100.0));
    let connect_p99 = g.connect.map_or("?".into(), |c| format_ns(c.p99_ns));
    match g.limited_by {
        Some(LimitedBy::Generator) if g.busiest_thread.is_some_and(|b| b >= SATURATED) => format!(
            "Cause: the generator's CPU: its busiest worker thread was busy {} of the time. {batch}add --threads and CPUs, or use more gun hosts.",
            pct(g.busiest_thread)
        ),
        Some(LimitedBy::Generator) => format!(
            "Cause: the generator's CPU: its CPUs ({cpus}) were {} busy, {} of their time taken by the generator's own threads (the busiest {} of a core). {batch}give it more CPUs, or use more gun hosts.",
            pct(g.cpus_busy),
            pct(g.own_share),
            pct(g.busiest_thread)
        ),
        Some(LimitedBy::GeneratorCpusShared) => format!(
            "Cause: other processes on the generator's CPUs: they were {} busy, of which the generator's own threads took {} (the busiest {} of a core) and other processes the rest. Pin the target and the rest elsewhere (taskset), or stop what shares the gun's CPUs.",
            pct(g.cpus_busy),
            pct(g.own_share),
            pct(g.busiest_thread)
        ),
        Some(LimitedBy::ServerResponses) => format!(
            "Cause: the server fell behind: requests waited for a free connection, the pool full at --max-connections{max_connections} with every connection waiting for a response. At the pace of its fastest response ({}) the {:.0} req/s sent would have needed {}; its responses took {} at p50, and it answered {:.0} req/s.",
            format_ns(summary.latency.service.min_ns),
            summary.requests.rate,
            connections_text(needed_connections(
                summary.requests.rate,
                summary.latency.service.min_ns
            )),
            format_ns(summary.latency.service.p50_ns),
            summary.requests.throughput,
        ),
        Some(LimitedBy::ConnectionCap) => format!(
            "Cause: the connection cap: {} requests waited for a free connection, the pool held at --max-connections{max_connections}; raise it to send on time.",
            g.waited_for_connection
        ),
        Some(LimitedBy::ServerAccept) => format!(
            "Cause: the server was slow to accept new connections: connecting took {connect_p99} at p99, and {} connections took over 0.9 s (a SYN retransmission: its accept queue was full).",
            g.slow_connects
        ),
        Some(LimitedBy::LateStart) => format!(
            "Cause: a late start: the first request left {} after it was due (the generator's process paused, or its host busy, as the schedule began), and the requests due meanwhile are at least half of those sent late. Run it again; a gun that starts late every time needs its host looked at.",
            g.start_late_ns.map_or("?".into(), |ns| format_ns(ns.max(0) as u64))
        ),
        Some(LimitedBy::Unknown) | None => format!(
            "Cause not found in the measurements: the busiest generator thread was busy {} of a core, its CPUs ({cpus}) {} busy, no request waited for a connection beyond what explains the lateness, and connections opened in {connect_p99} at p99.",
            pct(g.busiest_thread),
            pct(g.cpus_busy)
        ),
    }
}

/// Why the generator, not the target, limited a run, if it did: such a run says nothing of the
/// server, and an experiment keeps its cell as failed with this reason.
pub fn generator_fell_behind(summary: &Summary) -> Option<String> {
    let limited = summary.generator.limited_by?;
    limited.is_generator().then(|| {
        format!(
            "the generator could not keep the schedule: {}",
            behind(summary).unwrap_or_default()
        )
    })
}

/// Whether the host, not the generator's own work, made it fall behind: other processes took
/// its CPUs, or its process paused as the schedule began. Such a run may go another way once
/// the host is quiet; one the generator's own load limited will not.
pub fn host_held_the_generator_back(summary: &Summary) -> bool {
    matches!(
        summary.generator.limited_by,
        Some(LimitedBy::GeneratorCpusShared | LimitedBy::LateStart)
    )
}
