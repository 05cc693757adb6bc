//! A latency heatmap as data: time on x, latency on a log y, each cell the count of requests
//! that took that long in that slice of the run, from the interval HdrHistograms the store
//! keeps. It shows what percentile lines hide: two modes, a slow tail that comes and goes.
//!
//! What is drawn is one value, [`HeatmapData`], drawn twice as a [`super::ChartData`] is: by
//! the crate's `heatmap` module as an SVG written by hand (the page's picture, for print and
//! with JavaScript off), and, carried beside that SVG as JSON ([`HeatmapData::json`]), by the
//! pages' script, which draws the same cells and names the one under the pointer. The counts of
//! all cells add up to the run's completed requests.

use hdrhistogram::Histogram;
use serde::{Deserialize, Serialize};

/// Bins a decade: latency bins are 10^(1/BINS_PER_DECADE) wide.
pub const BINS_PER_DECADE: u32 = 8;
/// The lowest bin's bottom, ns (the histograms' resolution is 1 µs).
const LOWEST_NS: f64 = 1e3;
/// Decades from 1 µs: up to 1000 s.
const DECADES: u32 = 9;
/// Columns drawn at most: adjacent intervals are added together beyond it.
const COLUMNS: usize = 160;

/// One kind of latency's counts, a column an interval.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Heatmap {
    /// `corrected` or `service`.
    pub kind: String,
    /// (start, end) of each column on the run's timeline (s), and its counts by bin.
    pub columns: Vec<((f64, f64), Vec<u64>)>,
}

/// What a heatmap draws, and all that its drawings read: at most `COLUMNS` columns, and the
/// rows with any request with a decade of room around them. As JSON (the page's
/// `script.heatmap-data`, these field names):
///
/// ```text
/// {"kind": "corrected", "total": 2000, "max": 1000, "rows": [16, 40], "bins_per_decade": 8,
///  "edges": [100000.0, 133352.1, …, 100000000.0],
///  "columns": [{"from": 0.0, "to": 1.0, "counts": [0, 0, 1000, 0, …]}, …]}
/// ```
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct HeatmapData {
    /// `corrected` or `service`.
    pub kind: String,
    /// Every request counted.
    pub total: u64,
    /// The most requests in one cell: the darkest colour.
    pub max: u64,
    /// The bins drawn, `low..high`: whole decades.
    pub rows: (usize, usize),
    /// Bins a decade ([`BINS_PER_DECADE`]): the latency axis is labelled at every bin that is
    /// a multiple of it, a decade's bottom edge.
    pub bins_per_decade: u32,
    /// The rows' edges, ns: `edges[i]` is the bottom of bin `rows.0 + i` ([`edge`]), the last
    /// one the top of bin `rows.1 - 1`; one more than the rows drawn.
    pub edges: Vec<f64>,
    /// The columns, in the run's order.
    pub columns: Vec<HeatmapColumn>,
}

/// A column of a heatmap as drawn: a slice of the run and its counts in the rows drawn.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct HeatmapColumn {
    /// Where the slice starts on the run's timeline (s).
    pub from: f64,
    /// Where it ends (s).
    pub to: f64,
    /// Its requests by row: `counts[i]` took from `edges[i]` to `edges[i + 1]` (bin
    /// `rows.0 + i`), one count a row drawn.
    pub counts: Vec<u64>,
}

fn bins() -> usize {
    (BINS_PER_DECADE * DECADES) as usize
}

/// The bin a latency (ns) falls in.
fn bin_of(ns: u64) -> usize {
    let v = (ns as f64).max(LOWEST_NS);
    let b = ((v / LOWEST_NS).log10() * BINS_PER_DECADE as f64).floor() as usize;
    b.min(bins() - 1)
}

/// A bin's bottom edge, ns.
pub fn edge(bin: usize) -> f64 {
    LOWEST_NS * 10f64.powf(bin as f64 / BINS_PER_DECADE as f64)
}

impl Heatmap {
    pub fn new(kind: &str) -> Heatmap {
        Heatmap {
            kind: kind.into(),
            columns: Vec::new(),
        }
    }

    /// Adds an interval's histogram as the next column.
    pub fn add(&mut self, span: (f64, f64), h: &Histogram<u64>) {
        let mut counts = vec![0u64; bins()];
        for v in h.iter_recorded() {
            counts[bin_of(h.highest_equivalent(v.value_iterated_to()))] += v.count_at_value();
        }
        self.columns.push((span, counts));
    }

    /// Every request counted.
    pub fn total(&self) -> u64 {
        self.columns.iter().flat_map(|(_, c)| c).sum()
    }

    /// At most `COLUMNS` columns, adjacent ones added together: no request is lost.
    fn columns_drawn(&self) -> Vec<((f64, f64), Vec<u64>)> {
        let per = self.columns.len().div_ceil(COLUMNS).max(1);
        self.columns
            .chunks(per)
            .map(|chunk| {
                let start = chunk.first().map_or(0.0, |c| c.0 .0);
                let end = chunk.last().map_or(0.0, |c| c.0 .1);
                let mut counts = vec![0u64; bins()];
                for (_, c) in chunk {
                    for (sum, n) in counts.iter_mut().zip(c) {
                        *sum += n;
                    }
                }
                ((start, end), counts)
            })
            .collect()
    }

    /// What is drawn, or `None` without a request.
    pub fn data(&self) -> Option<HeatmapData> {
        let columns = self.columns_drawn();
        let max = columns.iter().flat_map(|(_, c)| c).copied().max()?;
        if max == 0 {
            return None;
        }
        // The rows with any request, and a decade of room around them.
        let used: Vec<usize> = (0..bins())
            .filter(|b| columns.iter().any(|(_, c)| c[*b] > 0))
            .collect();
        let per = BINS_PER_DECADE as usize;
        let low = (used.first().copied().unwrap_or(0) / per) * per;
        let high = ((used.last().copied().unwrap_or(0) / per + 1) * per).min(bins());
        // Every bin with a request is a row drawn: the counts outside them are all zero.
        let columns: Vec<HeatmapColumn> = columns
            .into_iter()
            .map(|((from, to), counts)| HeatmapColumn {
                from,
                to,
                counts: counts[low..high].to_vec(),
            })
            .collect();
        Some(HeatmapData {
            kind: self.kind.clone(),
            total: self.total(),
            max,
            rows: (low, high),
            bins_per_decade: BINS_PER_DECADE,
            edges: (low..=high).map(edge).collect(),
            columns,
        })
    }
}

impl HeatmapData {
    /// As JSON inside a `<script type="application/json">` (the page's `heatmap-data`, which
    /// its script draws), escaped as the charts' models are: `<`, `>` and `&` written as JSON
    /// escapes, so that nothing in it ends the element or reads as markup.
    pub fn json(&self) -> String {
        super::json::in_script(self)
    }
}

/// Heatmaps the tests of the model and of its renderer draw alike.
#[cfg(test)]
pub(crate) mod examples {
    use super::*;

    pub(crate) fn histogram(values: &[(u64, u64)]) -> Histogram<u64> {
        let mut h = Histogram::new_with_bounds(1000, 86_400_000_000_000, 3).unwrap();
        for &(v, n) in values {
            h.record_n(v, n).unwrap();
        }
        h
    }

    /// Two modes, ~200 µs and ~50 ms, the slow one only in the second interval: 2,000
    /// requests.
    pub(crate) fn two_modes() -> Heatmap {
        let mut map = Heatmap::new("corrected");
        map.add((0.0, 1.0), &histogram(&[(200_000, 990), (210_000, 10)]));
        map.add((1.0, 2.0), &histogram(&[(200_000, 900), (50_000_000, 100)]));
        map
    }
}

#[cfg(test)]
mod tests {
    use super::examples::{histogram, two_modes};
    use super::*;

    #[test]
    fn every_request_is_in_one_bin() {
        let map = two_modes();
        assert_eq!(map.total(), 2000);
        let data = map.data().unwrap();
        assert_eq!(data.total, 2000);
        // 200 µs and 50 ms: the decades from 100 µs to 100 ms.
        assert_eq!(data.rows, (16, 40));
        assert_eq!(bin_of(1), 0);
        assert_eq!(bin_of(u64::MAX), bins() - 1);
        assert_eq!(Heatmap::new("service").data(), None);
    }

    #[test]
    fn a_long_run_is_drawn_in_fewer_columns_without_losing_a_request() {
        let mut map = Heatmap::new("service");
        for i in 0..3600 {
            map.add((i as f64, i as f64 + 1.0), &histogram(&[(1_000_000, 3)]));
        }
        let drawn = map.data().unwrap().columns;
        assert!(drawn.len() <= COLUMNS);
        let sum: u64 = drawn.iter().flat_map(|c| &c.counts).sum();
        assert_eq!(sum, 3 * 3600);
        assert_eq!(drawn.last().unwrap().to, 3600.0);
    }

    #[test]
    fn the_data_holds_the_rows_drawn_and_reads_back_from_its_json() {
        let data = two_modes().data().unwrap();
        // Rows 16 to 40: 24 counts a column, 25 edges, from 100 µs to 100 ms.
        assert_eq!(data.edges.len(), 25);
        assert_eq!(data.edges[0], edge(16));
        assert_eq!(data.edges[24], edge(40));
        assert!(data.columns.iter().all(|c| c.counts.len() == 24));
        // 200 and 210 µs are in bin 18, the third row; 50 ms in bin 37.
        assert_eq!(data.columns[0].counts[18 - 16], 1000);
        assert_eq!(data.columns[1].counts[37 - 16], 100);
        assert_eq!((data.columns[1].from, data.columns[1].to), (1.0, 2.0));
        let cells: u64 = data.columns.iter().flat_map(|c| &c.counts).sum();
        assert_eq!(cells, data.total);
        let json = data.json();
        assert!(!json.contains('<'), "{json}");
        assert!(json.contains("\"columns\":[{\"from\":0.0,\"to\":1.0,\"counts\":["));
        let back: HeatmapData = serde_json::from_str(&json).unwrap();
        assert_eq!(back, data);
    }
}
