use store::summary::{Flaw, Floor, GeneratorFacts, Verdict};

use super::*;
use crate::summary::tests::summary_of;

/// A machine whose clock is read in user space and whose timed wake-ups are `p99_us` late at
/// p99.
fn floor(p99_us: f64, vdso: bool) -> Floor {
    Floor {
        clock_source: Some("tsc".into()),
        clock_read_ns: if vdso { 22.0 } else { 410.0 },
        syscall_ns: 400.0,
        vdso,
        wakeups: 200,
        wakeup_cpu_ns: 17_000.0,
        wakeup_late_p50_ns: p99_us * 600.0,
        wakeup_late_p99_ns: p99_us * 1_000.0,
    }
}

fn kinds(v: &Validity) -> Vec<&'static str> {
    v.flaws
        .iter()
        .map(|f| match f {
            Flaw::Behind { .. } => "behind",
            Flaw::BusyThread { .. } => "busy thread",
            Flaw::Others { .. } => "others",
            Flaw::Steal { .. } => "steal",
            Flaw::ClockSyscall { .. } => "clock",
            Flaw::WithinFloor { .. } => "floor",
        })
        .collect()
}

#[test]
fn a_run_on_a_quiet_machine_is_valid_and_says_what_it_rests_on() {
    let s = summary_of(
        0,
        GeneratorFacts {
            busiest_thread: Some(0.2),
            cpus_busy: Some((0.3, "0-1".into())),
            own_share: Some(0.1),
            steal: Some(0.001),
            ..Default::default()
        },
    );
    let mut s = s;
    s.requests.throughput = 998.0;
    s.requests.offered = Some(1_000.0);
    let v = judge(&s, Some(&floor(35.0, true)));
    assert_eq!((v.verdict, kinds(&v)), (Verdict::Valid, vec![]));
    assert_eq!(verdict_text(&v), "valid");
    let e = evidence_text(&s, &v);
    for words in [
        "1,000 req/s offered, 1,000 sent, 998 answered",
        "busiest thread 20 % of a core",
        "others 20 % of its CPUs",
        "steal 0.1 %",
        "clock tsc 22 ns a reading (vDSO)",
        "35.0µs at p99",
    ] {
        assert!(e.contains(words), "{words:?} in {e}");
    }
    // Without a floor, the verdict rests on the run alone.
    assert_eq!(judge(&s, None).verdict, Verdict::Valid);
    // A run that sent nothing (every connection refused) says so, not a lateness of 0.
    let mut none = s.clone();
    none.generator.lateness.count = 0;
    none.requests.sent = 0;
    let e = evidence_text(&none, &judge(&none, None));
    assert!(
        e.starts_with("1,000 req/s offered, no requests sent;"),
        "{e}"
    );
}

#[test]
fn a_generator_that_held_its_own_sends_back_degrades_the_run() {
    // 3,000 of 30,000 sends 5 ms late while a thread saturated its core.
    let s = summary_of(
        3_000,
        GeneratorFacts {
            busiest_thread: Some(0.97),
            ..Default::default()
        },
    );
    let v = judge(&s, Some(&floor(35.0, true)));
    assert_eq!(v.verdict, Verdict::Degraded);
    assert_eq!(kinds(&v), vec!["behind", "busy thread"]);
    let t = verdict_text(&v);
    assert!(
        t.starts_with("degraded: 3,000 of 30,000 sends over 1 ms late (p99 5.00ms), held back by generator; the generator's busiest thread took 97 % of a core"),
        "{t}"
    );
}

#[test]
fn other_processes_steal_and_a_clock_that_is_a_system_call_degrade_it() {
    let busy = GeneratorFacts {
        busiest_thread: Some(0.3),
        cpus_busy: Some((0.95, "0".into())),
        own_share: Some(0.3),
        steal: Some(0.08),
        ..Default::default()
    };
    let v = judge(&summary_of(0, busy), Some(&floor(35.0, false)));
    assert_eq!(v.verdict, Verdict::Degraded);
    assert_eq!(kinds(&v), vec!["others", "steal", "clock"]);
    let t = verdict_text(&v);
    assert!(
        t.contains("other processes took 65 % of the generator's CPUs"),
        "{t}"
    );
    assert!(t.contains("stole 8.0 %"), "{t}");
    assert!(
        t.contains("clock_gettime is a system call here (clock source tsc): 410 ns"),
        "{t}"
    );
    // Others on CPUs that were not saturated delayed nothing: named, not a flaw.
    let shared = GeneratorFacts {
        cpus_busy: Some((0.6, "0".into())),
        own_share: Some(0.1),
        ..Default::default()
    };
    assert_eq!(
        judge(&summary_of(0, shared), Some(&floor(35.0, true))).verdict,
        Verdict::Valid
    );
}

#[test]
fn latencies_within_a_wake_ups_lateness_are_not_measurable_and_a_p50_within_it_degrades() {
    // Every request took 1 ms: a machine whose wake-ups are 2 ms late at p99 cannot tell.
    let s = summary_of(0, GeneratorFacts::default());
    let v = judge(&s, Some(&floor(2_000.0, true)));
    assert_eq!(
        (v.verdict, kinds(&v)),
        (Verdict::NotMeasurable, vec!["floor"])
    );
    assert_eq!(
        verdict_text(&v),
        "not measurable: latencies below 2.00ms cannot be told apart here (a timed wake-up is \
         that late at p99), and the run's corrected p99 was 1.00ms"
    );
    // A p50 of 20 µs within 35 µs, a p99 of 1 ms outside: the tail can be told, the middle not.
    let mut fast = s.clone();
    fast.latency.corrected.p50_ns = 20_000;
    let v = judge(&fast, Some(&floor(35.0, true)));
    assert_eq!((v.verdict, kinds(&v)), (Verdict::Degraded, vec!["floor"]));
    assert!(verdict_text(&v).ends_with("corrected p50 was 20.0µs"));
}

#[test]
fn a_server_that_held_the_sends_back_leaves_the_run_valid() {
    let mut s = summary_of(3_000, GeneratorFacts::default());
    s.generator.limited_by = Some(LimitedBy::ServerResponses);
    assert_eq!(judge(&s, None).verdict, Verdict::Valid);
    s.generator.limited_by = Some(LimitedBy::ConnectionCap);
    assert_eq!(kinds(&judge(&s, None)), vec!["behind"]);
}
