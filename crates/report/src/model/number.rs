//! How a number is written on a chart and beside it: the SVG's axes (`plot`), the pages'
//! rates, and, in JavaScript, the pages' script: its `fmt` and `percentile`
//! (`assets/showdown.js`) are this module's twins, needed where the script labels values it
//! computes itself (the ticks of a zoomed axis), and held to it value by value by
//! `tests/it/numbers.rs`.

/// A number as both drawings write it, the SVG's axes here and the pages' script's `fmt`
/// (`assets/showdown.js`, held to this by `tests/it/numbers.rs`): `--` for none, `0`, four
/// significant digits below 10,000 (`0.25`, `12.5`, `1235`), whole and thousands-separated from
/// 10,000 (`25,000`, `3,200,000`).
pub fn number(v: f64) -> String {
    if !v.is_finite() {
        return "--".into();
    }
    if v == 0.0 {
        return "0".into();
    }
    if v.abs() >= 1e4 {
        return thousands(v.round());
    }
    // Four significant digits, then the shortest text of that number (as JavaScript's
    // `String(Number(v.toPrecision(4)))`).
    let magnitude = v.abs().log10().floor() as i32;
    let decimals = usize::try_from(3 - magnitude).unwrap_or(0);
    let rounded: f64 = format!("{v:.decimals$}").parse().unwrap_or(v);
    if rounded.abs() < 1e-6 {
        format!("{rounded:e}")
    } else {
        format!("{rounded}")
    }
}

/// A whole number with a comma between each three digits (the store's, which the terminal's
/// summary writes too).
pub use store::summary::thousands;

/// The label of x = 1 / (1 − p) on the distribution chart: `90%`, `99.9%`; only at powers of ten.
pub fn percentile_label(x: f64) -> String {
    let decades = x.log10();
    if (decades - decades.round()).abs() > 1e-6 {
        return String::new();
    }
    let nines = decades.round() as i32;
    match nines {
        0 => "0%".into(),
        1 => "90%".into(),
        2 => "99%".into(),
        n => format!("99.{}%", "9".repeat((n - 2) as usize)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn axis_labels_are_the_pages_numbers() {
        assert_eq!(number(0.0), "0");
        assert_eq!(number(0.25), "0.25");
        assert_eq!(number(12.5), "12.5");
        assert_eq!(number(12.0), "12");
        assert_eq!(number(1500.0), "1500");
        assert_eq!(number(1234.56), "1235");
        assert_eq!(number(25_000.0), "25,000");
        assert_eq!(number(3_200_000.0), "3,200,000");
        assert_eq!(number(-2.0), "-2");
        assert_eq!(number(f64::NAN), "--");
        assert_eq!(thousands(12_199.5), "12,200");
        assert_eq!(thousands(999.4), "999");
        assert_eq!(thousands(f64::NAN), "0");
    }

    #[test]
    fn percentile_labels_fall_on_decades() {
        assert_eq!(percentile_label(1.0), "0%");
        assert_eq!(percentile_label(10.0), "90%");
        assert_eq!(percentile_label(100.0), "99%");
        assert_eq!(percentile_label(100_000.0), "99.999%");
        assert_eq!(percentile_label(20.0), "");
    }
}
