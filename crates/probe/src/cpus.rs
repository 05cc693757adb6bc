//! CPUs, read once for every crate: CPU lists as `taskset` and the kernel write them (`0-1,3`),
//! and the busy and total clock ticks of `/proc/stat`'s `cpu` lines.

use std::fmt;
use std::str::FromStr;

/// The highest CPU number a list may name: the kernel's affinity masks hold 1,024 CPUs
/// (`CPU_SETSIZE`), and a larger number is a typo, not a machine.
pub const MAX_CPU: usize = 1023;

/// A set of CPUs, in order, without repeats: `"0-1,3"`.
#[derive(Debug, Clone, PartialEq, Eq, Default, Hash)]
pub struct CpuList(Vec<usize>);

/// Why a CPU list could not be read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CpuListError {
    #[error("{0:?} is not a CPU list such as \"0\" or \"0-1,3\"")]
    Malformed(String),
    #[error("{list:?} names CPU {cpu}, beyond the {MAX_CPU} a CPU list may name")]
    TooHigh { list: String, cpu: usize },
    #[error("{list:?} names CPU {cpu}, which this host does not have (its CPUs: {online})")]
    NotOnline {
        list: String,
        cpu: usize,
        online: CpuList,
    },
}

impl CpuList {
    pub fn new(mut cpus: Vec<usize>) -> Self {
        cpus.sort_unstable();
        cpus.dedup();
        CpuList(cpus)
    }

    /// The CPUs, in order.
    pub fn cpus(&self) -> &[usize] {
        &self.0
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    pub fn len(&self) -> usize {
        self.0.len()
    }

    pub fn contains(&self, cpu: usize) -> bool {
        self.0.binary_search(&cpu).is_ok()
    }

    /// The CPUs both lists name.
    pub fn intersection(&self, other: &CpuList) -> CpuList {
        CpuList(
            self.0
                .iter()
                .copied()
                .filter(|&c| other.contains(c))
                .collect(),
        )
    }

    /// The host's online CPUs (`/sys/devices/system/cpu/online`, else the `cpuN` lines of
    /// `/proc/stat`).
    pub fn online() -> CpuList {
        if let Some(list) = std::fs::read_to_string("/sys/devices/system/cpu/online")
            .ok()
            .and_then(|s| s.trim().parse().ok())
        {
            return list;
        }
        let stat = std::fs::read_to_string("/proc/stat").unwrap_or_default();
        CpuList::new(Ticks::parse(&stat).per_cpu.iter().map(|c| c.0).collect())
    }

    /// This list, if every CPU of it is online on this host.
    pub fn on_this_host(self) -> Result<CpuList, CpuListError> {
        let online = CpuList::online();
        match self.0.iter().find(|c| !online.contains(**c)) {
            Some(&cpu) if !online.is_empty() => Err(CpuListError::NotOnline {
                list: self.to_string(),
                cpu,
                online,
            }),
            _ => Ok(self),
        }
    }
}

impl FromStr for CpuList {
    type Err = CpuListError;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        let malformed = || CpuListError::Malformed(text.to_string());
        let number = |s: &str| {
            let s = s.trim();
            if s.is_empty() || !s.bytes().all(|b| b.is_ascii_digit()) {
                return Err(malformed());
            }
            match s.parse::<usize>() {
                Ok(n) if n <= MAX_CPU => Ok(n),
                _ => Err(CpuListError::TooHigh {
                    list: text.to_string(),
                    cpu: s.parse().unwrap_or(usize::MAX),
                }),
            }
        };
        let mut cpus = Vec::new();
        for part in text.split(',') {
            let (from, to) = match part.split_once('-') {
                Some((a, b)) => (number(a)?, number(b)?),
                None => {
                    let n = number(part)?;
                    (n, n)
                }
            };
            if from > to {
                return Err(malformed());
            }
            cpus.extend(from..=to);
        }
        Ok(CpuList::new(cpus))
    }
}

impl fmt::Display for CpuList {
    /// Runs of consecutive CPUs as ranges: `0-1,3`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let cpus = &self.0;
        let mut i = 0;
        while i < cpus.len() {
            let mut j = i;
            while j + 1 < cpus.len() && cpus[j + 1] == cpus[j] + 1 {
                j += 1;
            }
            if i > 0 {
                f.write_str(",")?;
            }
            if i == j {
                write!(f, "{}", cpus[i])?;
            } else {
                write!(f, "{}-{}", cpus[i], cpus[j])?;
            }
            i = j + 1;
        }
        Ok(())
    }
}

impl serde::Serialize for CpuList {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

impl<'de> serde::Deserialize<'de> for CpuList {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let text = String::deserialize(d)?;
        text.parse().map_err(serde::de::Error::custom)
    }
}

/// Busy and total clock ticks of the whole host and of each CPU, from `/proc/stat`'s `cpu` and
/// `cpuN` lines (proc(5): `user nice system idle iowait irq softirq steal`; busy is all but
/// idle and iowait, and guest time is already in user).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Ticks {
    /// (busy, total) of all CPUs.
    pub all: (u64, u64),
    /// Of all CPUs' busy ticks, those stolen by the hypervisor for other guests.
    pub steal: u64,
    /// (CPU number, busy, total) per CPU, in the file's order.
    pub per_cpu: Vec<(usize, u64, u64)>,
}

impl Ticks {
    /// The ticks now, from `/proc/stat` (`None` where it cannot be read).
    pub fn now() -> Option<Ticks> {
        std::fs::read_to_string("/proc/stat")
            .ok()
            .map(|stat| Ticks::parse(&stat))
    }

    pub fn parse(stat: &str) -> Ticks {
        let mut out = Ticks::default();
        for line in stat.lines().take_while(|l| l.starts_with("cpu")) {
            let mut words = line.split_whitespace();
            let name = words.next().unwrap_or("");
            let v: Vec<u64> = words.take(8).map(|w| w.parse().unwrap_or(0)).collect();
            if v.len() < 4 {
                continue;
            }
            let get = |i: usize| v.get(i).copied().unwrap_or(0);
            let idle = get(3) + get(4);
            let busy = get(0) + get(1) + get(2) + get(5) + get(6) + get(7);
            match name.strip_prefix("cpu") {
                Some("") => {
                    out.all = (busy, busy + idle);
                    out.steal = get(7);
                }
                Some(n) => {
                    if let Ok(cpu) = n.parse() {
                        out.per_cpu.push((cpu, busy, busy + idle));
                    }
                }
                None => {}
            }
        }
        out
    }

    /// (busy, total) of `cpus` added up.
    pub fn of(&self, cpus: &CpuList) -> (u64, u64) {
        self.per_cpu
            .iter()
            .filter(|(cpu, ..)| cpus.contains(*cpu))
            .fold((0, 0), |(b, t), &(_, busy, total)| (b + busy, t + total))
    }
}

/// The busy share (0–1) between two (busy, total) readings of ticks, if time passed.
pub fn busy_between(before: (u64, u64), after: (u64, u64)) -> Option<f64> {
    let total = after.1.checked_sub(before.1)?;
    let busy = after.0.checked_sub(before.0)?;
    (total > 0).then(|| busy as f64 / total as f64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lists_read_and_print_as_taskset_writes_them() {
        let list: CpuList = "3,0-1, 1".parse().unwrap();
        assert_eq!(list.cpus(), &[0, 1, 3]);
        assert_eq!(list.to_string(), "0-1,3");
        assert_eq!("2".parse::<CpuList>().unwrap().to_string(), "2");
        assert_eq!(CpuList::default().to_string(), "");
        for bad in ["", "a", "1-", "-1", "3-1", "1,,2", "+1", "1.5"] {
            assert!(
                matches!(bad.parse::<CpuList>(), Err(CpuListError::Malformed(_))),
                "{bad:?}"
            );
        }
        assert!(matches!(
            "2000".parse::<CpuList>(),
            Err(CpuListError::TooHigh { cpu: 2000, .. })
        ));
        assert!(matches!(
            "0-99999999999999999999999".parse::<CpuList>(),
            Err(CpuListError::TooHigh { .. })
        ));
        let far: CpuList = "1000".parse().unwrap();
        let err = far.on_this_host().unwrap_err().to_string();
        assert!(err.contains("this host does not have"), "{err}");
    }

    #[test]
    fn stat_lines_give_busy_and_total_ticks() {
        let stat = "cpu  10 0 10 80 0 0 0 0 0 0\ncpu0 5 0 5 40 0 0 0 0 0 0\ncpu1 100 0 0 0 0 0 0 0 0 0\nintr 5\n";
        let ticks = Ticks::parse(stat);
        assert_eq!(ticks.all, (20, 100));
        assert_eq!(ticks.per_cpu, vec![(0, 10, 50), (1, 100, 100)]);
        assert_eq!(ticks.of(&"0".parse().unwrap()), (10, 50));
        assert_eq!(ticks.of(&"0-1".parse().unwrap()), (110, 150));
    }
}
