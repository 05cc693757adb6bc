//! The pages in a real browser: headless Chromium (Debian's `chromium`) opens the index, a run
//! page and a comparison page from disk, as a user would, and takes screenshots. A page passes
//! when it is not blank, its charts are in the DOM and on the screen (pixels in the plot
//! colours), and the browser logged nothing to the console.
#![allow(clippy::unwrap_used)]

use crate::experiment_runs;
use crate::fits;
use crate::runs;

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
    chromium_with(page, profile, &[mode])
}

/// Runs Chromium on `page` with `modes`; stdout and stderr.
fn chromium_with(page: &Path, profile: &Path, modes: &[&str]) -> (String, String) {
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
        .args(modes)
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

pub(crate) struct Screenshot {
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

    pub(crate) fn count(&self, color: [u8; 3]) -> usize {
        self.rgb.iter().filter(|&&p| p == color).count()
    }

    fn share_not_white(&self) -> f64 {
        self.rgb.iter().filter(|&&p| p != [255, 255, 255]).count() as f64 / self.rgb.len() as f64
    }
}

pub(crate) const BLUE: [u8; 3] = [0x1f, 0x77, 0xb4];
const ORANGE: [u8; 3] = [0xff, 0x7f, 0x0e];

/// Opens `page` and checks that it rendered; returns the DOM and the screenshot.
pub(crate) fn open(page: &Path, work: &Path, name: &str) -> (String, Screenshot) {
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
    assert!(dom.contains("<figure id=\"latency\"") && dom.contains("<figure id=\"probe-0-cpu\""));
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
/// A stack sampled only in seconds 14 to 16 of a run (a collection, a freeze).
const BURST: &str = "node;node;main;uv_run;v8::internal::Heap::Scavenge";
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

    // The charts across settings are drawn from their models too: hovering a setting shows
    // each target's stored median there.
    let html = std::fs::read_to_string(&drawn.page_path).unwrap();
    let explored = explore(
        &drawn.page_path,
        work.path(),
        "experiment",
        r#"
        const plots = window.showdownPlots;
        const across = plots.filter(c => c.root.getAttribute('data-chart').startsWith('across'));
        const u = across[0];
        const w = u.over.clientWidth, h = u.over.clientHeight;
        fire(u, 'mouseenter', w - 2, h / 2);
        fire(u, 'mousemove', w - 2, h / 2, { movementX: 1 });
        return { id: u.root.getAttribute('data-chart'), across: across.length, x: u.data[0][u.cursor.idx],
                 legend: Array.from(u.root.querySelectorAll('.u-legend .u-value')).map(e => e.textContent),
                 kinds: Array.from(document.querySelectorAll('figure[data-chart]')).map(f => f.getAttribute('data-chart')) };
        "#,
    );
    assert!(explored["across"].as_u64().unwrap() >= 2, "{explored}");
    let kinds = explored["kinds"].as_array().unwrap();
    assert!(
        kinds.iter().any(|k| k == "numbers" || k == "names")
            && kinds.iter().any(|k| k == "percentile")
            && kinds.iter().any(|k| k == "time"),
        "every kind of chart has its model: {explored}"
    );
    let across = model(&html, explored["id"].as_str().unwrap());
    let x = explored["x"].as_f64().unwrap();
    let mut shown = 0;
    for (i, series) in across["series"].as_array().unwrap().iter().enumerate() {
        let xs = series["x"].as_array().unwrap();
        if let Some(at) = xs.iter().position(|v| v.as_f64() == Some(x)) {
            assert_eq!(
                explored["legend"][i + 1],
                four(series["y"][at].as_f64().unwrap()),
                "{explored}"
            );
            shown += 1;
        }
    }
    assert!(shown >= 2, "both targets at the last setting: {explored}");
}

/// What a page's interactive parts do when used, read back from the DOM: `driver` is
/// JavaScript run after the page's own (`await tick()` lets uPlot commit a zoom) that returns
/// an object; it is written as JSON into the DOM, which Chromium dumps. The page is a copy
/// with the driver appended (the page itself has no test code), opened from disk with every
/// host name unresolvable: nothing is fetched.
fn explore(page: &Path, work: &Path, name: &str, driver: &str) -> serde_json::Value {
    let html = std::fs::read_to_string(page).unwrap();
    let script = format!(
        r#"<script>
window.addEventListener('load', function () {{ setTimeout(async function () {{
  const tick = () => new Promise(r => setTimeout(r, 20));
  function fire(u, type, x, y, extra) {{
    const r = u.over.getBoundingClientRect();
    u.over.dispatchEvent(new MouseEvent(type, Object.assign({{ bubbles: true, cancelable: true, button: 0,
      clientX: r.left + x, clientY: r.top + y }}, extra || {{}})));
  }}
  let out;
  try {{ out = await (async function () {{ {driver} }})(); }} catch (e) {{ out = {{ error: String(e && e.stack || e) }}; }}
  const pre = document.createElement('pre');
  pre.id = 'explored';
  pre.textContent = JSON.stringify(out);
  document.body.appendChild(pre);
}}, 50); }});
</script>"#
    );
    let copy = page.with_file_name(format!("explore-{name}.html"));
    std::fs::write(&copy, html.replace("</body>", &format!("{script}</body>"))).unwrap();
    let profile = work.join(format!("profile-explore-{name}"));
    let (dom, stderr) = chromium_with(
        &copy,
        &profile,
        &[
            "--dump-dom",
            "--virtual-time-budget=8000",
            "--host-resolver-rules=MAP * ~NOTFOUND",
        ],
    );
    let console: Vec<&str> = stderr.lines().filter(|l| l.contains("CONSOLE")).collect();
    assert!(console.is_empty(), "{name}: the console says: {console:#?}");
    let start = dom
        .find("<pre id=\"explored\">")
        .unwrap_or_else(|| panic!("{name}: the driver wrote nothing: {dom}"));
    let rest = &dom[start + "<pre id=\"explored\">".len()..];
    let text = &rest[..rest.find("</pre>").unwrap()];
    let text = text
        .replace("&quot;", "\"")
        .replace("&lt;", "<")
        .replace("&gt;", ">")
        .replace("&amp;", "&");
    let value: serde_json::Value = serde_json::from_str(&text).unwrap();
    assert!(value.get("error").is_none(), "{name}: {value}");
    value
}

/// The model a chart's figure embeds (what the interactive chart draws).
fn model(page: &str, id: &str) -> serde_json::Value {
    let figure = page.find(&format!("<figure id=\"{id}\"")).unwrap();
    let rest = &page[figure..];
    let open = rest.find("<script class=\"chart-data\"").unwrap();
    let body = &rest[open..];
    let body = &body[body.find('>').unwrap() + 1..];
    let json = &body[..body.find("</script>").unwrap()];
    serde_json::from_str(json).unwrap()
}

/// A value as the page's legend writes it: by the pages' one rule table.
fn four(v: f64) -> String {
    report::number(v)
}

#[test]
fn charts_and_the_index_are_explored_in_a_browser() {
    let work = tempfile::tempdir().unwrap();
    let db = format!("sqlite://{}/showdown.db", work.path().display());
    let site_dir = work.path().join("site");
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let (node, requests) = runtime.block_on(async {
        let store = Store::open(&db).await.unwrap();
        let node = runs::write(
            &store,
            &Spec::new("node 2000", 800)
                .label("target", "node")
                .profiled(NODE_STACKS)
                .burst(BURST, 90, 14..=16),
            1_795_000_000_000_000_000,
        )
        .await;
        runs::write(
            &store,
            &Spec::new("go 2000", 300).label("target", "go"),
            1_795_000_060_000_000_000,
        )
        .await;
        runs::write(
            &store,
            &Spec::new("go warming up", 100)
                .label("target", "go")
                .label("phase", "warmup"),
            1_795_000_120_000_000_000,
        )
        .await;
        let requests = store
            .load_run(&node)
            .await
            .unwrap()
            .summary
            .unwrap()
            .latency
            .corrected
            .count;
        let options = SiteOptions {
            out: site_dir.clone(),
            ..Default::default()
        };
        site::write(&store, &options).await.unwrap();
        (node, requests)
    });
    let run_page = site_dir.join(pages::run_path(&node));
    let html = std::fs::read_to_string(&run_page).unwrap();
    // Everything the page loads is beside it: no address of the network anywhere.
    for tag in ["<script", "<link"] {
        for (at, _) in html.match_indices(tag) {
            let element = &html[at..at + html[at..].find('>').unwrap()];
            assert!(!element.contains("http"), "{element}");
        }
    }

    // Hover, one crosshair, one zoom, and the reset, on the run page's charts.
    let explored = explore(
        &run_page,
        work.path(),
        "run",
        &r#"
        const charts = window.showdownCharts;
        const byId = id => charts.find(c => c.root.getAttribute('data-chart') === id);
        const u = byId('latency'), cpu = byId('probe-0-cpu');
        const w = u.over.clientWidth, h = u.over.clientHeight;
        fire(u, 'mouseenter', w / 2, h / 2);
        fire(u, 'mousemove', w / 2, h / 2, { movementX: 1 });
        const idx = u.cursor.idx;
        const hovered = {
          x: u.data[0][idx],
          legend: Array.from(u.root.querySelectorAll('.u-legend .u-value')).map(e => e.textContent),
          labels: Array.from(u.root.querySelectorAll('.u-legend .u-label')).map(e => e.textContent),
          cpuX: cpu.data[0][cpu.cursor.idx],
        };
        const full = charts.map(c => [c.scales.x.min, c.scales.x.max]);
        // The window flame graph: opened, it loads its data and draws the whole run.
        const details = document.querySelector('details.flame-window');
        details.open = true;
        for (let i = 0; i < 200 && !details.querySelector('.flame-head'); i++) await tick();
        const head = () => {
          const p = details.querySelector('.flame-head');
          return { window: p.getAttribute('data-window'), samples: Number(p.getAttribute('data-samples')),
                   rest: Number(p.getAttribute('data-rest')), text: p.textContent };
        };
        const frame = name => {
          const g = Array.from(details.querySelectorAll('g[data-frame]')).find(g => g.getAttribute('data-frame') === name);
          return g ? { n: Number(g.getAttribute('data-n')), delta: g.getAttribute('data-delta') } : null;
        };
        const flameFull = head();
        fire(u, 'mousedown', w * 0.25, h / 2);
        fire(u, 'mousemove', w * 0.75, h / 2, { movementX: w / 2 });
        fire(u, 'mouseup', w * 0.75, h / 2);
        await tick();
        const zoomed = charts.map(c => [c.scales.x.min, c.scales.x.max]);
        const flameZoomed = Object.assign(head(), { burst: frame('BURST_FRAME') });
        details.querySelector('input[value=against]').click();
        await tick();
        const against = { burst: frame('BURST_FRAME'), hash: frame('HASH_FRAME') };
        fire(u, 'dblclick', w / 2, h / 2);
        await tick();
        const reset = charts.map(c => [c.scales.x.min, c.scales.x.max]);
        const flameReset = head();
        // Its search box, above it: typing marks hashSync and says its share of the window.
        const windowFind = details.querySelector('.flame-find');
        let windowFound = null;
        if (windowFind) {
          windowFind.value = 'HASHSYNC';
          windowFind.dispatchEvent(new Event('input'));
          await tick();
          const said = details.querySelector('.flame-live .flame-said');
          windowFound = { said: said ? said.textContent : '',
                          marked: details.querySelectorAll('.flame-live rect[fill="rgb(230,0,230)"]').length,
                          sameBox: details.querySelector('.flame-find') === windowFind };
          windowFind.value = '';
          windowFind.dispatchEvent(new Event('input'));
        }
        const bands = { count: u.bands.length, series: u.series.length };
        // The distribution: hover reads a percentile and each series' latency there.
        const dist = window.showdownPlots.find(c => c.root.getAttribute('data-chart') === 'distribution');
        const dw = dist.over.clientWidth, dh = dist.over.clientHeight;
        fire(dist, 'mouseenter', dw * 0.6, dh / 2);
        fire(dist, 'mousemove', dw * 0.6, dh / 2, { movementX: 1 });
        const distribution = { x: dist.data[0][dist.cursor.idx],
          legend: Array.from(dist.root.querySelectorAll('.u-legend .u-value')).map(e => e.textContent) };
        const rss = byId('probe-0-members-rss');
        const members = rss ? rss.series.length - 1 : 0;
        // The heatmap the script drew from its data: its cells, and one hovered.
        const heat = document.getElementById('heatmap-corrected');
        const live = heat.querySelector('.heatmap-live svg');
        const cells = live ? Array.from(live.querySelectorAll('[data-column]')) : [];
        const heatCount = cells.reduce((n, c) => n + Number(c.getAttribute('data-count')), 0);
        let heatHover = null;
        if (cells.length) {
          cells[0].dispatchEvent(new MouseEvent('mouseover', { bubbles: true }));
          heatHover = { text: heat.querySelector('.heatmap-hover').textContent,
                        count: Number(cells[0].getAttribute('data-count')) };
        }
        const heatmap = { live: heat.classList.contains('live'), cells: cells.length, count: heatCount,
                          staticShown: getComputedStyle(heat.querySelector('.plot')).display !== 'none',
                          hover: heatHover };
        // The run's flame graph, drawn again from its data beside the page: a click on a box
        // zooms to it, the search marks what it finds, "Whole graph" zooms out.
        const graph = document.querySelector('figure.flame-figure');
        for (let i = 0; i < 200 && !graph.classList.contains('live'); i++) await tick();
        const graphLive = graph.querySelector('.flame-graph-live');
        const box = name => Array.from(graphLive.querySelectorAll('g[data-frame]')).find(g => g.getAttribute('data-frame') === name);
        const graphBoxes = graphLive.querySelectorAll('g[data-box]').length;
        const hashWidth = () => Number(box('HASH_FRAME').querySelector('rect').getAttribute('width'));
        const hashBefore = hashWidth();
        box('HASH_FRAME').querySelector('rect').dispatchEvent(new MouseEvent('click', { bubbles: true }));
        await tick();
        const zoomedGraph = { zoom: graph.getAttribute('data-zoom'), said: graphLive.querySelector('.flame-said').textContent,
                              hashBefore, hashAfter: hashWidth(), boxes: graphLive.querySelectorAll('g[data-box]').length,
                              staticShown: getComputedStyle(graph.querySelector('object')).display !== 'none' };
        const search = graphLive.querySelector('.flame-find');
        search.value = 'HASHSYNC';
        search.dispatchEvent(new Event('input'));
        graphLive.querySelector('.flame-whole').click();
        await tick();
        const foundGraph = { zoom: graph.getAttribute('data-zoom'), said: graphLive.querySelector('.flame-said').textContent,
                             marked: graphLive.querySelectorAll('rect[fill="rgb(230,0,230)"]').length,
                             boxes: graphLive.querySelectorAll('g[data-box]').length, graphBoxes };
        // A series toggled from the legend.
        u.root.querySelectorAll('.u-legend .u-series')[1].querySelector('th').dispatchEvent(new MouseEvent('click', { bubbles: true }));
        await tick();
        return { count: charts.length, hovered, full, zoomed, reset, shown: u.series[1].show,
                 drawn: document.documentElement.getAttribute('data-charts'),
                 flameFull, flameZoomed, against, flameReset, bands, members, distribution, heatmap,
                 zoomedGraph, foundGraph, windowFound };
        "#
        .replace("BURST_FRAME", BURST.rsplit(';').next().unwrap())
        .replace("HASH_FRAME", "JS:*hashSync /srv/server.js:3"),
    );
    let count = explored["count"].as_u64().unwrap();
    assert!(
        count >= 10,
        "the run page's time charts are interactive: {explored}"
    );
    // The value shown on hover is the one stored for that instant, in every series.
    let latency = model(&html, "latency");
    let x = explored["hovered"]["x"].as_f64().unwrap();
    let legend: Vec<String> = explored["hovered"]["legend"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_str().unwrap().to_string())
        .collect();
    for (i, series) in latency["series"].as_array().unwrap().iter().enumerate() {
        let xs = series["x"].as_array().unwrap();
        let at = xs.iter().position(|v| v.as_f64() == Some(x)).unwrap();
        let stored = series["y"][at].as_f64().unwrap();
        assert_eq!(
            legend[i + 1],
            four(stored),
            "{}: {explored}",
            series["name"]
        );
    }
    // One crosshair: the CPU chart's cursor is at the same instant (its nearest sample).
    let cpu_x = explored["hovered"]["cpuX"].as_f64().unwrap();
    assert!((cpu_x - x).abs() <= 0.6, "{x} against {cpu_x}");
    // One zoom: every chart shows the same, narrower window; the double-click undoes it.
    let windows = |key: &str| -> Vec<(f64, f64)> {
        explored[key]
            .as_array()
            .unwrap()
            .iter()
            .map(|w| (w[0].as_f64().unwrap(), w[1].as_f64().unwrap()))
            .collect()
    };
    let (full, zoomed, reset) = (windows("full"), windows("zoomed"), windows("reset"));
    assert!(zoomed.iter().all(|w| *w == zoomed[0]), "{zoomed:?}");
    assert!(
        zoomed[0].1 - zoomed[0].0 < 0.7 * (full[0].1 - full[0].0),
        "{zoomed:?} within {full:?}"
    );
    assert_eq!(reset, full);
    assert_eq!(
        explored["shown"], false,
        "the legend's click hid the series"
    );

    // The latency chart's bands (p50–p99, p99–max) are drawn; each process's RSS has a line.
    assert_eq!(explored["bands"]["count"], 2, "{explored}");
    assert_eq!(explored["bands"]["series"], 1 + 4 + 4, "{explored}");
    assert_eq!(explored["members"], 2, "{explored}");

    // By percentile: the legend names the percentile under the cursor and each series' value.
    let distribution = model(&html, "distribution");
    let dx = explored["distribution"]["x"].as_f64().unwrap();
    assert_eq!(
        explored["distribution"]["legend"][0],
        report::percentile(dx),
        "{explored}"
    );
    for (i, series) in distribution["series"]
        .as_array()
        .unwrap()
        .iter()
        .enumerate()
    {
        let xs = series["x"].as_array().unwrap();
        let at = xs.iter().position(|v| v.as_f64() == Some(dx)).unwrap();
        assert_eq!(
            explored["distribution"]["legend"][i + 1],
            four(series["y"][at].as_f64().unwrap()),
            "{explored}"
        );
    }

    // The run's flame graph, drawn by the script from the data beside the page in place of the
    // SVG file it embeds: zoomed to hashSync, that box fills the width (its callers drawn
    // across it, nothing else); found, hashSync's one box is marked with its share; zoomed out,
    // every box is back.
    let zoomed = &explored["zoomedGraph"];
    assert_eq!(zoomed["staticShown"], false, "{explored}");
    assert!(
        zoomed["hashBefore"].as_f64().unwrap() < 1_000.0,
        "{explored}"
    );
    assert_eq!(zoomed["hashAfter"].as_f64(), Some(1_180.0), "{explored}");
    assert_ne!(zoomed["zoom"], "0", "{explored}");
    assert!(
        zoomed["said"]
            .as_str()
            .unwrap()
            .starts_with("Zoomed to JS:*hashSync"),
        "{explored}"
    );
    let window_found = &explored["windowFound"];
    assert_eq!(window_found["sameBox"], true, "{explored}");
    assert!(window_found["marked"].as_u64() >= Some(1), "{explored}");
    let said = window_found["said"].as_str().unwrap_or_default();
    assert!(
        said.starts_with("Found: ") && said.ends_with(" % of the window."),
        "{explored}"
    );
    let found = &explored["foundGraph"];
    assert!(
        zoomed["boxes"].as_u64() < found["graphBoxes"].as_u64(),
        "{explored}"
    );
    assert_eq!(found["zoom"], "0");
    assert_eq!(found["boxes"], found["graphBoxes"], "{explored}");
    assert_eq!(found["marked"], 1, "{explored}");
    // The share said is hashSync's box's, read from the graph's data beside the page.
    let beside = |marker: &str| -> serde_json::Value {
        let at = html.find(marker).unwrap() + marker.len();
        let src = &html[at..at + html[at..].find('"').unwrap()];
        let script = std::fs::read_to_string(run_page.with_file_name(src)).unwrap();
        let json = &script[script.find("= {").unwrap() + 2..script.trim_end().len() - 1];
        serde_json::from_str(json).unwrap()
    };
    let graph = beside("class=\"flame-figure\" data-src=\"");
    let names = graph["names"].as_array().unwrap();
    let hash = names
        .iter()
        .position(|n| n == "JS:*hashSync /srv/server.js:3")
        .unwrap();
    let width: f64 = graph["boxes"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|b| b["name"] == hash)
        .map(|b| b["width"].as_f64().unwrap())
        .sum();
    let said = found["said"].as_str().unwrap();
    let shown: f64 = said
        .strip_prefix("Found: ")
        .and_then(|t| t.split(' ').next())
        .and_then(|t| t.parse().ok())
        .unwrap_or_else(|| panic!("{said}"));
    assert!(
        (shown - 100.0 * width).abs() < 0.006,
        "{said} against {width}"
    );

    // The window flame graph follows the zoom: its samples are those of the slices in the
    // charts' window, read from the data beside the page; against the rest, the burst (in the
    // window only) gained its whole share, the function sampled every second lost some.
    let data = beside("class=\"flame-window\" data-src=\"");
    let samples_in = |from: f64, to: f64| -> u64 {
        data["slices"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|s| {
                let mid = (s["from"].as_f64().unwrap() + s["to"].as_f64().unwrap()) / 2.0;
                mid >= from && mid <= to
            })
            .flat_map(|s| {
                s["counts"]
                    .as_array()
                    .unwrap()
                    .chunks(2)
                    .map(|p| p[1].as_u64().unwrap())
                    .collect::<Vec<_>>()
            })
            .sum()
    };
    let every_second: u64 = NODE_STACKS.iter().map(|s| s.1).sum();
    let whole = every_second * runs::SECONDS + 90 * 3;
    assert_eq!(samples_in(f64::MIN, f64::MAX), whole);
    let flame_full = &explored["flameFull"];
    assert_eq!(flame_full["window"], "all", "{explored}");
    assert_eq!(flame_full["samples"].as_u64(), Some(whole), "{explored}");
    assert_eq!(flame_full["rest"].as_u64(), Some(0));
    let zoomed_window = &explored["zoomed"][0];
    let (z0, z1) = (
        zoomed_window[0].as_f64().unwrap(),
        zoomed_window[1].as_f64().unwrap(),
    );
    let flame_zoomed = &explored["flameZoomed"];
    assert_eq!(flame_zoomed["window"], format!("{z0},{z1}"), "{explored}");
    let inside = samples_in(z0, z1);
    assert!(inside > 0 && inside < whole, "{inside} of {whole}");
    assert_eq!(flame_zoomed["samples"].as_u64(), Some(inside), "{explored}");
    assert_eq!(flame_zoomed["rest"].as_u64(), Some(whole - inside));
    assert_eq!(flame_zoomed["burst"]["n"], 270, "{explored}");
    let delta = |name: &str| -> f64 {
        explored["against"][name]["delta"]
            .as_str()
            .unwrap()
            .parse()
            .unwrap()
    };
    let expected_burst = 100.0 * 270.0 / inside as f64;
    assert!(
        (delta("burst") - expected_burst).abs() < 1e-3,
        "{} against {expected_burst}",
        delta("burst")
    );
    assert!(delta("hash") < 0.0, "{explored}");
    assert_eq!(explored["flameReset"]["window"], "all");

    // The heatmaps' cells add up to the run's completed requests.
    let doc_start = html
        .find("<figure class=\"heatmap\" id=\"heatmap-corrected\"")
        .unwrap();
    let svg = &html[doc_start..];
    let svg = &svg[svg.find("<svg").unwrap()..svg.find("</svg>").unwrap() + 6];
    let doc = roxmltree::Document::parse(svg).unwrap();
    let cells: u64 = doc
        .descendants()
        .filter_map(|n| n.attribute("data-count"))
        .map(|c| c.parse::<u64>().unwrap())
        .sum();
    assert_eq!(cells, requests);
    // The page's script drew the same cells from the data beside the SVG (which it hid), and
    // hovering one names its count as the page's number rule writes it.
    let heat = &explored["heatmap"];
    assert_eq!(heat["live"], true, "{heat}");
    assert_eq!(heat["staticShown"], false, "{heat}");
    assert_eq!(heat["count"].as_u64(), Some(requests), "{heat}");
    assert_eq!(
        heat["cells"].as_u64(),
        Some(
            doc.descendants()
                .filter(|n| n.has_attribute("data-count"))
                .count() as u64
        ),
        "{heat}"
    );
    let hovered = heat["hover"]["count"].as_f64().unwrap();
    let said = heat["hover"]["text"].as_str().unwrap();
    assert!(
        said.starts_with(&format!("{} request", report::number(hovered))),
        "{said}"
    );

    // The index: the warm-up hidden until asked, a filter, a sort.
    let index = explore(
        &site_dir.join("index.html"),
        work.path(),
        "index",
        r#"
        const shown = () => Array.from(document.querySelectorAll('tr[data-search]'))
          .filter(tr => getComputedStyle(tr).display !== 'none')
          .map(tr => tr.querySelector('a').textContent);
        const before = shown();
        document.getElementById('show-warmups').click();
        const withWarmups = shown();
        const filter = document.getElementById('filter');
        filter.value = 'target=go';
        filter.dispatchEvent(new Event('input'));
        const filtered = shown();
        filter.value = '';
        filter.dispatchEvent(new Event('input'));
        const th = Array.from(document.querySelectorAll('table.sortable th')).find(t => t.textContent.trim() === 'run');
        th.click();
        const up = shown();
        th.click();
        const down = shown();
        const bookkeeping = getComputedStyle(document.querySelector('.chip.bk')).display;
        return { before, withWarmups, filtered, up, down, bookkeeping };
        "#,
    );
    let names = |key: &str| -> Vec<String> {
        index[key]
            .as_array()
            .unwrap()
            .iter()
            .map(|v| v.as_str().unwrap().to_string())
            .collect()
    };
    assert_eq!(names("before"), ["node 2000", "go 2000"], "{index}");
    assert_eq!(names("withWarmups").len(), 3, "{index}");
    assert_eq!(names("filtered"), ["go 2000", "go warming up"], "{index}");
    assert_eq!(names("up"), ["go 2000", "go warming up", "node 2000"]);
    assert_eq!(names("down"), ["node 2000", "go warming up", "go 2000"]);
    assert_eq!(index["bookkeeping"], "none", "bookkeeping labels hidden");
}

/// Every kind of page fits a 1,280-px window with nothing clipped: a run's (with its probe's
/// facts and a gun group's shards), a comparison's, a group's, the index, and an experiment's
/// at fixed rates (the experiment of searches is checked in loadgen's tests, which run one).
#[test]
fn every_page_fits_a_1280_px_window() {
    let work = tempfile::tempdir().unwrap();
    let db = format!("sqlite://{}/showdown.db", work.path().display());
    let site_dir = work.path().join("site");
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let node = runtime.block_on(async {
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
            &Spec::new("go 2000", 300).label("target", "go"),
            1_795_000_060_000_000_000,
        )
        .await;
        for i in 0..2u32 {
            let mut shard = Spec::new("eu shard", 400).label("target", "rust");
            shard.experiment = Some("multi-gun");
            shard.shard = Some(store::run::Shard {
                group: "eu".into(),
                index: i,
                count: 2,
            });
            runs::write(&store, &shard, 1_795_000_120_000_000_000).await;
        }
        site::write(
            &store,
            &SiteOptions {
                out: site_dir.clone(),
                ..Default::default()
            },
        )
        .await
        .unwrap();
        node
    });
    let mut pages = vec![
        site_dir.join("index.html"),
        site_dir.join(pages::run_path(&node)),
        site_dir.join(pages::group_path("eu")),
    ];
    for dir in ["compare"] {
        for e in std::fs::read_dir(site_dir.join(dir)).unwrap() {
            let path = e.unwrap().path();
            if path.extension().is_some_and(|x| x == "html") {
                pages.push(path);
            }
        }
    }
    let drawn = runtime.block_on(experiment_runs::drawn());
    pages.push(drawn.page_path.clone());
    fits::assert_fit(&pages, 1280, work.path());
}
