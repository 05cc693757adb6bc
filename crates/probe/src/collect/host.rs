//! The host's figures: CPU (total and per core), memory, load, TCP sockets system-wide, from
//! files kept open and read again at each full tick; and its facts (name, kernel, FD limit).

use std::fs::File;
use std::io;

use crate::collect::{field, pread_all, ProcRoot};
use crate::cpus::Ticks as CpuTicks;
use crate::sample::HostSample;

/// The host's files, kept open and re-read at each tick.
#[derive(Debug)]
pub struct HostFiles {
    stat: File,
    meminfo: File,
    loadavg: File,
    sockstat: Option<File>,
    /// `pressure/cpu`, where the kernel has PSI.
    pressure: Option<File>,
    previous: CpuTicks,
    /// The last `pressure/cpu` "some total" (µs) and when it was read (ns).
    previous_pressure: Option<(u64, u64)>,
    buf: Vec<u8>,
}

impl HostFiles {
    pub fn open(root: &ProcRoot) -> io::Result<Self> {
        Ok(HostFiles {
            stat: File::open(root.file("stat"))?,
            meminfo: File::open(root.file("meminfo"))?,
            loadavg: File::open(root.file("loadavg"))?,
            sockstat: File::open(root.file("net/sockstat")).ok(),
            pressure: File::open(root.file("pressure/cpu")).ok(),
            previous: CpuTicks::default(),
            previous_pressure: None,
            buf: Vec::with_capacity(8192),
        })
    }

    /// The host's figures; CPU % over the time since the previous call.
    pub fn sample(&mut self) -> io::Result<HostSample> {
        pread_all(&self.stat, &mut self.buf)?;
        let now = CpuTicks::parse(&String::from_utf8_lossy(&self.buf));
        let pct = |(b1, t1): (u64, u64), (b0, t0): (u64, u64)| {
            (t1 > t0).then(|| 100.0 * b1.saturating_sub(b0) as f64 / (t1 - t0) as f64)
        };
        let cores = now.per_cpu.len().max(1) as f64;
        let cpu_pct = if self.previous.per_cpu.is_empty() {
            None
        } else {
            pct(now.all, self.previous.all).map(|p| p * cores)
        };
        let per_core_pct = now
            .per_cpu
            .iter()
            .zip(self.previous.per_cpu.iter())
            .map(|(&(_, b1, t1), &(_, b0, t0))| pct((b1, t1), (b0, t0)).unwrap_or(0.0))
            .collect();
        let steal_pct = if self.previous.per_cpu.is_empty() {
            None
        } else {
            pct(
                (now.steal, now.all.1),
                (self.previous.steal, self.previous.all.1),
            )
        };
        self.previous = now;
        let mut sample = HostSample {
            cpu_pct,
            per_core_pct,
            steal_pct,
            ..Default::default()
        };
        if let Some(file) = &self.pressure {
            let now_ns = crate::clock::mono_ns();
            if pread_all(file, &mut self.buf).is_ok() {
                let total = some_total_us(&String::from_utf8_lossy(&self.buf));
                if let (Some(total), Some((before, at))) = (total, self.previous_pressure) {
                    if now_ns > at {
                        sample.cpu_pressure_pct = Some(
                            (100.0 * total.saturating_sub(before) as f64 * 1e3
                                / (now_ns - at) as f64)
                                .min(100.0),
                        );
                    }
                }
                self.previous_pressure = total.map(|t| (t, now_ns));
            }
        }
        pread_all(&self.meminfo, &mut self.buf)?;
        {
            let text = String::from_utf8_lossy(&self.buf);
            sample.mem_total_bytes = field(&text, "MemTotal:").unwrap_or(0) * 1024;
            sample.mem_available_bytes = field(&text, "MemAvailable:").unwrap_or(0) * 1024;
        }
        pread_all(&self.loadavg, &mut self.buf)?;
        {
            let text = String::from_utf8_lossy(&self.buf);
            for (slot, word) in sample.load.iter_mut().zip(text.split_whitespace()) {
                *slot = word.parse().unwrap_or(0.0);
            }
        }
        if let Some(file) = &self.sockstat {
            pread_all(file, &mut self.buf)?;
            parse_sockstat(&String::from_utf8_lossy(&self.buf), &mut sample);
        }
        Ok(sample)
    }
}

/// A pressure file's "some" line: `some avg10=0.00 avg60=0.00 avg300=0.00 total=12345` (µs).
pub fn some_total_us(text: &str) -> Option<u64> {
    text.lines()
        .find(|l| l.starts_with("some "))?
        .split_whitespace()
        .find_map(|w| w.strip_prefix("total="))?
        .parse()
        .ok()
}

/// `net/sockstat`'s TCP line: `TCP: inuse 5 orphan 0 tw 2 alloc 7 mem 1`.
fn parse_sockstat(text: &str, sample: &mut HostSample) {
    let field = |name| sockstat_value(text, "TCP:", name).unwrap_or(0);
    sample.tcp_inuse = field("inuse");
    sample.tcp_orphan = field("orphan");
    sample.tcp_time_wait = field("tw");
    sample.tcp_alloc = field("alloc");
}

/// The value after `field` on the line of a `sockstat` file that starts with `key` (`TCP:`,
/// `TCP6:`).
pub(crate) fn sockstat_value(text: &str, key: &str, field: &str) -> Option<u64> {
    let line = text
        .lines()
        .find(|l| l.split_whitespace().next() == Some(key))?;
    let mut words = line.split_whitespace().skip(1);
    while let (Some(name), Some(value)) = (words.next(), words.next()) {
        if name == field {
            return value.parse().ok();
        }
    }
    None
}

/// The hostname, kernel release and system-wide FD limit.
pub fn host_facts(root: &ProcRoot) -> (String, String, Option<u64>) {
    let read = |name: &str| {
        std::fs::read_to_string(root.file(name))
            .map(|s| s.trim().to_string())
            .ok()
    };
    (
        read("sys/kernel/hostname").unwrap_or_default(),
        read("sys/kernel/osrelease").unwrap_or_default(),
        read("sys/fs/file-max").and_then(|s| s.parse().ok()),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sockstat_tcp_line_is_read() {
        let mut s = HostSample::default();
        parse_sockstat(
            "sockets: used 12\nTCP: inuse 5 orphan 1 tw 218 alloc 7 mem 0\nUDP: inuse 0 mem 0\n",
            &mut s,
        );
        assert_eq!(
            (s.tcp_inuse, s.tcp_orphan, s.tcp_time_wait, s.tcp_alloc),
            (5, 1, 218, 7)
        );
    }
}
