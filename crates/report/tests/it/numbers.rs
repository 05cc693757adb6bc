//! The two drawings of a chart write numbers alike: the SVG's axes (`report::number`,
//! `percentile_label`) and the pages' script (`assets/showdown.js`'s `fmt` and `percentile`,
//! run here in Node with the harness of its own tests, `tools/js/test/harness.js`).

use std::path::Path;
use std::process::Command;

/// What the script writes for each of `values`, by its function `function`.
fn scripts(function: &str, values: &[f64]) -> Vec<String> {
    let harness = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tools/js/test/harness.js");
    let program = format!(
        "const h = require({harness:?}); const f = h.load()[{function:?}]; \
         process.stdout.write(JSON.stringify(JSON.parse(process.argv[1]).map(f)));",
        harness = harness.display().to_string()
    );
    let json = serde_json::to_string(values).expect("values");
    let out = Command::new("node")
        .args(["-e", &program, &json])
        .output()
        .expect("node runs (the README's test command installs it)");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).expect("a list of strings")
}

#[test]
fn the_svg_and_the_script_write_every_number_alike() {
    let values = [
        0.0,
        1e-7,
        0.000_25,
        0.001,
        0.0125,
        0.099_996,
        0.25,
        0.5,
        1.0,
        2.5,
        3.1,
        9.999_9,
        12.0,
        12.345_6,
        12.5,
        99.95,
        100.0,
        999.5,
        1234.56,
        1500.0,
        2000.0,
        9999.0,
        9999.6,
        10_000.0,
        25_000.0,
        99_999.4,
        123_456.7,
        1_000_000.0,
        3_200_000.0,
        -2.0,
        -0.25,
        -25_000.0,
    ];
    let rust: Vec<String> = values.iter().map(|v| report::number(*v)).collect();
    assert_eq!(rust, scripts("fmt", &values), "for {values:?}");
}

#[test]
fn the_svg_and_the_script_name_percentiles_alike() {
    let decades = [10.0, 100.0, 1_000.0, 10_000.0, 100_000.0, 1_000_000.0];
    let rust: Vec<String> = decades
        .iter()
        .map(|x| report::percentile_label(*x))
        .collect();
    assert_eq!(rust, scripts("percentile", &decades));
}
