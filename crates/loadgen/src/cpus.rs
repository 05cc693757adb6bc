//! The CPUs this process may run on, and how busy they were (every process counted), from
//! `/proc/stat`: when sends run late while the generator's own threads are far from busy, a
//! busy CPU means another process took it.

use rustix::thread::{sched_getaffinity, CpuSet};

/// Busy and total clock ticks of some CPUs at one moment.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Ticks {
    busy: u64,
    total: u64,
}

/// The CPUs this process may run on (its affinity), in order.
pub fn allowed() -> Vec<usize> {
    match sched_getaffinity(None) {
        Ok(set) => (0..CpuSet::MAX_CPU).filter(|&c| set.is_set(c)).collect(),
        Err(_) => Vec::new(),
    }
}

/// `0-1,3`: a CPU list as taskset writes it.
pub fn list(cpus: &[usize]) -> String {
    let mut parts: Vec<String> = Vec::new();
    let mut i = 0;
    while i < cpus.len() {
        let mut j = i;
        while j + 1 < cpus.len() && cpus[j + 1] == cpus[j] + 1 {
            j += 1;
        }
        parts.push(if i == j {
            cpus[i].to_string()
        } else {
            format!("{}-{}", cpus[i], cpus[j])
        });
        i = j + 1;
    }
    parts.join(",")
}

/// The ticks of `cpus` now (`None` without /proc/stat).
pub fn ticks(cpus: &[usize]) -> Option<Ticks> {
    let stat = std::fs::read_to_string("/proc/stat").ok()?;
    Some(parse(&stat, cpus))
}

/// Adds up the `cpuN` lines of /proc/stat for `cpus`: busy is everything but idle and iowait
/// (proc(5): user nice system idle iowait irq softirq steal).
fn parse(stat: &str, cpus: &[usize]) -> Ticks {
    let mut out = Ticks::default();
    for line in stat.lines() {
        let mut fields = line.split_whitespace();
        let Some(name) = fields.next() else { continue };
        let Some(cpu) = name
            .strip_prefix("cpu")
            .and_then(|n| n.parse::<usize>().ok())
        else {
            continue;
        };
        if !cpus.contains(&cpu) {
            continue;
        }
        let values: Vec<u64> = fields.take(8).filter_map(|v| v.parse().ok()).collect();
        let total: u64 = values.iter().sum();
        let idle = values.get(3).copied().unwrap_or(0) + values.get(4).copied().unwrap_or(0);
        out.total += total;
        out.busy += total - idle.min(total);
    }
    out
}

/// The busy share (0–1) between two readings, if time passed.
pub fn busy_between(before: Ticks, after: Ticks) -> Option<f64> {
    let total = after.total.checked_sub(before.total)?;
    let busy = after.busy.checked_sub(before.busy)?;
    (total > 0).then(|| busy as f64 / total as f64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_the_allowed_cpus_count_and_idle_is_not_busy() {
        let stat =
            "cpu  10 0 10 80 0 0 0 0 0 0\ncpu0 5 0 5 40 0 0 0 0 0 0\ncpu1 100 0 0 0 0 0 0 0 0 0\n";
        assert_eq!(
            parse(stat, &[0]),
            Ticks {
                busy: 10,
                total: 50
            }
        );
        assert_eq!(
            parse(stat, &[0, 1]),
            Ticks {
                busy: 110,
                total: 150
            }
        );
        let before = Ticks {
            busy: 10,
            total: 50,
        };
        let after = Ticks {
            busy: 55,
            total: 100,
        };
        assert_eq!(busy_between(before, after), Some(0.9));
        assert_eq!(busy_between(after, after), None);
    }

    #[test]
    fn cpu_lists_read_as_taskset_writes_them() {
        assert_eq!(list(&[0, 1, 3]), "0-1,3");
        assert_eq!(list(&[2]), "2");
        assert_eq!(list(&[]), "");
    }
}
