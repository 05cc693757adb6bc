//! The kernel's side of profiling: one `cpu-clock` sampling event per online CPU, for every
//! process (the watched tree is picked out afterwards, so threads and children that appear
//! between two of the sampler's ticks are never missed), with kernel and user call chains from
//! frame pointers; read from their ring buffers without blocking.
//!
//! `cpu-clock` is a software event (an hrtimer), so it works where there is no PMU: VMs,
//! Firecracker, EC2 t3.

use perf_event::data::Record as PerfRecord;
use perf_event::events::Software;
use perf_event::{Builder, SampleFlag, Sampler};

/// Bytes of each CPU's ring buffer: ten 1 KiB stacks a CPU between two reads 100 ms apart at
/// 99 Hz fill a third of it.
const RING_BYTES: usize = 32 << 10;

/// One sampled stack, as the kernel wrote it.
#[derive(Debug)]
pub(super) struct RawSample<'a> {
    pub pid: u32,
    pub tid: u32,
    /// CPU time the sample stands for (ns).
    pub period: u64,
    /// Innermost first, with the kernel's context markers (`PERF_CONTEXT_KERNEL`, `…_USER`).
    pub chain: &'a [u64],
}

/// The per-CPU events, enabled.
pub(super) struct CpuEvents {
    samplers: Vec<Sampler>,
}

impl CpuEvents {
    /// Opens and enables a `cpu-clock` event sampling at `hz` on each of `cpus`; the error is
    /// one line that says why and what to change.
    pub fn open(cpus: &[usize], hz: u32) -> Result<Self, Refusal> {
        let mut samplers = Vec::with_capacity(cpus.len());
        for &cpu in cpus {
            let sampler = Builder::new(Software::CPU_CLOCK)
                .one_cpu(cpu)
                .any_pid()
                .sample_frequency(u64::from(hz))
                .sample(SampleFlag::TID | SampleFlag::PERIOD | SampleFlag::CALLCHAIN)
                .include_kernel()
                .build()
                .map_err(|e| refusal(e, "open a cpu-clock sampling event"))?
                .sampled(RING_BYTES)
                .map_err(|e| refusal(e, "map the sampling ring buffer"))?;
            samplers.push(sampler);
        }
        for sampler in &mut samplers {
            sampler
                .as_counter_mut()
                .enable()
                .map_err(|e| refusal(e, "enable the sampling event"))?;
        }
        Ok(CpuEvents { samplers })
    }

    /// Hands every sample written since the last call to `each`; returns how many samples the
    /// kernel reported lost (its ring was full).
    pub fn drain(&mut self, mut each: impl FnMut(RawSample<'_>)) -> u64 {
        let mut lost = 0;
        for sampler in &mut self.samplers {
            while let Some(record) = sampler.next_record() {
                match record.parse_record() {
                    Ok(PerfRecord::Sample(s)) => {
                        if let (Some(pid), Some(tid), Some(chain)) =
                            (s.pid(), s.tid(), s.callchain())
                        {
                            each(RawSample {
                                pid,
                                tid,
                                period: s.period().unwrap_or(0),
                                chain,
                            });
                        }
                    }
                    Ok(PerfRecord::Lost(l)) => lost += l.lost,
                    Ok(PerfRecord::LostSamples(l)) => lost += l.lost,
                    // Throttling and other records say nothing about stacks.
                    _ => {}
                }
            }
        }
        lost
    }
}

/// Why the kernel refused to profile, in one line naming the capability and the sysctls;
/// `what` is the step refused, `error` the kernel's answer.
#[derive(Debug, thiserror::Error)]
pub(super) enum Refusal {
    /// `paranoid`: `kernel.perf_event_paranoid`'s value, or "unknown".
    #[error("profiling refused ({what}: {error}): the probe needs CAP_PERFMON (the systemd unit grants it; or run it as root), or kernel.perf_event_paranoid <= 0 (it is {paranoid}: sysctl -w kernel.perf_event_paranoid=0); with many CPUs also kernel.perf_event_mlock_kb or CAP_IPC_LOCK")]
    NotPermitted {
        what: &'static str,
        error: std::io::Error,
        paranoid: String,
    },
    #[error("profiling unavailable ({what}: {error}): this kernel has no cpu-clock event (CONFIG_PERF_EVENTS)")]
    NoEvent {
        what: &'static str,
        error: std::io::Error,
    },
    #[error("profiling unavailable ({what}: {error}): perf_event_open is not allowed here (a seccomp filter, or a kernel without CONFIG_PERF_EVENTS)")]
    NotAllowed {
        what: &'static str,
        error: std::io::Error,
    },
    #[error("profiling unavailable ({what}: {error})")]
    Unavailable {
        what: &'static str,
        error: std::io::Error,
    },
}

/// Why the kernel refused, by its answer.
fn refusal(error: std::io::Error, what: &'static str) -> Refusal {
    use nix::libc::{EACCES, ENOENT, ENOSYS, EOPNOTSUPP, EPERM};
    match error.raw_os_error().unwrap_or(0) {
        EACCES | EPERM => Refusal::NotPermitted {
            what,
            error,
            paranoid: std::fs::read_to_string("/proc/sys/kernel/perf_event_paranoid")
                .map(|s| s.trim().to_string())
                .unwrap_or_else(|_| "unknown".into()),
        },
        ENOENT | EOPNOTSUPP => Refusal::NoEvent { what, error },
        ENOSYS => Refusal::NotAllowed { what, error },
        _ => Refusal::Unavailable { what, error },
    }
}
