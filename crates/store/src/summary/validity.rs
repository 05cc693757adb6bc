//! Whether a run's figures can be trusted on the machine that made them: what the machine can
//! time ([`Floor`], measured by the generator once a process and by `loadgen selftest`) and
//! what went wrong during the run ([`Flaw`]), judged by `analysis::validity` into one
//! [`Verdict`]. Kept in the run's summary.

use serde::{Deserialize, Serialize};

use crate::vocabulary::LimitedBy;

/// What this machine can time: its clock and its timed wake-ups.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Floor {
    /// The kernel's clock source (`tsc`, `kvm-clock`, `hpet`, …), where /sys says.
    pub clock_source: Option<String>,
    /// One reading of `CLOCK_MONOTONIC`, ns: what the generator pays for each time it takes.
    pub clock_read_ns: f64,
    /// One reading of the thread's CPU clock, ns: always a system call, the yardstick.
    pub syscall_ns: f64,
    /// Whether `clock_gettime` is answered in user space (the vDSO): a reading costs under
    /// half a system call.
    pub vdso: bool,
    /// The timed wake-ups measured (a `timerfd` at an absolute deadline, as the generator
    /// paces).
    pub wakeups: u32,
    /// The CPU time one wake-up costs the waking thread, ns.
    pub wakeup_cpu_ns: f64,
    /// How late a wake-up is after its deadline, p50 and p99, ns: a response that arrives
    /// while the generator sleeps is read that late, so latencies within it cannot be told
    /// apart here.
    pub wakeup_late_p50_ns: f64,
    pub wakeup_late_p99_ns: f64,
}

/// A run's verdict: its figures hold, hold with a reason to doubt them, or cannot be told
/// apart from the machine's own delays.
#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum Verdict {
    Valid,
    Degraded,
    NotMeasurable,
}

/// One reason to doubt a run's figures, with the measurement that shows it.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Flaw {
    /// Sends ran late and the generator or its host, not the server, held them back.
    Behind {
        late: u64,
        sent: u64,
        p99_late_ns: u64,
        by: LimitedBy,
    },
    /// The generator's busiest thread took this share of a core (0–1).
    BusyThread { share: f64 },
    /// Other processes took this share of the generator's CPUs' time (0–1).
    Others { share: f64 },
    /// The hypervisor took this share of the CPUs' time for other guests (0–1).
    Steal { share: f64 },
    /// `clock_gettime` is a system call here: each time taken costs this much.
    ClockSyscall {
        clock_source: Option<String>,
        read_ns: f64,
    },
    /// A corrected quantile of the run lies within the machine's wake-up lateness (p99).
    WithinFloor {
        percentile: f64,
        value_ns: u64,
        floor_ns: u64,
    },
}

/// A run's verdict, its reasons, and the machine's floor it was judged against.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Validity {
    pub verdict: Verdict,
    /// Every reason to doubt the run, most important first (none when valid).
    pub flaws: Vec<Flaw>,
    /// The machine's floor, where it was measured.
    pub floor: Option<Floor>,
}
