//! A run's warnings in words, and what to change: the reasons to read its figures with care
//! that a summary carries above them ([`of`], set by [`fill`]), most important first. The
//! store decides what held a run back (`store::diagnosis::cause`, from its measurements, kept
//! as the summary's `limited_by`); this module says it with the figures that show it and the
//! flags to change ([`explain`], within [`behind`]), and what an experiment makes of it
//! ([`generator_fell_behind`]: a cell the generator limited is failed, since it says nothing
//! of the server; [`host_held_the_generator_back`]: one its host limited is measured again).
//! loadgen's keeping, the experiment runner, the capacity search and the pages all read this.

use store::diagnosis::{needed_connections, SATURATED};
use store::model::ErrorKind;
use store::summary::{format_ns, Summary, ARRIVAL_KS_LIMIT, LATENESS_LIMIT_NS};
use store::vocabulary::LimitedBy;

/// Sets `summary`'s warnings to those its figures call for ([`of`]), then `notes`: the
/// things that went wrong on the side, worded by whoever met them. Whatever the summary held
/// before is replaced, so filling it twice gives the same warnings.
pub fn fill(summary: &mut Summary, notes: &[String]) {
    summary.warnings = of(summary, notes);
}

/// The warnings `summary`'s figures call for, in this order: it stopped early, its sends fell
/// behind (and why, [`behind`]), a closed loop, sends that were not Poisson, requests sent
/// again on a new connection, requests cancelled at its end; then `notes`, as they are.
pub fn of(summary: &Summary, notes: &[String]) -> Vec<String> {
    let mut out = Vec::new();
    let g = &summary.generator;
    if let Some(reason) = &summary.stopped {
        out.push(format!(
            "STOPPED EARLY: {reason}. The figures cover what was recorded until then."
        ));
    }
    if let Some(behind) = behind(summary) {
        out.push(behind);
    }
    if !summary.open_loop {
        out.push(
            "CLOSED LOOP: each connection waits for its response before sending again, so while the server \
             stalls the load pauses with it and the latencies hide the queueing a real client would see. \
             Use --rate for latencies that count from the intended send time."
                .into(),
        );
    }
    if let Some(f) = g.arrivals.filter(|f| !f.as_intended()) {
        let (more, why) = if f.excess < 0.0 {
            ("fewer", "the generator's own time per send (its cpu per request) spaced out requests due closer together: \
             the server saw smoother arrivals than a Poisson process")
        } else {
            (
                "more",
                "the generator released requests together (late wake-ups, a full pool): \
             the server saw burstier arrivals than a Poisson process",
            )
        };
        out.push(format!(
            "NOT POISSON: {:.1} % {more} gaps between sends up to {:.2}× the mean gap than exponential gaps have \
             (KS distance {:.3} over {} gaps; at most {:.3} is as intended); {why}. Lower the rate each worker thread \
             sends (more --threads on more CPUs, or more guns).",
            f.ks * 100.0,
            f.at_mean_gaps,
            f.ks,
            f.gaps,
            f.critical.max(ARRIVAL_KS_LIMIT)
        ));
    }
    if g.resent > 0 {
        out.push(format!(
            "{} requests ({:.2} %) were sent again on a new connection: the server closed a reused keep-alive \
             connection as they went out. An idempotent request is resent once, as browsers and Go's client do; \
             each is counted once, its latency timed from its first send. A server that closes idle connections \
             sooner than the client reuses them (Node's keepAliveTimeout) costs its users this reconnect.",
            g.resent,
            ratio(g.resent as f64, summary.requests.sent as f64) * 100.0
        ));
    }
    // The summary counts the errors of every kind that occurred, by name.
    let cancelled = summary
        .errors
        .get(ErrorKind::Cancelled.name())
        .copied()
        .unwrap_or(0);
    if cancelled > 0 {
        out.push(format!(
            "{cancelled} requests were still in flight when the run ended; they are counted as errors of kind cancelled."
        ));
    }
    out.extend(notes.iter().cloned());
    out
}

/// `a / b`, or 0 where `b` is not above 0.
fn ratio(a: f64, b: f64) -> f64 {
    if b > 0.0 {
        a / b
    } else {
        0.0
    }
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

#[cfg(test)]
mod tests {
    use std::time::{Duration, SystemTime};

    use store::model::IntervalStats;
    use store::run::RunConfig;
    use store::summary::{ArrivalFit, GeneratorFacts, RunFacts};

    use super::*;

    /// 30,000 requests, `late` of them 5 ms late, `waited` of them for a connection, with what
    /// the generator measured of itself, its warnings worded.
    fn summary_of(late: u64, waited: u64, generator: GeneratorFacts) -> Summary {
        let mut totals = IntervalStats::new(0, 30_000_000_000);
        for i in 0..30_000u64 {
            let lateness = if i < late { 5_000_000 } else { 40_000 };
            totals.lateness.record(lateness).unwrap();
            totals.corrected.record(1_000_000).unwrap();
        }
        totals.requests = 30_000;
        totals.sent = 30_000;
        totals.waited_for_connection = waited;
        summary_over_30s(&totals, 8, generator)
    }

    /// The summary of an open loop of 30 s with these totals and connection cap, its warnings
    /// worded.
    fn summary_over_30s(
        totals: &IntervalStats,
        max_connections: usize,
        generator: GeneratorFacts,
    ) -> Summary {
        let config = RunConfig {
            open_loop: true,
            max_connections,
            ..Default::default()
        };
        let mut summary = Summary::new(&RunFacts {
            config: &config,
            started: SystemTime::UNIX_EPOCH,
            interval: Duration::from_secs(1),
            totals,
            attack: Duration::from_secs(30),
            wait: Duration::ZERO,
            cpu: Duration::from_secs(1),
            peak_rss_bytes: None,
            stopped: None,
            notes: Vec::new(),
            generator,
        });
        fill(&mut summary, &[]);
        summary
    }

    /// 1,000 req/s for 30 s, a start 1 s late: the late start is said with how late it was,
    /// fails an experiment's cell, and is the host's doing (the run is measured again).
    #[test]
    fn a_late_start_is_said_with_how_late_it_was() {
        let s = summary_of(
            1_500,
            0,
            GeneratorFacts {
                start_late_ns: Some(1_000_000_000),
                ..Default::default()
            },
        );
        assert_eq!(s.generator.limited_by, Some(LimitedBy::LateStart));
        assert!(
            s.warnings[0]
                .contains("Cause: a late start: the first request left 1.00s after it was due"),
            "{}",
            s.warnings[0]
        );
        assert!(generator_fell_behind(&s).is_some());
        assert!(host_held_the_generator_back(&s));
    }

    #[test]
    fn a_handful_of_late_sends_is_a_figure_not_an_alarm() {
        let s = summary_of(12, 0, GeneratorFacts::default());
        assert!(!s.generator.behind);
        assert!(s.warnings.is_empty(), "{:?}", s.warnings);
        assert!(generator_fell_behind(&s).is_none());
    }

    #[test]
    fn lateness_is_explained_with_its_measurements_and_what_to_change() {
        let busy = |thread: f64, cpus: f64| GeneratorFacts {
            busiest_thread: Some(thread),
            cpus_busy: Some((cpus, "0".into())),
            own_share: Some(thread),
            connect: None,
            arrivals: None,
            start_late_ns: None,
            steal: None,
        };
        let cause = |s: Summary| (s.generator.limited_by, s.warnings[0].clone());
        let (by, text) = cause(summary_of(3_000, 0, busy(0.97, 0.98)));
        assert_eq!(by, Some(LimitedBy::Generator));
        assert!(
            text.contains("busiest worker thread was busy 97 %"),
            "{text}"
        );
        let (by, text) = cause(summary_of(3_000, 0, busy(0.2, 0.99)));
        assert_eq!(by, Some(LimitedBy::GeneratorCpusShared));
        assert!(
            text.contains("they were 99 % busy, of which the generator's own threads took 20 %"),
            "{text}"
        );
        // The generator's other threads (its aggregator, the store's writer) are the
        // generator: a busy CPU that it kept busy itself is not another process's doing.
        let own = GeneratorFacts {
            own_share: Some(0.85),
            ..busy(0.6, 0.92)
        };
        let (by, text) = cause(summary_of(3_000, 0, own));
        assert_eq!(by, Some(LimitedBy::Generator));
        assert!(
            text.contains("92 % busy, 85 % of their time taken by the generator's own threads"),
            "{text}"
        );
        assert!(text.contains("--batch 1ms"), "{text}");
        // An attack paced in batches already is not told to pace in batches.
        let mut paced = summary_of(3_000, 0, busy(0.97, 0.98));
        paced.generator.batch_ns = 1_000_000;
        let batched = explain(&paced);
        assert!(
            batched.contains("Already paced in batches: add --threads")
                && !batched.contains("--batch"),
            "{batched}"
        );
        let (by, text) = cause(summary_of(3_000, 2_900, busy(0.2, 0.3)));
        assert_eq!(by, Some(LimitedBy::ConnectionCap));
        assert!(text.contains("--max-connections 8"), "{text}");
        let mut connect = store::model::new_histogram(30_000_000_000);
        connect.record(200_000).unwrap();
        connect.record(1_020_000_000).unwrap();
        let slow = GeneratorFacts {
            connect: Some(connect),
            ..busy(0.2, 0.3)
        };
        let (by, text) = cause(summary_of(3_000, 0, slow));
        assert_eq!(by, Some(LimitedBy::ServerAccept));
        assert!(text.contains("1 connections took over 0.9 s"), "{text}");
        let (by, text) = cause(summary_of(3_000, 0, busy(0.2, 0.3)));
        assert_eq!(by, Some(LimitedBy::Unknown));
        assert!(text.contains("Cause not found"), "{text}");
    }

    #[test]
    fn a_pool_the_server_filled_is_said_with_what_its_fastest_pace_needed() {
        // 1,000 req/s whose fastest response took 10 ms need 10 connections at that pace; a
        // cap of 10,000 would have carried the rate fifty times over: the server slowed.
        let mut totals = IntervalStats::new(0, 30_000_000_000);
        for i in 0..30_000u64 {
            let late = if i < 3_000 { 5_000_000 } else { 40_000 };
            totals.lateness.record(late).unwrap();
            totals.service.record(10_000_000 + i * 100_000).unwrap();
            totals.corrected.record(10_000_000 + i * 100_000).unwrap();
        }
        (totals.requests, totals.sent, totals.ok) = (30_000, 30_000, 30_000);
        totals.waited_for_connection = 2_900;
        let s = summary_over_30s(&totals, 10_000, GeneratorFacts::default());
        assert_eq!(s.generator.limited_by, Some(LimitedBy::ServerResponses));
        let text = &s.warnings[0];
        assert!(text.contains("the server fell behind"), "{text}");
        assert!(text.contains("--max-connections 10000"), "{text}");
        assert!(
            text.contains("the 1000 req/s sent would have needed about 10 connections"),
            "{text}"
        );
        // The server's doing, not the generator's: the cell is not failed for it.
        assert!(generator_fell_behind(&s).is_none());
    }

    #[test]
    fn poisson_sends_that_were_not_poisson_are_said() {
        let fit = |excess: f64, gaps: u64| GeneratorFacts {
            arrivals: Some(ArrivalFit::new(excess, 0.09, gaps)),
            ..Default::default()
        };
        let within = summary_of(0, 0, fit(-0.03, 80_000));
        assert!(within.warnings.is_empty(), "{:?}", within.warnings);
        let spaced = summary_of(0, 0, fit(-0.08, 80_000));
        assert!(
            spaced.warnings[0]
                .starts_with("NOT POISSON: 8.0 % fewer gaps between sends up to 0.09×")
                && spaced.warnings[0].contains("smoother arrivals"),
            "{:?}",
            spaced.warnings
        );
        // Few gaps: only what the test can tell from chance counts.
        let few = summary_of(0, 0, fit(0.08, 200));
        assert!(few.warnings.is_empty(), "{:?}", few.warnings);
    }

    /// A closed loop stopped early, some requests resent and some cancelled, with a note: each
    /// said once, in order, the note last; filled again, the same.
    #[test]
    fn the_warnings_come_most_important_first_and_the_notes_last() {
        let mut totals = IntervalStats::new(0, 30_000_000_000);
        (totals.requests, totals.sent) = (1_000, 1_000);
        totals.resent = 5;
        totals.errors.add(ErrorKind::Cancelled, 3);
        let config = RunConfig::default();
        let notes = vec!["a sink failed".to_string()];
        let mut s = Summary::new(&RunFacts {
            config: &config,
            started: SystemTime::UNIX_EPOCH,
            interval: Duration::from_secs(1),
            totals: &totals,
            attack: Duration::from_secs(10),
            wait: Duration::ZERO,
            cpu: Duration::ZERO,
            peak_rss_bytes: None,
            stopped: Some("interrupted".into()),
            notes: notes.clone(),
            generator: GeneratorFacts::default(),
        });
        fill(&mut s, &notes);
        let starts: Vec<&str> = s
            .warnings
            .iter()
            .map(|w| w.split(':').next().unwrap_or_default())
            .collect();
        assert_eq!(
            starts,
            [
                "STOPPED EARLY",
                "CLOSED LOOP",
                "5 requests (0.50 %) were sent again on a new connection",
                "3 requests were still in flight when the run ended; they are counted as errors of kind cancelled.",
                "a sink failed",
            ],
            "{:?}",
            s.warnings
        );
        assert!(s.warnings[0].starts_with("STOPPED EARLY: interrupted. The figures cover"));
        assert!(s.warnings[1].contains("Use --rate"), "{}", s.warnings[1]);
        let once = s.warnings.clone();
        fill(&mut s, &notes);
        assert_eq!(s.warnings, once);
    }
}
