//! The two drawings of a chart write numbers alike, by one table: the SVG's axes
//! (`report::number`, `percentile_label`, by `report::model::number::RULES`) and the pages'
//! script (`assets/showdown.js`'s `fmt`, `percentile` and time legend, reading the same table
//! from the page, run here in Node with the harness of its own tests, `tools/js/test/harness.js`).
//! Both are held to one list of cases, `tests/numbers.json`, which the script's own tests
//! (`tools/js/test/functions.test.js`) read too.

use std::path::Path;
use std::process::Command;

use report::model::number::{self, RULES};
use serde::Deserialize;

/// `tests/numbers.json`: the rules the script's own tests give their stand-in page, and what
/// each case is written as (a case of `None` is no value).
#[derive(Deserialize)]
struct Cases {
    rules: serde_json::Value,
    numbers: Vec<(Option<f64>, String)>,
    percentiles: Vec<(Option<f64>, String)>,
    seconds: Vec<(Option<f64>, String)>,
}

/// The cases, as `tests/numbers.json` has them.
fn cases() -> Cases {
    let file = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/numbers.json");
    let text = std::fs::read_to_string(file).expect("tests/numbers.json");
    serde_json::from_str(&text).expect("tests/numbers.json: the cases")
}

/// Each case's value as Rust's function `write` writes it, beside what the list says.
fn written(
    list: &[(Option<f64>, String)],
    write: impl Fn(f64) -> String,
) -> (Vec<String>, Vec<String>) {
    let rust: Vec<String> = list
        .iter()
        .map(|(v, _)| write(v.unwrap_or(f64::NAN)))
        .collect();
    let expected: Vec<String> = list.iter().map(|(_, text)| text.clone()).collect();
    (rust, expected)
}

/// What the pages' script writes for `call`, a JavaScript expression of `script` (what the
/// script exports) and `input` (`input`, as JSON), on a page that carries `RULES` as the pages
/// do.
pub(crate) fn script_writes(call: &str, input: &impl serde::Serialize) -> String {
    let harness = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tools/js/test/harness.js");
    let program = format!(
        "const h = require({harness:?}); \
         const script = h.load({{ document: h.page({{ rules: process.argv[2] }}) }}); \
         const input = JSON.parse(process.argv[1]); \
         process.stdout.write({call});",
        harness = harness.display().to_string()
    );
    let json = serde_json::to_string(input).expect("the input as JSON");
    let out = Command::new("node")
        .args(["-e", &program, &json, &RULES.json()])
        .output()
        .expect("node runs (the README's test command installs it)");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).expect("UTF-8")
}

/// What the script writes for each of `values` by its function `function`.
fn scripts(function: &str, values: &[Option<f64>]) -> Vec<String> {
    let call = format!("JSON.stringify(input.map((v) => script[{function:?}](v)))");
    serde_json::from_str(&script_writes(&call, &values)).expect("a list of strings")
}

#[test]
fn the_cases_stand_on_the_pages_rules() {
    let rules = serde_json::to_value(RULES).unwrap();
    assert_eq!(
        cases().rules,
        rules,
        "tests/numbers.json's rules are not report::model::number::RULES"
    );
}

#[test]
fn the_svg_writes_every_number_as_the_cases_say() {
    let cases = cases();
    let (rust, expected) = written(&cases.numbers, report::number);
    assert_eq!(rust, expected, "number, for {:?}", cases.numbers);
    let (rust, expected) = written(&cases.percentiles, number::percentile);
    assert_eq!(rust, expected, "percentile");
    let (rust, expected) = written(&cases.seconds, number::seconds);
    assert_eq!(rust, expected, "seconds");
    // On the distribution chart's axis, at each decade, the label is the percentile itself.
    for (x, text) in &cases.percentiles {
        let Some(x) = *x else { continue };
        let decades = x.log10();
        if x >= 1.0 && (decades - decades.round()).abs() < 1e-9 {
            assert_eq!(&report::percentile_label(x), text, "{x}");
        }
    }
}

#[test]
fn the_svg_and_the_script_write_every_number_alike() {
    let cases = cases();
    for (function, list) in [
        ("fmt", &cases.numbers),
        ("percentile", &cases.percentiles),
        ("seconds", &cases.seconds),
    ] {
        let values: Vec<Option<f64>> = list.iter().map(|(v, _)| *v).collect();
        let expected: Vec<String> = list.iter().map(|(_, text)| text.clone()).collect();
        assert_eq!(
            scripts(function, &values),
            expected,
            "{function}, for {values:?}"
        );
    }
}

#[test]
fn the_svg_and_the_script_name_percentiles_alike() {
    let decades = [10.0, 100.0, 1_000.0, 10_000.0, 100_000.0, 1_000_000.0];
    let rust: Vec<String> = decades
        .iter()
        .map(|x| report::percentile_label(*x))
        .collect();
    let values: Vec<Option<f64>> = decades.iter().copied().map(Some).collect();
    assert_eq!(rust, scripts("percentile", &values));
}
