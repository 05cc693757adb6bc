//! Durations in words (the summary's own text is `analysis::summary`'s).

use std::time::Duration;

/// A duration in nanoseconds as a short human figure: `312µs`, `1.23ms`, `4.31s`.
pub fn format_ns(ns: u64) -> String {
    let ns = ns as f64;
    let (value, unit) = if ns < 1e3 {
        (ns, "ns")
    } else if ns < 1e6 {
        (ns / 1e3, "µs")
    } else if ns < 1e9 {
        (ns / 1e6, "ms")
    } else {
        (ns / 1e9, "s")
    };
    let digits = if value >= 100.0 {
        0
    } else if value >= 10.0 {
        1
    } else {
        2
    };
    format!("{value:.digits$}{unit}")
}

/// A `Duration` in the same short form.
pub fn format_duration(d: Duration) -> String {
    format_ns(nanos(d))
}

/// Whole nanoseconds of a duration, saturating.
pub fn nanos(d: Duration) -> u64 {
    u64::try_from(d.as_nanos()).unwrap_or(u64::MAX)
}

/// A whole number (rounded) with a comma between each three digits, as every page writes a
/// rate: `25,000`; none (not finite) is `0`.
pub fn thousands(v: f64) -> String {
    let v = if v.is_finite() { v.round() } else { 0.0 };
    let digits = format!("{:.0}", v.abs());
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i) % 3 == 0 {
            out.push(',');
        }
        out.push(c);
    }
    if v < 0.0 {
        out.insert(0, '-');
    }
    out
}
