//! The host in each sitting, beside its figures: how much CPU time the hypervisor gave to other
//! guests (steal), the CPUs' clock, and a load from memory (a pointer chase through 64 MiB
//! timed after each step of a search). A sitting's figures moved by its host move these too;
//! a change in a target's series with none here is the target's own.

use serde::{Deserialize, Serialize};

use crate::capacity::StepHost;
use store::run::StoredRun;

/// The host over one sitting: each figure the mean over the steps and runs that read it.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct SittingHost {
    /// The share of the host's CPU time stolen by the hypervisor, %.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub steal_pct: Option<f64>,
    /// The CPUs' mean clock as the kernel reports it, MHz.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cpu_mhz: Option<f64>,
    /// One dependent load from memory, ns (searches' steps only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub chase_ns: Option<f64>,
    /// The search steps and fixed-rate runs these are over.
    pub over: usize,
}

impl SittingHost {
    /// "steal 0.4 %, 2445 MHz, a load from memory 96 ns (over 40 steps and runs)".
    pub fn text(&self) -> String {
        let mut parts = Vec::new();
        if let Some(s) = self.steal_pct {
            parts.push(format!("steal {s:.1} %"));
        }
        if let Some(m) = self.cpu_mhz {
            parts.push(format!("{m:.0} MHz"));
        }
        if let Some(c) = self.chase_ns {
            parts.push(format!("a load from memory {c:.0} ns"));
        }
        format!("{} (over {} steps and runs)", parts.join(", "), self.over)
    }
}

/// What one sitting's steps and runs read of the host.
#[derive(Debug, Default)]
pub(crate) struct Gather {
    steal: Vec<f64>,
    mhz: Vec<f64>,
    chase: Vec<f64>,
    over: usize,
}

fn mean(v: &[f64]) -> Option<f64> {
    (!v.is_empty()).then(|| v.iter().sum::<f64>() / v.len() as f64)
}

impl Gather {
    /// A search's step, as it read the host.
    pub(crate) fn step(&mut self, h: &StepHost) {
        self.over += 1;
        if h.steal_pct.is_finite() {
            self.steal.push(h.steal_pct);
        }
        self.mhz.extend(h.cpu_mhz.filter(|m| m.is_finite()));
        self.chase.extend(h.chase_ns.filter(|c| c.is_finite()));
    }

    /// A fixed-rate run: the steal its target's probe read of the host over the attack, as the
    /// run's saturation figures have it (`crate::system::System`).
    pub(crate) fn run(&mut self, run: &StoredRun) {
        let Some(end) = run
            .summary
            .as_ref()
            .map(|s| (s.duration.attack_s * 1e9) as i64)
        else {
            return;
        };
        let steal = crate::system::System::of(&run.probes, 0, end).and_then(|s| s.target.steal);
        if let Some(s) = steal.filter(|s| s.is_finite()) {
            self.over += 1;
            self.steal.push(s * 100.0);
        }
    }

    /// The sitting's host; `None` where nothing read it.
    pub(crate) fn done(&self) -> Option<SittingHost> {
        (self.over > 0).then(|| SittingHost {
            steal_pct: mean(&self.steal),
            cpu_mhz: mean(&self.mhz),
            chase_ns: mean(&self.chase),
            over: self.over,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Each figure is the mean of the steps that read it; a step without a clock or a chase
    /// leaves those out rather than counting as zero.
    #[test]
    fn a_sittings_host_is_the_mean_of_what_read_it() {
        let mut g = Gather::default();
        assert_eq!(g.done(), None);
        g.step(&StepHost {
            steal_pct: 1.0,
            busy_pct: 50.0,
            cpu_mhz: Some(2400.0),
            others_on_generator_pct: None,
            chase_ns: Some(90.0),
        });
        g.step(&StepHost {
            steal_pct: 3.0,
            busy_pct: 50.0,
            cpu_mhz: None,
            others_on_generator_pct: None,
            chase_ns: Some(110.0),
        });
        let h = g.done().unwrap();
        assert_eq!(h.steal_pct, Some(2.0));
        assert_eq!(h.cpu_mhz, Some(2400.0));
        assert_eq!(h.chase_ns, Some(100.0));
        assert_eq!(h.over, 2);
        assert_eq!(
            h.text(),
            "steal 2.0 %, 2400 MHz, a load from memory 100 ns (over 2 steps and runs)"
        );
    }
}
