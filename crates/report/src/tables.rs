//! Tables: one model, shown on the pages and printed as JSON, CSV or Markdown.
//!
//! A cell keeps its raw value in base units (nanoseconds, bytes, requests per second, a ratio
//! of 0 to 1) and its unit; the pages and Markdown show it formatted (`1.23ms`, `45.1 MiB`,
//! `99.50%`), JSON and CSV give the raw value so that nothing is rounded away on the way into a
//! spreadsheet.

use std::fmt::Write as _;

use serde_json::{Map, Value};
use store::summary::format_ns;

use crate::figures::{Headline, RunFigures};

/// What a number is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Unit {
    Nanos,
    Bytes,
    PerSecond,
    /// 0 to 1, shown as a percentage.
    Ratio,
    /// Already a percentage (CPU: 100 = one core).
    Percent,
    Count,
    Micros,
}

impl Unit {
    /// The unit's name in CSV/JSON columns.
    pub fn name(self) -> &'static str {
        match self {
            Unit::Nanos => "ns",
            Unit::Bytes => "bytes",
            Unit::PerSecond => "per second",
            Unit::Ratio => "ratio",
            Unit::Percent => "%",
            Unit::Count => "count",
            Unit::Micros => "µs",
        }
    }

    /// `value` for a reader.
    pub fn format(self, value: f64) -> String {
        match self {
            Unit::Nanos => format_ns(value.max(0.0).round() as u64),
            Unit::Micros => format_ns((value * 1e3).max(0.0).round() as u64),
            Unit::Bytes => format_bytes(value),
            Unit::PerSecond => format!("{value:.1}/s"),
            Unit::Ratio => format!("{:.2}%", 100.0 * value),
            Unit::Percent => format!("{value:.1}%"),
            Unit::Count => format!("{value:.0}"),
        }
    }
}

/// `512 B`, `4.0 KiB`, `45.1 MiB`, `1.20 GiB`.
pub fn format_bytes(b: f64) -> String {
    const KIB: f64 = 1024.0;
    if b < KIB {
        format!("{b:.0} B")
    } else if b < KIB * KIB {
        format!("{:.1} KiB", b / KIB)
    } else if b < KIB * KIB * KIB {
        format!("{:.1} MiB", b / KIB / KIB)
    } else {
        format!("{:.2} GiB", b / KIB / KIB / KIB)
    }
}

/// Which way is better, for a comparison's ratios.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Better {
    Lower,
    Higher,
    /// A setting or a size, not a score: the ratio is given without praise.
    Neither,
}

/// One cell.
#[derive(Debug, Clone, PartialEq)]
pub enum Cell {
    Text(String),
    /// Text with a key for JSON and CSV (`p99_ns`) and a title for readers (`latency p99`).
    Named {
        key: String,
        title: String,
    },
    Number(f64, Unit),
    /// This run's figure against the baseline's: `value / baseline`.
    Ratio {
        factor: f64,
        better: Better,
    },
    /// Not measured (no probe, no requests).
    Missing,
}

impl Cell {
    pub fn text(s: impl Into<String>) -> Self {
        Cell::Text(s.into())
    }

    pub fn number(value: Option<f64>, unit: Unit) -> Self {
        match value {
            Some(v) if v.is_finite() => Cell::Number(v, unit),
            _ => Cell::Missing,
        }
    }

    /// What a reader sees.
    pub fn display(&self) -> String {
        match self {
            Cell::Text(s) => s.clone(),
            Cell::Named { title, .. } => title.clone(),
            Cell::Number(v, unit) => unit.format(*v),
            Cell::Ratio { factor, .. } => ratio_text(*factor),
            Cell::Missing => "—".into(),
        }
    }

    /// The raw value, for JSON.
    pub fn raw(&self) -> Value {
        match self {
            Cell::Text(s) | Cell::Named { key: s, .. } => Value::String(s.clone()),
            Cell::Number(v, Unit::Count)
            | Cell::Number(v, Unit::Nanos)
            | Cell::Number(v, Unit::Bytes)
                if v.fract() == 0.0 && *v >= 0.0 && *v < 9.0e15 =>
            {
                Value::from(*v as u64)
            }
            Cell::Number(v, _) | Cell::Ratio { factor: v, .. } => {
                serde_json::Number::from_f64(*v).map_or(Value::Null, Value::Number)
            }
            Cell::Missing => Value::Null,
        }
    }

    /// The raw value, for CSV.
    fn csv(&self) -> String {
        match self.raw() {
            Value::Null => String::new(),
            Value::String(s) => s,
            other => other.to_string(),
        }
    }

    /// Whether this figure is better (`Some(true)`), worse or neither, against the baseline.
    pub fn verdict(&self) -> Option<bool> {
        match self {
            Cell::Ratio { factor, better } => {
                if (factor - 1.0).abs() < 0.005 {
                    return None;
                }
                match better {
                    Better::Lower => Some(*factor < 1.0),
                    Better::Higher => Some(*factor > 1.0),
                    Better::Neither => None,
                }
            }
            _ => None,
        }
    }
}

/// `3.1× lower`, `1.4× higher`, `same`: always the larger over the smaller, so that "2× lower"
/// means half.
pub fn ratio_text(factor: f64) -> String {
    if !factor.is_finite() || factor <= 0.0 {
        return "—".into();
    }
    if (factor - 1.0).abs() < 0.005 {
        return "same".into();
    }
    let (times, word) = if factor > 1.0 {
        (factor, "higher")
    } else {
        (1.0 / factor, "lower")
    };
    let digits = if times >= 10.0 {
        0
    } else if times >= 1.1 {
        1
    } else {
        2
    };
    format!("{times:.digits$}× {word}")
}

/// A column: its key in JSON and CSV (`corrected_ns`), and its title on a page.
#[derive(Debug, Clone, PartialEq)]
pub struct Column {
    pub key: String,
    pub title: String,
}

impl Column {
    pub fn new(key: impl Into<String>, title: impl Into<String>) -> Self {
        Column {
            key: key.into(),
            title: title.into(),
        }
    }
}

/// A table.
#[derive(Debug, Clone, PartialEq)]
pub struct Table {
    pub columns: Vec<Column>,
    pub rows: Vec<Vec<Cell>>,
}

/// How `--output` prints tables.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Format {
    /// The static pages (the default).
    Html,
    /// An array of objects per table, raw values in base units.
    Json,
    /// Raw values in base units; a blank line between tables.
    Csv,
    /// Formatted figures, to paste into a post.
    Markdown,
}

impl Table {
    /// Rows as objects keyed by column, raw values.
    pub fn to_json(&self) -> Value {
        Value::Array(
            self.rows
                .iter()
                .map(|row| {
                    let mut object = Map::new();
                    for (column, cell) in self.columns.iter().zip(row) {
                        object.insert(column.key.clone(), cell.raw());
                    }
                    Value::Object(object)
                })
                .collect(),
        )
    }

    pub fn to_csv(&self) -> Result<String, csv::Error> {
        let mut w = csv::Writer::from_writer(Vec::new());
        w.write_record(self.columns.iter().map(|c| c.key.as_str()))?;
        for row in &self.rows {
            w.write_record(row.iter().map(Cell::csv))?;
        }
        let bytes = w
            .into_inner()
            .map_err(|e| csv::Error::from(e.into_error()))?;
        Ok(String::from_utf8_lossy(&bytes).into_owned())
    }

    pub fn to_markdown(&self) -> String {
        let escape = |s: &str| s.replace('|', "\\|").replace('\n', " ");
        let mut out = String::new();
        let titles: Vec<String> = self.columns.iter().map(|c| escape(&c.title)).collect();
        let _ = writeln!(out, "| {} |", titles.join(" | "));
        let rules: Vec<&str> = self
            .rows
            .first()
            .map(|row| {
                row.iter()
                    .map(|c| match c {
                        Cell::Text(_) | Cell::Named { .. } => "---",
                        _ => "---:",
                    })
                    .collect()
            })
            .unwrap_or_else(|| vec!["---"; self.columns.len()]);
        let _ = writeln!(out, "|{}|", rules.join("|"));
        for row in &self.rows {
            let cells: Vec<String> = row.iter().map(|c| escape(&c.display())).collect();
            let _ = writeln!(out, "| {} |", cells.join(" | "));
        }
        out
    }
}

/// The spread of a run group's guns' starts: the earliest and latest first send after T0
/// (each gun's T0 on its own clock, corrected by its measured offset), when every gun said.
pub fn guns_skew(run: &RunFigures) -> Option<(i64, i64)> {
    let starts: Option<Vec<i64>> = run
        .guns
        .iter()
        .map(|g| g.summary.generator.start_late_ns)
        .collect();
    let starts = starts?;
    Some((*starts.iter().min()?, *starts.iter().max()?))
}

/// A run group's guns, one row a shard: its share of the requests, its rate, how late its
/// sends were, its CPU, and whether it kept its schedule.
pub fn guns(run: &RunFigures) -> Table {
    let columns = vec![
        Column::new("gun", "gun"),
        Column::new("status", "status"),
        Column::new("share", "share of requests"),
        Column::new("rate", "rate"),
        Column::new("start_late_ns", "first send after T0"),
        Column::new("lateness_p99_ns", "lateness p99"),
        Column::new("lateness_max_ns", "lateness max"),
        Column::new("late", "sent late (> 1 ms)"),
        Column::new("busiest_thread", "busiest thread (% of a core)"),
        Column::new("kept_schedule", "kept its schedule"),
    ];
    let total: u64 = run.guns.iter().map(|g| g.summary.requests.total).sum();
    let rows = run
        .guns
        .iter()
        .map(|g| {
            let s = &g.summary;
            let name = g
                .labels
                .get(store::vocabulary::label::GUN)
                .cloned()
                .unwrap_or_else(|| g.gun_host.hostname.clone());
            let clock = g
                .labels
                .get(store::vocabulary::label::GUN_CLOCK)
                .map(|c| format!(" (clock {c})"))
                .unwrap_or_default();
            let behind = analysis::warnings::generator_fell_behind(s);
            vec![
                Cell::text(format!("{name}{clock}")),
                Cell::text(g.status.as_str()),
                Cell::Number(
                    if total > 0 {
                        s.requests.total as f64 / total as f64
                    } else {
                        0.0
                    },
                    Unit::Ratio,
                ),
                Cell::Number(s.requests.rate, Unit::PerSecond),
                match s.generator.start_late_ns {
                    Some(late) => Cell::Number(late as f64, Unit::Nanos),
                    None => Cell::text("—"),
                },
                Cell::Number(s.generator.lateness.p99_ns as f64, Unit::Nanos),
                Cell::Number(s.generator.lateness.max_ns as f64, Unit::Nanos),
                Cell::Number(s.generator.late as f64, Unit::Count),
                match s.generator.busiest_thread {
                    Some(b) => Cell::Number(b * 100.0, Unit::Percent),
                    None => Cell::text("—"),
                },
                Cell::text(match behind {
                    None => "yes".to_string(),
                    Some(why) => format!("no: {why}"),
                }),
            ]
        })
        .collect();
    Table { columns, rows }
}

/// The HDR percentile table: corrected latency and service time at p50 … max.
pub fn percentiles(run: &RunFigures) -> Table {
    let columns = vec![
        Column::new("percentile", "percentile"),
        Column::new("corrected_ns", "corrected"),
        Column::new("service_ns", "service time"),
    ];
    let rows = run
        .percentiles
        .iter()
        .map(|p| {
            vec![
                Cell::text(p.percentile),
                Cell::Number(p.corrected_ns as f64, Unit::Nanos),
                Cell::Number(p.service_ns as f64, Unit::Nanos),
            ]
        })
        .collect();
    Table { columns, rows }
}

/// Runs with their headline figures, as on the index.
pub fn runs(headlines: &[Headline]) -> Table {
    let columns = [
        ("id", "id"),
        ("name", "name"),
        ("experiment", "experiment"),
        ("labels", "labels"),
        ("status", "status"),
        ("started", "started"),
        ("rate", "rate"),
        ("throughput", "throughput"),
        ("success_ratio", "success"),
        ("p50_ns", "p50"),
        ("p99_ns", "p99"),
        ("max_ns", "max"),
        ("peak_rss_bytes", "target peak memory"),
        ("peak_fds", "target peak FDs"),
        ("warnings", "warnings"),
    ]
    .into_iter()
    .map(|(k, t)| Column::new(k, t))
    .collect();
    let rows = headlines.iter().map(headline_row).collect();
    Table { columns, rows }
}

fn headline_row(h: &Headline) -> Vec<Cell> {
    let labels: Vec<String> = h.labels.iter().map(|(k, v)| format!("{k}={v}")).collect();
    vec![
        Cell::text(&h.id),
        Cell::text(&h.name),
        Cell::text(h.experiment.clone().unwrap_or_default()),
        Cell::text(labels.join(" ")),
        Cell::text(h.status.clone()),
        Cell::text(&h.started),
        Cell::Number(h.rate, Unit::PerSecond),
        Cell::Number(h.throughput, Unit::PerSecond),
        Cell::Number(h.success_ratio, Unit::Ratio),
        Cell::Number(h.p50_ns as f64, Unit::Nanos),
        Cell::Number(h.p99_ns as f64, Unit::Nanos),
        Cell::Number(h.max_ns as f64, Unit::Nanos),
        Cell::number(h.peak_rss_bytes.map(|b| b as f64), Unit::Bytes),
        Cell::number(h.peak_fds.map(|b| b as f64), Unit::Count),
        Cell::Number(h.warnings as f64, Unit::Count),
    ]
}

/// Several named tables in one format.
pub fn print(tables: &[(&str, &Table)], format: Format) -> Result<String, csv::Error> {
    Ok(match format {
        Format::Json => {
            let mut object = Map::new();
            for (name, table) in tables {
                object.insert(name.to_string(), table.to_json());
            }
            serde_json::to_string_pretty(&Value::Object(object)).unwrap_or_default() + "\n"
        }
        Format::Csv => {
            let mut parts = Vec::new();
            for (_, table) in tables {
                parts.push(table.to_csv()?);
            }
            parts.join("\n")
        }
        Format::Markdown | Format::Html => {
            let mut parts = Vec::new();
            for (name, table) in tables {
                parts.push(format!("### {name}\n\n{}", table.to_markdown()));
            }
            parts.join("\n")
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn table() -> Table {
        Table {
            columns: vec![
                Column::new("name", "name"),
                Column::new("p99_ns", "p99"),
                Column::new("vs", "vs A"),
            ],
            rows: vec![
                vec![
                    Cell::text("a|b"),
                    Cell::Number(1_234_567.0, Unit::Nanos),
                    Cell::Missing,
                ],
                vec![
                    Cell::text("c,d"),
                    Cell::Number(400_000.0, Unit::Nanos),
                    Cell::Ratio {
                        factor: 0.324,
                        better: Better::Lower,
                    },
                ],
            ],
        }
    }

    #[test]
    fn ratios_read_as_people_write_them() {
        assert_eq!(ratio_text(1.0 / 3.1), "3.1× lower");
        assert_eq!(ratio_text(1.4), "1.4× higher");
        assert_eq!(ratio_text(25.0), "25× higher");
        assert_eq!(ratio_text(1.002), "same");
        assert_eq!(ratio_text(1.05), "1.05× higher");
        assert_eq!(ratio_text(f64::INFINITY), "—");
        let better = Cell::Ratio {
            factor: 0.5,
            better: Better::Lower,
        };
        assert_eq!(better.verdict(), Some(true));
        let worse = Cell::Ratio {
            factor: 0.5,
            better: Better::Higher,
        };
        assert_eq!(worse.verdict(), Some(false));
    }

    #[test]
    fn formats_keep_raw_values_or_format_them() {
        let t = table();
        let json = t.to_json();
        assert_eq!(json[0]["p99_ns"], 1_234_567);
        assert_eq!(json[0]["vs"], Value::Null);
        assert_eq!(json[1]["vs"], 0.324);
        let csv = t.to_csv().unwrap();
        assert_eq!(csv, "name,p99_ns,vs\na|b,1234567,\n\"c,d\",400000,0.324\n");
        let md = t.to_markdown();
        assert!(md.contains("| a\\|b | 1.23ms | — |"), "{md}");
        assert!(md.contains("| c,d | 400µs | 3.1× lower |"), "{md}");
        assert!(md.contains("|---|---:|---:|"), "{md}");
    }

    #[test]
    fn units_format() {
        assert_eq!(format_bytes(512.0), "512 B");
        assert_eq!(format_bytes(47_290_000.0), "45.1 MiB");
        assert_eq!(Unit::Ratio.format(0.995), "99.50%");
        assert_eq!(Unit::Micros.format(12.5), "12.5µs");
    }
}
