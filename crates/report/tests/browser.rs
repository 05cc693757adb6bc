//! The pages in a real browser: headless Chromium (Debian's `chromium`) opens the index, a run
//! page and a comparison page from disk, as a user would, and takes screenshots. A page passes
//! when it is not blank, its charts are in the DOM and on the screen (pixels in the plot
//! colours), and the browser logged nothing to the console.
#![allow(clippy::unwrap_used)]

#[path = "support/experiment_runs.rs"]
mod experiment_runs;
#[path = "support/runs.rs"]
mod runs;

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use report::pages;
use report::site::{self, SiteOptions};
use runs::Spec;
use store::Store;

fn chromium() -> PathBuf {
    for name in ["chromium", "chromium-browser"] {
        if let Ok(out) = Command::new("sh")
            .arg("-c")
            .arg(format!("command -v {name}"))
            .output()
        {
            let path = String::from_utf8_lossy(&out.stdout).trim().to_string();
            if !path.is_empty() {
                return PathBuf::from(path);
            }
        }
    }
    panic!(
        "chromium not found: install Debian's chromium package (the README's test command does)"
    );
}

/// Runs Chromium on `page` with `mode` (`--screenshot=…` or `--dump-dom`); stdout and stderr.
fn chromium_run(page: &Path, profile: &Path, mode: &str) -> (String, String) {
    // To files, not pipes: a page's DOM outgrows a pipe's buffer while we wait.
    std::fs::create_dir_all(profile).unwrap();
    let (stdout, stderr) = (profile.join("stdout"), profile.join("stderr"));
    let mut child = Command::new(chromium())
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            "--no-first-run",
            "--hide-scrollbars",
            "--enable-logging=stderr",
            "--v=0",
            "--window-size=1280,2400",
        ])
        .arg(format!("--user-data-dir={}", profile.display()))
        .arg(mode)
        .arg(format!("file://{}", page.display()))
        .stdout(Stdio::from(std::fs::File::create(&stdout).unwrap()))
        .stderr(Stdio::from(std::fs::File::create(&stderr).unwrap()))
        .spawn()
        .unwrap();
    // Bounded: a browser that hangs fails the test instead of the CI run.
    let deadline = Instant::now() + Duration::from_secs(90);
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            panic!("chromium did not finish within 90 s on {}", page.display());
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    let (stdout, stderr) = (
        std::fs::read_to_string(stdout).unwrap(),
        std::fs::read_to_string(stderr).unwrap(),
    );
    assert!(
        status.success(),
        "chromium failed on {}: {stderr}",
        page.display()
    );
    (stdout, stderr)
}

struct Screenshot {
    width: usize,
    height: usize,
    rgb: Vec<[u8; 3]>,
}

impl Screenshot {
    fn read(path: &Path) -> Self {
        let decoder =
            png::Decoder::new(std::io::BufReader::new(std::fs::File::open(path).unwrap()));
        let mut reader = decoder.read_info().unwrap();
        let mut buf = vec![0; reader.output_buffer_size().unwrap()];
        let info = reader.next_frame(&mut buf).unwrap();
        let channels = info.color_type.samples();
        assert_eq!(info.bit_depth, png::BitDepth::Eight);
        let rgb = buf[..info.buffer_size()]
            .chunks(channels)
            .map(|p| [p[0], p[1], p[2]])
            .collect();
        Screenshot {
            width: info.width as usize,
            height: info.height as usize,
            rgb,
        }
    }

    fn count(&self, color: [u8; 3]) -> usize {
        self.rgb.iter().filter(|&&p| p == color).count()
    }

    fn share_not_white(&self) -> f64 {
        self.rgb.iter().filter(|&&p| p != [255, 255, 255]).count() as f64 / self.rgb.len() as f64
    }
}

const BLUE: [u8; 3] = [0x1f, 0x77, 0xb4];
const ORANGE: [u8; 3] = [0xff, 0x7f, 0x0e];

/// Opens `page` and checks that it rendered; returns the DOM and the screenshot.
fn open(page: &Path, work: &Path, name: &str) -> (String, Screenshot) {
    let profile = work.join(format!("profile-{name}"));
    let shot = work.join(format!("{name}.png"));
    let (_, stderr) = chromium_run(page, &profile, &format!("--screenshot={}", shot.display()));
    let console: Vec<&str> = stderr.lines().filter(|l| l.contains("CONSOLE")).collect();
    assert!(
        console.is_empty(),
        "{name}: the browser's console says: {console:#?}"
    );
    let (dom, _) = chromium_run(page, &profile, "--dump-dom");
    let screenshot = Screenshot::read(&shot);
    assert_eq!(
        (screenshot.width, screenshot.height),
        (1280, 2400),
        "{name}"
    );
    let ink = screenshot.share_not_white();
    assert!(
        ink > 0.02,
        "{name}: the page looks blank ({:.2}% not white); screenshot kept at {}",
        100.0 * ink,
        shot.display()
    );
    (dom, screenshot)
}

#[test]
fn pages_render_in_a_browser() {
    let work = tempfile::tempdir().unwrap();
    let db = format!("sqlite://{}/showdown.db", work.path().display());
    let site_dir = work.path().join("site");
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let (node, written) = runtime.block_on(async {
        let store = Store::open(&db).await.unwrap();
        let node = runs::write(
            &store,
            &Spec::new("node 2000", 800)
                .label("target", "node")
                .profiled(NODE_STACKS),
            1_795_000_000_000_000_000,
        )
        .await;
        runs::write(
            &store,
            &Spec::new("go 2000", 300)
                .label("target", "go")
                .profiled(GO_STACKS),
            1_795_000_060_000_000_000,
        )
        .await;
        let options = SiteOptions {
            out: site_dir.clone(),
            ..Default::default()
        };
        (node, site::write(&store, &options).await.unwrap())
    });
    assert_eq!(
        written.comparison_pages.len(),
        1,
        "the experiment's comparison"
    );

    let (dom, _) = open(&site_dir.join("index.html"), work.path(), "index");
    assert!(
        dom.contains("node 2000") && dom.contains("go 2000"),
        "the index lists both runs"
    );
    assert!(dom.contains(&pages::run_path(&node)));

    let (dom, shot) = open(&site_dir.join(pages::run_path(&node)), work.path(), "run");
    let charts = dom.matches("<svg").count();
    assert!(
        charts >= 11,
        "the run page has its load and probe charts in the DOM: {charts}"
    );
    assert!(dom.contains("<figure id=\"latency\">") && dom.contains("<figure id=\"probe-0-cpu\">"));
    assert!(
        shot.count(BLUE) > 500,
        "blue lines are on the screen: {} pixels",
        shot.count(BLUE)
    );

    // The flame graph beside the run page, in the browser with its script: the functions
    // named (a hostile name escaped), coloured boxes on the screen, nothing on the console.
    assert!(
        dom.contains("<object class=\"flame\""),
        "the run page embeds its flame graph"
    );
    let flame = site_dir.join(pages::run_path(&node).replace(".html", ".flame-1.svg"));
    let (dom, shot) = open(&flame, work.path(), "flame");
    assert!(
        dom.contains("hashSync") && dom.contains("uv__io_poll"),
        "{dom}"
    );
    assert!(
        !dom.contains("<img src=x"),
        "a frame's name is text, not markup"
    );
    assert!(shot.share_not_white() > 0.05, "the boxes are drawn");

    let (dom, shot) = open(&written.comparison_pages[0], work.path(), "comparison");
    assert!(dom.contains("Where their CPU went") && dom.contains("<object class=\"flame\""));
    assert!(
        dom.matches("<svg").count() >= 9,
        "the comparison's charts are in the DOM"
    );
    assert!(
        shot.count(BLUE) > 300 && shot.count(ORANGE) > 300,
        "both runs' colours are on the screen: {} blue, {} orange",
        shot.count(BLUE),
        shot.count(ORANGE)
    );
    let diff = written.comparison_pages[0].with_extension("diff-2.svg");
    let (dom, _) = open(&diff, work.path(), "differential");
    assert!(
        dom.contains("crypto/sha256.block") && dom.contains("against #1 node 2000"),
        "the second run's code paths, coloured against the first's: {dom}"
    );
}

/// What the fixture's node spends its CPU on, each second (a hostile frame name among them).
const NODE_STACKS: &[(&str, u64)] = &[
    ("node;node;main;uv_run;uv__io_poll;JS:*handle /srv/server.js:10;JS:*hashSync /srv/server.js:3", 60),
    ("node;node;main;uv_run;uv__io_poll;JS:*handle /srv/server.js:10", 15),
    ("node;node;main;uv_run;uv__io_poll;epoll_wait;do_epoll_wait_[k]", 10),
    ("node;V8 Worker;<img src=x onerror=alert(1)>", 5),
];
/// And the fixture's go.
const GO_STACKS: &[(&str, u64)] = &[
    (
        "server;server;runtime.goexit;main.handle;crypto/sha256.block",
        40,
    ),
    ("server;server;runtime.goexit;main.handle", 10),
    (
        "server;server;runtime.mcall;runtime.schedule;runtime.findRunnable",
        20,
    ),
];

#[test]
fn an_experiment_page_renders_in_a_browser() {
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let drawn = runtime.block_on(experiment_runs::drawn());
    let work = tempfile::tempdir().unwrap();
    let (dom, shot) = open(&drawn.page_path, work.path(), "experiment");
    assert!(
        dom.contains("At rate=100: fast had the lowest p99"),
        "the sentences are in the DOM"
    );
    assert!(
        dom.matches("<svg").count() >= 18,
        "the charts across settings and per setting are in the DOM"
    );
    assert!(
        shot.count(BLUE) > 300 && shot.count(ORANGE) > 300,
        "both targets' colours are on the screen: {} blue, {} orange",
        shot.count(BLUE),
        shot.count(ORANGE)
    );
}
