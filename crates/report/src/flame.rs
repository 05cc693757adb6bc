//! Flame graphs, drawn by `inferno` as SVG files with their own search and zoom: one of a run's
//! profile, and differential ones between two runs (red: a larger share of the samples in the
//! second run, blue: a smaller one).

use std::collections::BTreeMap;

use inferno::differential;
use inferno::flamegraph::{self, color::BasicPalette, color::Palette, Options};

use crate::error::ReportError;
use crate::profile::function_frames;

fn options(title: &str, subtitle: String) -> Options<'static> {
    let mut o = Options::default();
    o.title = title.to_string();
    o.subtitle = Some(subtitle);
    o.colors = Palette::Basic(BasicPalette::Hot);
    // The same stacks draw the same picture: colours from the names, not at random.
    o.hash = true;
    o.deterministic = true;
    o.count_name = "samples".into();
    o
}

fn lines(folded: &BTreeMap<String, u64>) -> Vec<String> {
    folded.iter().map(|(s, n)| format!("{s} {n}")).collect()
}

fn draw(mut options: Options<'_>, lines: &[String]) -> Result<Vec<u8>, ReportError> {
    let mut svg = Vec::new();
    flamegraph::from_lines(&mut options, lines.iter().map(String::as_str), &mut svg)
        .map_err(|e| ReportError::Draw(format!("flame graph: {e}")))?;
    Ok(svg)
}

/// A run's flame graph: every stack of the window, process and thread at the root.
pub fn flame_graph(
    title: &str,
    subtitle: String,
    folded: &BTreeMap<String, u64>,
) -> Result<Vec<u8>, ReportError> {
    draw(options(title, subtitle), &lines(folded))
}

/// The functions' stacks without the process and thread frames, so that two runs line up by
/// code path even when one runs it in workers (a cluster) and the other in its main process.
fn by_code_path(folded: &BTreeMap<String, u64>) -> String {
    let mut merged: BTreeMap<String, u64> = BTreeMap::new();
    for (stack, n) in folded {
        let frames = function_frames(stack);
        if !frames.is_empty() {
            *merged.entry(frames.join(";")).or_default() += n;
        }
    }
    lines(&merged).join("\n")
}

/// The second run's stacks coloured by how their share changed from the first's (both
/// normalized to the same number of samples; addresses without names compared as `0x...`).
pub fn differential(
    title: &str,
    subtitle: String,
    before: &BTreeMap<String, u64>,
    after: &BTreeMap<String, u64>,
) -> Result<Vec<u8>, ReportError> {
    let mut diff = Vec::new();
    differential::from_readers(
        differential::Options {
            normalize: true,
            strip_hex: true,
        },
        by_code_path(before).as_bytes(),
        by_code_path(after).as_bytes(),
        &mut diff,
    )
    .map_err(|e| ReportError::Draw(format!("differential flame graph: {e}")))?;
    let diff = String::from_utf8_lossy(&diff);
    let lines: Vec<String> = diff.lines().map(str::to_string).collect();
    draw(options(title, subtitle), &lines)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn folded(stacks: &[(&str, u64)]) -> BTreeMap<String, u64> {
        stacks.iter().map(|(s, n)| (s.to_string(), *n)).collect()
    }

    #[test]
    fn a_flame_graph_names_its_functions_and_a_differential_lines_up_code_paths() {
        let run = folded(&[
            ("srv;main;main;handle;hash", 70),
            ("srv;main;main;handle", 30),
        ]);
        let svg = String::from_utf8(flame_graph("t", "s".into(), &run).unwrap()).unwrap();
        assert!(
            svg.starts_with("<?xml") && svg.contains("hash (70 samples, 70.00%)"),
            "{svg}"
        );
        // The same code in a cluster's worker: lined up with the main process's.
        let cluster = folded(&[
            ("srv (child);main;main;handle;hash", 20),
            ("srv (child);main;main;handle", 80),
        ]);
        let svg =
            String::from_utf8(differential("d", "s".into(), &run, &cluster).unwrap()).unwrap();
        assert!(!svg.contains("srv (child)"), "process frames are left out");
        // hash's own share fell from 70 % to 20 %, handle's rose by as much.
        assert!(svg.contains("hash (20 samples, 20.00%; -50.00%)"), "{svg}");
        assert!(
            svg.contains("handle (100 samples, 100.00%; +50.00%)"),
            "{svg}"
        );
    }
}
