//! Whether a page fits a browser window of a given width with nothing clipped: Debian's
//! Chromium opens a copy of it from disk (every host name unresolvable), and a script lists
//! every visible element whose content is wider than its box (a table cut at a scroll box's
//! edge, a page wider than the window).
#![allow(dead_code, clippy::unwrap_used)]

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

const CHECK: &str = r#"<script>
window.addEventListener('load', function () { setTimeout(function () {
  const W = document.documentElement.clientWidth;
  const out = [];
  if (document.documentElement.scrollWidth > W + 1) out.push('the page: ' + document.documentElement.scrollWidth + ' px wide in a ' + W + ' px window');
  for (const e of document.querySelectorAll('body *')) {
    if (e.offsetParent === null || e.closest('svg, .live-chart, pre')) continue;
    const style = getComputedStyle(e);
    if (style.overflowX !== 'auto' && style.overflowX !== 'scroll' && style.overflowX !== 'hidden') continue;
    if (e.scrollWidth > e.clientWidth + 1) {
      const what = e.tagName.toLowerCase() + (e.className ? '.' + String(e.className).split(' ').join('.') : '');
      const inside = e.querySelector('table, th') ? ' (' + (e.querySelector('th') || e).textContent.slice(0, 60) + ')' : '';
      out.push(what + inside + ': ' + e.scrollWidth + ' px of content in ' + e.clientWidth);
    }
  }
  const pre = document.createElement('pre');
  pre.id = 'clipped';
  pre.textContent = JSON.stringify(out);
  document.body.appendChild(pre);
}, 50); });
</script>"#;

/// What is clipped on `page` in a window `width` px wide; empty when it all fits.
pub fn clipped(page: &Path, width: u32, work: &Path) -> Vec<String> {
    let html = std::fs::read_to_string(page).unwrap();
    let copy = page.with_file_name(format!(
        "fits-{}",
        page.file_name().unwrap().to_string_lossy()
    ));
    std::fs::write(&copy, html.replace("</body>", &format!("{CHECK}</body>"))).unwrap();
    let profile = work.join(format!(
        "profile-fits-{}",
        page.file_stem().unwrap().to_string_lossy()
    ));
    std::fs::create_dir_all(&profile).unwrap();
    let stdout = profile.join("dom");
    let mut child = Command::new("chromium")
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-background-networking",
            "--disable-component-update",
            "--no-first-run",
            "--hide-scrollbars",
            "--dump-dom",
            "--virtual-time-budget=5000",
            "--host-resolver-rules=MAP * ~NOTFOUND",
        ])
        .arg(format!("--window-size={width},1600"))
        .arg(format!("--user-data-dir={}", profile.display()))
        .arg(format!("file://{}", copy.display()))
        .stdout(Stdio::from(std::fs::File::create(&stdout).unwrap()))
        .stderr(Stdio::null())
        .spawn()
        .expect("chromium is installed (the README's test command installs Debian's)");
    let deadline = Instant::now() + Duration::from_secs(90);
    while child.try_wait().unwrap().is_none() {
        if Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            panic!("chromium did not finish within 90 s on {}", page.display());
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    let dom = std::fs::read_to_string(&stdout).unwrap();
    let start = dom
        .find("<pre id=\"clipped\">")
        .unwrap_or_else(|| panic!("the check did not run on {}", page.display()));
    let rest = &dom[start + "<pre id=\"clipped\">".len()..];
    let text = rest[..rest.find("</pre>").unwrap()]
        .replace("&quot;", "\"")
        .replace("&lt;", "<")
        .replace("&gt;", ">")
        .replace("&amp;", "&");
    serde_json::from_str(&text).unwrap()
}

/// Fails, naming every page and what is clipped on it, unless each of `pages` fits a window
/// `width` px wide.
pub fn assert_fit(pages: &[std::path::PathBuf], width: u32, work: &Path) {
    let clipped: Vec<(String, Vec<String>)> = pages
        .iter()
        .map(|page| (page.display().to_string(), clipped(page, width, work)))
        .filter(|(_, clipped)| !clipped.is_empty())
        .collect();
    assert!(clipped.is_empty(), "clipped at {width} px: {clipped:#?}");
}
