//! The CPUs this process may run on, and how busy they were (every process counted), from
//! `/proc/stat`: when sends run late while the generator's own threads are far from busy, a
//! busy CPU means another process took it. Lists and ticks are read by `probe::cpus`.

pub use probe::cpus::busy_between;
use probe::cpus::CpuList;
use rustix::thread::{sched_getaffinity, CpuSet};

/// The CPUs this process may run on (its affinity).
pub fn allowed() -> CpuList {
    match sched_getaffinity(None) {
        Ok(set) => CpuList::new((0..CpuSet::MAX_CPU).filter(|&c| set.is_set(c)).collect()),
        Err(_) => CpuList::default(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn busy_is_the_share_of_ticks_between_two_readings() {
        assert_eq!(busy_between((10, 50), (55, 100)), Some(0.9));
        assert_eq!(busy_between((55, 100), (55, 100)), None);
        assert!(!allowed().is_empty());
    }
}
