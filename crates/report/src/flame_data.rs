//! A run's profile as data for the page's window flame graph: the stacks of each slice of the
//! attack window (a profile record, a second; a few merged on a long run), so that the page can
//! draw the stacks of whatever window its charts are zoomed to (a freeze, a step), and that
//! window against the rest of the run. A file beside the page, a script the page loads only
//! when asked: the run's page stays as light as before.

use std::collections::HashMap;

use serde::Serialize;

use crate::profile::ProfileFigures;

/// Slices at most: a one-hour run's records merged by 15 s keep the file near a megabyte
/// while a window still starts and ends within 15 s of where the reader put it.
pub const MAX_SLICES: usize = 240;

/// What the page's script draws from.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct ProfileData {
    pub hz: u32,
    /// Every frame name once (processes, threads, functions).
    pub frames: Vec<String>,
    /// Each stack as indices into `frames`, outermost first.
    pub stacks: Vec<Vec<u32>>,
    pub slices: Vec<SliceData>,
}

/// The samples of one stretch of the run.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct SliceData {
    /// Seconds on the run's timeline: the slice covers `(from, to]`.
    pub from: f64,
    pub to: f64,
    /// Pairs, flattened: a stack's index into `stacks`, its samples.
    pub counts: Vec<u64>,
}

impl ProfileData {
    /// The profile's slices, merged in runs of consecutive records when there are more than
    /// [`MAX_SLICES`]; `None` without a sample.
    pub fn of(profile: &ProfileFigures) -> Option<ProfileData> {
        if profile.samples == 0 || profile.slices.is_empty() {
            return None;
        }
        let mut records: Vec<&crate::profile::ProfileSlice> = profile.slices.iter().collect();
        records.sort_by(|a, b| a.to.total_cmp(&b.to));
        let per_slice = records.len().div_ceil(MAX_SLICES);
        let mut frames: Vec<String> = Vec::new();
        let mut frame_index: HashMap<&str, u32> = HashMap::new();
        let stacks: Vec<Vec<u32>> = profile
            .stacks
            .iter()
            .map(|stack| {
                stack
                    .split(';')
                    .map(|name| {
                        *frame_index.entry(name).or_insert_with(|| {
                            frames.push(name.to_string());
                            (frames.len() - 1) as u32
                        })
                    })
                    .collect()
            })
            .collect();
        let mut slices = Vec::new();
        for group in records.chunks(per_slice) {
            let mut counts: HashMap<u32, u64> = HashMap::new();
            for record in group {
                for &(stack, n) in &record.counts {
                    *counts.entry(stack).or_default() += n;
                }
            }
            let mut pairs: Vec<(u32, u64)> = counts.into_iter().collect();
            pairs.sort_unstable();
            slices.push(SliceData {
                from: group.first().map_or(0.0, |r| r.from),
                to: group.last().map_or(0.0, |r| r.to),
                counts: pairs
                    .into_iter()
                    .flat_map(|(s, n)| [u64::from(s), n])
                    .collect(),
            });
        }
        Some(ProfileData {
            hz: profile.hz,
            frames,
            stacks,
            slices,
        })
    }

    /// The file beside the page: a script that files the data under `key` for the page's
    /// script (a script, not JSON, because a page opened from disk may not fetch a file).
    pub fn script(&self, key: &str) -> String {
        let key = serde_json::to_string(key).unwrap_or_default();
        let json = serde_json::to_string(self).unwrap_or_default();
        format!("(window.showdownProfiles = window.showdownProfiles || {{}})[{key}] = {json};\n")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::profile::ProfileSlice;

    fn slice(k: usize, stacks: &[(u32, u64)]) -> ProfileSlice {
        ProfileSlice {
            from: k as f64 - 1.0,
            to: k as f64,
            counts: stacks.to_vec(),
        }
    }

    fn samples(data: &ProfileData, stack: &str) -> u64 {
        let index = data
            .stacks
            .iter()
            .position(|s| {
                s.iter()
                    .map(|&f| data.frames[f as usize].as_str())
                    .collect::<Vec<_>>()
                    .join(";")
                    == stack
            })
            .unwrap() as u64;
        data.slices
            .iter()
            .flat_map(|s| s.counts.chunks(2))
            .filter(|pair| pair[0] == index)
            .map(|pair| pair[1])
            .sum()
    }

    #[test]
    fn an_hour_of_records_fits_in_its_slices_without_losing_a_sample() {
        let mut profile = ProfileFigures {
            hz: 99,
            samples: 1,
            stacks: vec![
                "srv;main;main;handle;hash".into(),
                "srv;main;main;gc".into(),
            ],
            ..Default::default()
        };
        for k in 1..=3600 {
            let mut stacks = vec![(0, 60)];
            if k == 1800 {
                stacks.push((1, 7));
            }
            profile.slices.push(slice(k, &stacks));
        }
        let data = ProfileData::of(&profile).unwrap();
        assert_eq!(data.slices.len(), 240);
        assert_eq!((data.slices[0].from, data.slices[0].to), (0.0, 15.0));
        assert_eq!(data.slices[239].to, 3600.0);
        assert_eq!(samples(&data, "srv;main;main;handle;hash"), 60 * 3600);
        // The one second of gc is in the slice that covers it, and nowhere else.
        let gc = data
            .slices
            .iter()
            .filter(|s| s.counts.len() > 2)
            .map(|s| (s.from, s.to))
            .collect::<Vec<_>>();
        assert_eq!(gc, [(1785.0, 1800.0)]);
        assert_eq!(samples(&data, "srv;main;main;gc"), 7);
        assert_eq!(data.frames.len(), 5, "each frame named once");
        let script = data.script("run-1/probe-0");
        assert!(script.starts_with(
            "(window.showdownProfiles = window.showdownProfiles || {})[\"run-1/probe-0\"] = {"
        ));
        assert!(ProfileData::of(&ProfileFigures::default()).is_none());
    }
}
