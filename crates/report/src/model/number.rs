//! How a number is written on a chart and beside it: the SVG's axes (`plot`), the pages'
//! rates, and, in JavaScript, the pages' script. The rules are one table, [`RULES`]: this
//! module's functions read it, and every page carries it once, as JSON in its `#number-rules`
//! element (`pages::layout`), where the script's `fmt`, `percentile` and time legend
//! (`assets/showdown.js`) read it, needed where the script labels values it computes itself (the
//! ticks of a zoomed axis). Both are held to one list of cases, `tests/numbers.json`, by
//! `tests/it/numbers.rs` and `tools/js/test/functions.test.js`.
//!
//! Neither language's own rounding is used (Rust's `format!` rounds a half to even, JavaScript's
//! `toPrecision` a half up, and both round the binary value, a hair off the decimal one): both
//! take the digits of a number's shortest text, the text that reads back as the number (Rust's
//! `{:e}`, JavaScript's `toExponential()`), and round those by the table's tie rule.

use serde::Serialize;

/// How the pages write a number, the one table both drawings read: the SVG's axes through this
/// module's functions, the pages' script from the JSON every page carries ([`NumberRules::json`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct NumberRules {
    /// Significant digits of a number below `whole_from`: with 4, 1234.56 is `1235`, 12.3456
    /// `12.35`, 3.1 `3.1` (no trailing zeros).
    pub significant: u32,
    /// From this magnitude up, a number is written whole, with `separator` between each three
    /// digits: `25,000`, `3,200,000`.
    pub whole_from: u32,
    /// What stands between each three digits of a whole number.
    pub separator: &'static str,
    /// A number under 10 to this power (after its rounding) is written in scientific notation,
    /// as JavaScript writes one: with -6, 1.2345e-7 is `1.235e-7`, 0.000001 `0.000001`.
    pub scientific_below: i32,
    /// What is written where there is no value (none, NaN, infinite).
    pub none: &'static str,
    /// How a half is rounded.
    pub ties: Ties,
    /// Decimals of a time on the time axis and in its legend: `1.50 s`.
    pub seconds_decimals: u32,
    /// What follows a time's figure: `" s"`.
    pub seconds_unit: &'static str,
}

/// How a figure exactly halfway between two that can be written is rounded.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Ties {
    /// Away from zero, as most readers round: 1.0625 to four digits is `1.063`, 12,345.5 whole
    /// `12,346` and -12,345.5 `-12,346`, 0.125 to two decimals `0.13`. A number is taken as its
    /// shortest text has it: 2.345 (a hair above in binary) and 1.005 (a hair below) are both
    /// halves, `2.35` and `1.01` to two decimals.
    HalfAwayFromZero,
}

/// The pages' rules for numbers: four significant digits, whole and thousands-separated from
/// 10,000, `--` for none, halves away from zero, times to the hundredth of a second.
pub const RULES: NumberRules = NumberRules {
    significant: 4,
    whole_from: 10_000,
    separator: ",",
    scientific_below: -6,
    none: "--",
    ties: Ties::HalfAwayFromZero,
    seconds_decimals: 2,
    seconds_unit: " s",
};

impl NumberRules {
    /// As JSON inside a `<script type="application/json">`, escaped as the charts' models are
    /// (`ChartData::json`): `<`, `>` and `&` written as JSON escapes, so that nothing in it ends
    /// the element or reads as markup.
    pub fn json(&self) -> String {
        super::json::in_script(self)
    }
}

/// A number as both drawings write it, the SVG's axes here and the pages' script's `fmt`, by
/// [`RULES`]: `--` for none, `0`, four significant digits below 10,000 (`0.25`, `12.5`, `1235`,
/// `1.063` for 1.0625), whole and thousands-separated from 10,000 (`25,000`, `3,200,000`).
pub fn number(v: f64) -> String {
    if !v.is_finite() {
        return RULES.none.into();
    }
    if v == 0.0 {
        return "0".into();
    }
    let sign = if v < 0.0 { "-" } else { "" };
    let exact = Decimal::of(v.abs());
    if v.abs() >= f64::from(RULES.whole_from) {
        return format!("{sign}{}", grouped(&exact.rounded(0).plain()));
    }
    let significant = RULES.significant as i32;
    let r = exact.rounded(exact.lead() + 1 - significant).trimmed();
    // Rounded up to the whole numbers' range (9999.5 is 10,000): written as they are.
    let plain = r.plain();
    if plain
        .parse::<f64>()
        .is_ok_and(|p| p >= f64::from(RULES.whole_from))
    {
        return format!("{sign}{}", grouped(&plain));
    }
    let lead = r.lead();
    if lead < RULES.scientific_below {
        let (first, rest) = r.digits.split_at(1);
        let point = if rest.is_empty() { "" } else { "." };
        return format!("{sign}{first}{point}{rest}e{lead}");
    }
    format!("{sign}{}", r.plain())
}

/// A whole number with a comma between each three digits (the store's, which the terminal's
/// summary writes too).
pub use store::summary::thousands;

/// x = 1 / (1 − p) as the percentile it stands for, as the pages' script's `percentile` writes
/// it in the legend of the distribution chart: `90%`, `99.9%`, `99.95%`, with as many decimals
/// as x has decades past 100, rounded by [`RULES`]; `--` below x = 1.
pub fn percentile(x: f64) -> String {
    if !x.is_finite() || x < 1.0 {
        return RULES.none.into();
    }
    let decimals = ((x.log10() - 1e-9).ceil() - 2.0).max(0.0) as u32;
    format!("{}%", fixed(100.0 * (1.0 - 1.0 / x), decimals))
}

/// The label of x = 1 / (1 − p) on the distribution chart: `90%`, `99.9%`; only at powers of ten.
pub fn percentile_label(x: f64) -> String {
    let decades = x.log10();
    if !decades.is_finite() || (decades - decades.round()).abs() > 1e-6 || decades < -1e-6 {
        return String::new();
    }
    // The decimals of the decade itself, whatever x's last bit.
    let decimals = (decades.round() - 2.0).max(0.0) as u32;
    format!("{}%", fixed(100.0 * (1.0 - 1.0 / x), decimals))
}

/// A time as the time axis's legend writes it, by [`RULES`]: `1.50 s`, `-0.13 s`; `--` for none.
pub fn seconds(v: f64) -> String {
    if !v.is_finite() {
        return RULES.none.into();
    }
    format!("{}{}", fixed(v, RULES.seconds_decimals), RULES.seconds_unit)
}

/// `v` with `decimals` decimals, rounded by [`RULES`]' tie rule: what a percentile's text and a
/// time's are made of. A minus only where the figure written is not zero (`0.00`, not `-0.00`).
pub fn fixed(v: f64, decimals: u32) -> String {
    let at = -(decimals as i32);
    let r = if v == 0.0 || !v.is_finite() {
        Decimal::zero(at)
    } else {
        Decimal::of(v.abs()).rounded(at)
    };
    // The digits down to the last decimal, and one before the point at least.
    let zeros = "0".repeat((r.exponent - at) as usize);
    let mut digits = format!("{}{zeros}", r.digits);
    let width = decimals as usize + 1;
    if digits.len() < width {
        digits = format!("{}{digits}", "0".repeat(width - digits.len()));
    }
    let sign = if v < 0.0 && digits.bytes().any(|d| d != b'0') {
        "-"
    } else {
        ""
    };
    let (whole, fraction) = digits.split_at(digits.len() - decimals as usize);
    if fraction.is_empty() {
        format!("{sign}{whole}")
    } else {
        format!("{sign}{whole}.{fraction}")
    }
}

/// Whole digits with [`RULES`]' separator between each three: `3200000` is `3,200,000`.
fn grouped(digits: &str) -> String {
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push_str(RULES.separator);
        }
        out.push(c);
    }
    out
}

/// A magnitude as decimal digits: `digits` × 10^`exponent`, the digits ASCII and without
/// leading zeros (`"0"` for zero).
#[derive(Debug, Clone, PartialEq)]
struct Decimal {
    digits: String,
    exponent: i32,
}

impl Decimal {
    /// Zero, its last digit at 10^`exponent`.
    fn zero(exponent: i32) -> Decimal {
        Decimal {
            digits: "0".into(),
            exponent,
        }
    }

    /// The digits of `a` (positive and finite) as its shortest text has them, the text that
    /// reads back as `a` (`{:e}` here, `toExponential()` in the script): 2.345 is 2345 × 10⁻³,
    /// though its binary value is a hair above.
    fn of(a: f64) -> Decimal {
        let text = format!("{a:e}");
        let (mantissa, exponent) = text.split_once('e').unwrap_or((text.as_str(), "0"));
        let exponent: i32 = exponent.parse().unwrap_or(0);
        let (whole, fraction) = mantissa.split_once('.').unwrap_or((mantissa, ""));
        Decimal {
            digits: format!("{whole}{fraction}"),
            exponent: exponent - fraction.len() as i32,
        }
    }

    /// The power of ten of the first digit: 1 for 12.5, -3 for 0.00125.
    fn lead(&self) -> i32 {
        self.exponent + self.digits.len() as i32 - 1
    }

    /// Rounded to a multiple of 10^`at` by [`RULES`]' tie rule. The digits are a magnitude, so
    /// away from zero is up: the first digit dropped decides.
    fn rounded(&self, at: i32) -> Decimal {
        if self.exponent >= at {
            return self.clone();
        }
        let dropped = (at - self.exponent) as usize;
        let Some(keep) = self.digits.len().checked_sub(dropped) else {
            // Under a tenth of 10^at: nothing of it is left.
            return Decimal::zero(at);
        };
        // keep < len: at least one digit is dropped.
        let next = self.digits.as_bytes()[keep] - b'0';
        let up = match RULES.ties {
            Ties::HalfAwayFromZero => next >= 5,
        };
        let kept = &self.digits[..keep];
        if up {
            Decimal {
                digits: increment(kept),
                exponent: at,
            }
        } else if kept.is_empty() {
            Decimal::zero(at)
        } else {
            Decimal {
                digits: kept.to_string(),
                exponent: at,
            }
        }
    }

    /// The same number without trailing zeros in its digits: `1000` × 10⁻³ is `1` × 10⁰.
    fn trimmed(self) -> Decimal {
        let digits = self.digits.trim_end_matches('0');
        if digits.is_empty() {
            return Decimal::zero(0);
        }
        Decimal {
            exponent: self.exponent + (self.digits.len() - digits.len()) as i32,
            digits: digits.to_string(),
        }
    }

    /// As plain decimal text: `1235` × 10⁻² is `12.35`, `32` × 10⁵ is `3200000`, `25` × 10⁻⁵
    /// is `0.00025`.
    fn plain(&self) -> String {
        if self.exponent >= 0 {
            let zeros = "0".repeat(self.exponent as usize);
            return format!("{}{zeros}", self.digits);
        }
        let point = self.digits.len() as i32 + self.exponent;
        if point > 0 {
            let (whole, fraction) = self.digits.split_at(point as usize);
            format!("{whole}.{fraction}")
        } else {
            format!("0.{}{}", "0".repeat((-point) as usize), self.digits)
        }
    }
}

/// A string of digits plus one: `0999` is `1000`, `999` is `1000`, and the empty string `1`.
fn increment(digits: &str) -> String {
    let nines = digits.bytes().rev().take_while(|&d| d == b'9').count();
    let rest = &digits[..digits.len() - nines];
    let zeros = "0".repeat(nines);
    match rest.bytes().last() {
        Some(last) => {
            let head = &rest[..rest.len() - 1];
            format!("{head}{}{zeros}", char::from(last + 1))
        }
        None => format!("1{zeros}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn axis_labels_are_the_pages_numbers() {
        assert_eq!(number(0.0), "0");
        assert_eq!(number(-0.0), "0");
        assert_eq!(number(0.25), "0.25");
        assert_eq!(number(12.5), "12.5");
        assert_eq!(number(12.0), "12");
        assert_eq!(number(1500.0), "1500");
        assert_eq!(number(1234.56), "1235");
        assert_eq!(number(9999.6), "10,000");
        assert_eq!(number(25_000.0), "25,000");
        assert_eq!(number(3_200_000.0), "3,200,000");
        assert_eq!(number(-2.0), "-2");
        assert_eq!(number(1e-7), "1e-7");
        assert_eq!(number(1.2345e-7), "1.235e-7");
        assert_eq!(number(0.000_123_456), "0.0001235");
        assert_eq!(number(0.1 + 0.2), "0.3");
        assert_eq!(number(f64::NAN), "--");
        assert_eq!(number(f64::NEG_INFINITY), "--");
        assert_eq!(thousands(12_199.5), "12,200");
        assert_eq!(thousands(999.4), "999");
        assert_eq!(thousands(f64::NAN), "0");
    }

    #[test]
    fn a_half_rounds_away_from_zero_as_its_shortest_text_has_it() {
        // 1.0625 is exact in binary: a true half.
        assert_eq!(number(1.0625), "1.063");
        assert_eq!(number(-1.0625), "-1.063");
        assert_eq!(number(12_345.5), "12,346");
        assert_eq!(number(-12_345.5), "-12,346");
        // A hair above in binary, a half as written.
        assert_eq!(number(12.345), "12.35");
        assert_eq!(number(0.001_234_5), "0.001235");
        assert_eq!(number(9999.95), "10,000");
        assert_eq!(seconds(2.345), "2.35 s");
        assert_eq!(seconds(-0.125), "-0.13 s");
        assert_eq!(seconds(-0.001), "0.00 s");
        assert_eq!(seconds(f64::NAN), "--");
        assert_eq!(increment(""), "1");
        assert_eq!(increment("1299"), "1300");
        assert_eq!(increment("999"), "1000");
    }

    #[test]
    fn percentile_labels_fall_on_decades() {
        assert_eq!(percentile_label(1.0), "0%");
        assert_eq!(percentile_label(10.0), "90%");
        assert_eq!(percentile_label(100.0), "99%");
        assert_eq!(percentile_label(100_000.0), "99.999%");
        assert_eq!(percentile_label(20.0), "");
        assert_eq!(percentile_label(0.1), "");
        assert_eq!(percentile(2000.0), "99.95%");
        assert_eq!(percentile(0.5), "--");
    }

    #[test]
    fn the_rules_are_written_as_json_the_page_can_carry() {
        let json = RULES.json();
        assert!(!json.contains('<') && !json.contains('&'));
        let back: serde_json::Value = serde_json::from_str(&json).unwrap();
        assert_eq!(back["significant"], 4);
        assert_eq!(back["whole_from"], 10_000);
        assert_eq!(back["ties"], "half_away_from_zero");
        assert_eq!(back["seconds_unit"], " s");
    }
}
