//! Whether a run's figures can be trusted on the machine that made them, in one verdict:
//! **valid**, **degraded** (with each reason and its measurement) or **not measurable**
//! (latencies within what a timed wake-up is late here cannot be told apart). What it rests on
//! is said beside it: the offered against the sent and answered rate, how late the sends were,
//! the generator's busiest thread, other processes on its CPUs, steal, the clock (its source,
//! what a reading costs, whether it is a system call) and the machine's timed wake-up (its CPU
//! and its lateness). The thresholds are fixed in advance:
//!
//! - sends late and the generator or its host to blame (`store::diagnosis`, not the server);
//! - a generator thread over 90 % of a core (`store::diagnosis::SATURATED`);
//! - the generator's CPUs over 90 % busy and other processes taking 25 % of them or more
//!   (`store::diagnosis::OTHERS_TO_BLAME`): its sends and reads waited for a CPU;
//! - steal of 5 % or more;
//! - `clock_gettime` a system call (a reading costs over half of one);
//! - the corrected p50 within the wake-up's p99 lateness: degraded; the p99 within it: not
//!   measurable.

use store::diagnosis::{OTHERS_TO_BLAME, SATURATED};
use store::summary::{format_ns, thousands, Flaw, Floor, Summary, Validity, Verdict};
use store::vocabulary::LimitedBy;

/// At this share of the CPUs' time stolen or more, a run is degraded.
pub const STEAL: f64 = 0.05;

/// The run's verdict against the machine's floor (where it was measured).
pub fn judge(summary: &Summary, floor: Option<&Floor>) -> Validity {
    let g = &summary.generator;
    let mut flaws = Vec::new();
    if let Some(by) = g.limited_by.filter(|b| g.behind && !server_side(*b)) {
        flaws.push(Flaw::Behind {
            late: g.late,
            sent: summary.requests.sent,
            p99_late_ns: g.lateness.p99_ns,
            by,
        });
    }
    if let Some(share) = g.busiest_thread.filter(|b| *b >= SATURATED) {
        flaws.push(Flaw::BusyThread { share });
    }
    if let Some(share) = summary
        .generator
        .others_share()
        .filter(|o| *o >= OTHERS_TO_BLAME && g.cpus_busy.is_some_and(|b| b >= SATURATED))
    {
        flaws.push(Flaw::Others { share });
    }
    if let Some(share) = g.steal.filter(|s| *s >= STEAL) {
        flaws.push(Flaw::Steal { share });
    }
    let mut verdict = Verdict::Valid;
    if let Some(f) = floor {
        if !f.vdso {
            flaws.push(Flaw::ClockSyscall {
                clock_source: f.clock_source.clone(),
                read_ns: f.clock_read_ns,
            });
        }
        let c = &summary.latency.corrected;
        let floor_ns = f.wakeup_late_p99_ns.round() as u64;
        let within = [(99.0, c.p99_ns), (50.0, c.p50_ns)]
            .into_iter()
            .find(|(_, v)| c.count > 0 && *v <= floor_ns);
        if let Some((percentile, value_ns)) = within {
            if percentile == 99.0 {
                verdict = Verdict::NotMeasurable;
            }
            flaws.push(Flaw::WithinFloor {
                percentile,
                value_ns,
                floor_ns,
            });
        }
    }
    if verdict == Verdict::Valid && !flaws.is_empty() {
        verdict = Verdict::Degraded;
    }
    Validity {
        verdict,
        flaws,
        floor: floor.cloned(),
    }
}

/// Whether the server held the sends back (its responses or its accepts): the corrected
/// latencies still count from the schedule, and the run is the server's.
fn server_side(by: LimitedBy) -> bool {
    matches!(by, LimitedBy::ServerResponses | LimitedBy::ServerAccept)
}

/// Other processes' share of the generator's CPUs' time over the attack (0–1).
/// The verdict and its reasons, one line: `valid`, `degraded: …`, `not measurable: …`.
pub fn verdict_text(v: &Validity) -> String {
    let reasons: Vec<String> = v.flaws.iter().map(flaw_text).collect();
    match v.verdict {
        Verdict::Valid => "valid".into(),
        Verdict::Degraded => format!("degraded: {}", reasons.join("; ")),
        Verdict::NotMeasurable => format!("not measurable: {}", reasons.join("; ")),
    }
}

/// One reason in words, with its measurement.
pub fn flaw_text(f: &Flaw) -> String {
    match f {
        Flaw::Behind {
            late,
            sent,
            p99_late_ns,
            by,
        } => format!(
            "{} of {} sends over 1 ms late (p99 {}), held back by {}",
            thousands(*late as f64),
            thousands(*sent as f64),
            format_ns(*p99_late_ns),
            by.as_str()
        ),
        Flaw::BusyThread { share } => format!(
            "the generator's busiest thread took {:.0} % of a core",
            share * 100.0
        ),
        Flaw::Others { share } => format!(
            "other processes took {:.0} % of the generator's CPUs, which were saturated",
            share * 100.0
        ),
        Flaw::Steal { share } => format!(
            "the hypervisor stole {:.1} % of the CPUs' time",
            share * 100.0
        ),
        Flaw::ClockSyscall {
            clock_source,
            read_ns,
        } => format!(
            "clock_gettime is a system call here (clock source {}): {:.0} ns a reading",
            clock_source.as_deref().unwrap_or("unknown"),
            read_ns
        ),
        Flaw::WithinFloor {
            percentile,
            value_ns,
            floor_ns,
        } => format!(
            "latencies below {} cannot be told apart here (a timed wake-up is that late at \
             p99), and the run's corrected p{} was {}",
            format_ns(*floor_ns),
            percentile,
            format_ns(*value_ns)
        ),
    }
}

/// What the verdict rests on, one line: the rates, the sends' lateness, the generator's
/// busiest thread, other processes, steal, the clock and the timed wake-up.
pub fn evidence_text(summary: &Summary, v: &Validity) -> String {
    let g = &summary.generator;
    let r = &summary.requests;
    let mut parts = Vec::new();
    let sent_rate = r.sent as f64 / summary.duration.attack_s.max(f64::MIN_POSITIVE);
    let offered = r
        .offered
        .map(|o| {
            format!(
                "{} req/s offered, {} sent",
                thousands(o),
                thousands(sent_rate)
            )
        })
        .unwrap_or_else(|| format!("{} req/s sent", thousands(sent_rate)));
    parts.push(if summary.open_loop && g.lateness.count == 0 {
        match r.offered {
            Some(o) => format!("{} req/s offered, no requests sent", thousands(o)),
            None => "no requests sent".into(),
        }
    } else if summary.open_loop {
        format!(
            "{offered}, {} answered; sends p99 {} late",
            thousands(r.throughput),
            format_ns(g.lateness.p99_ns)
        )
    } else {
        format!(
            "closed loop: {} req/s sent, {} answered",
            thousands(sent_rate),
            thousands(r.throughput)
        )
    });
    if let Some(b) = g.busiest_thread {
        parts.push(format!("busiest thread {:.0} % of a core", b * 100.0));
    }
    if let Some(o) = summary.generator.others_share() {
        parts.push(format!("others {:.0} % of its CPUs", o * 100.0));
    }
    if let Some(s) = g.steal {
        parts.push(format!("steal {:.1} %", s * 100.0));
    }
    if let Some(f) = &v.floor {
        parts.push(format!(
            "clock {} {:.0} ns a reading ({})",
            f.clock_source.as_deref().unwrap_or("unknown"),
            f.clock_read_ns,
            if f.vdso { "vDSO" } else { "a system call" }
        ));
        parts.push(format!(
            "a timed wake-up {} of CPU, {} late at p50, {} at p99",
            format_ns(f.wakeup_cpu_ns.round() as u64),
            format_ns(f.wakeup_late_p50_ns.round() as u64),
            format_ns(f.wakeup_late_p99_ns.round() as u64)
        ));
    }
    parts.join("; ")
}

/// A machine's self-test, one sentence, as a run's page cites it.
pub fn selftest_text(t: &store::selftest::SelfTest) -> String {
    let when =
        std::time::UNIX_EPOCH + std::time::Duration::from_nanos(t.measured_at_ns.max(0) as u64);
    let o = &t.omission;
    let p = &t.pacing;
    format!(
        "This host's self-test (loadgen selftest, {}): corrected p99 {} against {} true on a \
         server freezing {} every {} ({:.1} % off, {}); one thread paced cleanly up to {} req/s, \
         {:.2}× its unthrottled {}; a timed wake-up {} late at p99.",
        humantime::format_rfc3339_seconds(when),
        format_ns(o.corrected_p99_ns),
        format_ns(o.truth_p99_ns),
        format_ns(o.stall_ns),
        format_ns(o.every_ns),
        o.error * 100.0,
        if o.held() { "held" } else { "missed its 2 %" },
        thousands(p.clean_rps),
        p.ratio(),
        thousands(p.unthrottled_rps),
        format_ns(t.floor.wakeup_late_p99_ns.round() as u64),
    )
}

/// The self-test in words, as `loadgen selftest` prints it (the page cites it with
/// [`selftest_text`]).
pub fn selftest_report(t: &store::selftest::SelfTest) -> String {
    let f = &t.floor;
    let o = &t.omission;
    let p = &t.pacing;
    format!(
        "Self-test of {} ({}, {} CPUs):\n\
         \x20 clock        {} {:.0} ns a reading ({}); a system call {:.0} ns\n\
         \x20 wake-up      {} of CPU, {} late at p50, {} at p99 ({} timed wake-ups)\n\
         \x20 omission     corrected p99 {} against {} true (freezing {} every {}, {} req/s over {} connections): {:.1} % off, {} (within {:.0} %)\n\
         \x20              service p99 {}: what a tool timing from the send reports\n\
         \x20 pacing       one thread: {} req/s unthrottled (closed loop, {} connections); paced cleanly up to {} req/s, {:.2}× of it\n",
        t.host,
        t.kernel,
        t.cpus,
        f.clock_source.as_deref().unwrap_or("unknown"),
        f.clock_read_ns,
        if f.vdso { "vDSO" } else { "a system call" },
        f.syscall_ns,
        format_ns(f.wakeup_cpu_ns.round() as u64),
        format_ns(f.wakeup_late_p50_ns.round() as u64),
        format_ns(f.wakeup_late_p99_ns.round() as u64),
        f.wakeups,
        format_ns(o.corrected_p99_ns),
        format_ns(o.truth_p99_ns),
        format_ns(o.stall_ns),
        format_ns(o.every_ns),
        thousands(o.rate),
        o.connections,
        o.error * 100.0,
        if o.held() { "held" } else { "MISSED" },
        o.limit * 100.0,
        format_ns(o.service_p99_ns),
        thousands(p.unthrottled_rps),
        p.unthrottled_connections,
        thousands(p.clean_rps),
        p.ratio(),
    )
}

#[cfg(test)]
mod tests;
