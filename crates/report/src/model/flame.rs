//! A flame graph as data: its call paths in pre-order (a path's callees follow it, by name),
//! each a box as wide as its share of the root, with its colour and the text hovering it says,
//! decided once here. Three kinds are made: a run's profile ([`FlameData::of_folded`]), the
//! stacks of a second run against a first's ([`FlameData::between`]), and a gate's (or a
//! knee's) call paths drawn from their estimates ([`FlameData::of_estimates`]). The crate's
//! `flame` module draws every one of them as the same SVG, so that the three cannot disagree on
//! what a box is.

use std::collections::{BTreeMap, HashMap};

use analysis::ab::functions::{signed_us, CallTree, FunctionChange, Functions, FDR};
use serde::Serialize;

use super::number::{fixed, number};
use crate::profile::function_frames;

/// A path narrower than this share of its root is not drawn, nor its callees (a quarter of a
/// pixel of a 1200-pixel graph); the graph says how much of the root they hold together.
pub const NARROWEST: f64 = 0.0002;

/// What a flame graph draws, and all that its drawing reads.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct FlameData {
    /// The graph's heading.
    pub title: String,
    /// The lines under it: what a box is, what the colours say.
    pub lines: Vec<String>,
    /// Every frame's name once; a box names its frame by its index here.
    pub names: Vec<String>,
    /// The boxes in pre-order, the root first.
    pub boxes: Vec<FlameBox>,
    /// The share of the root in paths too narrow to draw ([`NARROWEST`]).
    pub hidden: f64,
}

/// One call path's box.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct FlameBox {
    /// Its function's name: an index into [`FlameData::names`].
    pub name: u32,
    /// Calls from the root (the root 0).
    pub depth: u32,
    /// Where it starts and how wide it is, as shares of the root: its callees lie within it.
    pub start: f64,
    pub width: f64,
    /// Its colour (CSS).
    pub fill: String,
    /// What hovering it says: its name on the first line.
    pub title: String,
    /// `changed` or `noise` where its change was tested against noise.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub class: Option<&'static str>,
    /// Its samples, on a graph of samples.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub n: Option<f64>,
    /// How its share of the samples changed, percentage points, on a differential of samples.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub delta: Option<f64>,
}

/// How a box of samples looks: what [`FlameData::walk`] asks of each.
struct Look {
    fill: String,
    title: String,
    delta: Option<f64>,
}

impl FlameData {
    /// As JSON inside a `<script type="application/json">` (`<`, `>` and `&` escaped), for the
    /// pages' script.
    pub fn json(&self) -> String {
        super::json::in_script(self)
    }

    /// The file beside a page that files the graph under `key` for the pages' script (a
    /// script, not JSON: a page opened from disk may not fetch a file).
    pub fn script(&self, key: &str) -> String {
        let key = serde_json::to_string(key).unwrap_or_default();
        format!(
            "(window.showdownFlames = window.showdownFlames || {{}})[{key}] = {};\n",
            self.json()
        )
    }

    /// The name of `b`.
    pub fn name(&self, b: &FlameBox) -> &str {
        self.names.get(b.name as usize).map_or("", String::as_str)
    }

    /// The deepest box's depth.
    pub fn depth(&self) -> u32 {
        self.boxes.iter().map(|b| b.depth).max().unwrap_or(0)
    }

    /// A run's flame graph: every stack of `folded` (`frame;frame;… samples`), the root
    /// "all", each box's share of the samples on its hover, coloured warm by its name.
    pub fn of_folded(title: &str, lines: Vec<String>, folded: &BTreeMap<String, u64>) -> Self {
        let mut root = Node::default();
        for (stack, n) in folded {
            root.add(stack.split(';'), *n as f64);
        }
        let total = root.n;
        let mut data = Self::new(title, lines);
        data.walk(&root, "all", total, |node, name| Look {
            fill: warm(name),
            title: format!(
                "{name} ({} samples, {} %)",
                number(node.n.round()),
                fixed(100.0 * node.n / total, 2)
            ),
            delta: None,
        });
        data
    }

    /// The second run's stacks (`after`), each path coloured by how its share of the samples
    /// (with what it called) changed from the first run's (`before`): red a larger share,
    /// blue a smaller one, deeper the larger the change beside the largest. The two are lined
    /// up by code path, without their process and thread frames (a cluster's workers run the
    /// same code as a single process), and addresses without a name read alike (`0x…`).
    pub fn between(
        title: &str,
        lines: Vec<String>,
        names: (&str, &str),
        before: &BTreeMap<String, u64>,
        after: &BTreeMap<String, u64>,
    ) -> Self {
        let (first, second) = (by_code_path(before), by_code_path(after));
        let (b_total, a_total) = (first.n, second.n);
        let mut root = second;
        root.before_from(&first, b_total);
        let largest = root.largest_change(a_total);
        let mut data = Self::new(title, lines);
        data.walk(&root, "all", a_total, |node, name| {
            let share = node.n / a_total;
            let change = share - node.before;
            let k = if largest > 0.0 {
                (200.0 * change.abs() / largest).round() as u8
            } else {
                0
            };
            let fill = if change > 0.0 {
                format!("rgb(255,{},{})", 255 - k, 255 - k)
            } else {
                format!("rgb({},{},255)", 255 - k, 255 - k)
            };
            let points = fixed(100.0 * change.abs(), 2);
            let title = format!(
                "{name} ({} samples, {} % in {}; {} % in {}: {}{points} points)",
                number(node.n.round()),
                fixed(100.0 * share, 2),
                names.1,
                fixed(100.0 * node.before, 2),
                names.0,
                // A change that rounds to nothing reads +0.00.
                if change < 0.0 && points != fixed(0.0, 2) {
                    "−"
                } else {
                    "+"
                },
            );
            Look {
                fill,
                title,
                delta: Some(100.0 * change),
            }
        });
        data
    }

    /// A gate's differential flame graph drawn from its call paths' estimates (`functions`,
    /// the candidate's against the baseline's; `names` the two, "main" and "pr", or "the
    /// passing steps" and "the failing steps"; `over` what the estimates are over, "8
    /// rounds"): each box a call path as wide as the candidate's CPU per request on it, red
    /// where it grew beyond noise, blue where it shrank beyond noise, grey where its change is
    /// within noise however its share moved. `None` without a call tree.
    pub fn of_estimates(functions: &Functions, names: (&str, &str), over: &str) -> Option<Self> {
        let tree = functions.tree.as_ref().filter(|t| !t.paths.is_empty())?;
        let root = &tree.paths[0].change;
        let largest = tree
            .named()
            .map(|p| p.change.difference_us.abs())
            .fold(0.0, f64::max);
        let lines = estimate_lines(tree, names, over);
        let mut data = Self::new(
            &format!(
                "Where the CPU per request changed: {} against {}",
                names.1, names.0
            ),
            lines,
        );
        // Shares of the root's µs (the root's own exactly 1).
        let share = |us: f64| {
            if root.candidate_us > 0.0 {
                us / root.candidate_us
            } else {
                0.0
            }
        };
        // Where each box's next callee starts: callees follow their caller in the list.
        let mut next: Vec<f64> = vec![0.0; tree.paths.len()];
        let mut depth: Vec<u32> = vec![0; tree.paths.len()];
        let mut seen = HashMap::new();
        for (i, p) in tree.paths.iter().enumerate() {
            let (start, d) = match p.parent.filter(|&q| q < i) {
                Some(parent) => {
                    let s = next[parent];
                    next[parent] += share(p.change.candidate_us);
                    (s, depth[parent] + 1)
                }
                None => (0.0, 0),
            };
            next[i] = start;
            depth[i] = d;
            let name = data.index(&mut seen, &p.change.name);
            data.boxes.push(FlameBox {
                name,
                depth: d,
                start,
                width: share(p.change.candidate_us),
                fill: estimate_fill(&p.change, largest),
                title: estimate_title(&p.change, names),
                class: Some(if p.change.named { "changed" } else { "noise" }),
                n: None,
                delta: None,
            });
        }
        Some(data)
    }

    fn new(title: &str, lines: Vec<String>) -> Self {
        Self {
            title: title.to_string(),
            lines,
            names: Vec::new(),
            boxes: Vec::new(),
            hidden: 0.0,
        }
    }

    /// `name`'s index in [`Self::names`], added when new (`seen`: the names added so far).
    fn index(&mut self, seen: &mut HashMap<String, u32>, name: &str) -> u32 {
        if let Some(&i) = seen.get(name) {
            return i;
        }
        self.names.push(name.to_string());
        let i = (self.names.len() - 1) as u32;
        seen.insert(name.to_string(), i);
        i
    }

    /// Adds `root`'s boxes of samples in pre-order, its callees by name side by side from its
    /// left edge, each as `look` says; a path under [`NARROWEST`] of `total` is left out with
    /// its callees, its room kept.
    fn walk(
        &mut self,
        root: &Node,
        root_name: &str,
        total: f64,
        look: impl Fn(&Node, &str) -> Look,
    ) {
        if total <= 0.0 {
            return;
        }
        let mut seen = HashMap::new();
        let mut stack: Vec<(&Node, &str, f64, u32)> = vec![(root, root_name, 0.0, 0)];
        while let Some((node, name, start, depth)) = stack.pop() {
            let width = node.n / total;
            if width < NARROWEST {
                self.hidden += width;
                continue;
            }
            let index = self.index(&mut seen, name);
            let Look { fill, title, delta } = look(node, name);
            self.boxes.push(FlameBox {
                name: index,
                depth,
                start,
                width,
                fill,
                title,
                class: None,
                n: Some(node.n),
                delta,
            });
            // Pushed last first, so that the first by name is drawn next.
            let mut x = start;
            let kids: Vec<(&String, &Node, f64)> = node
                .kids
                .iter()
                .map(|(k, kid)| {
                    let at = x;
                    x += kid.n / total;
                    (k, kid, at)
                })
                .collect();
            for (k, kid, at) in kids.into_iter().rev() {
                stack.push((kid, k.as_str(), at, depth + 1));
            }
        }
    }
}

/// A call tree of samples: each node's samples (with its callees'), and, on a differential,
/// its share of the first run's.
#[derive(Debug, Default)]
struct Node {
    n: f64,
    before: f64,
    kids: BTreeMap<String, Node>,
}

impl Node {
    fn add<'a>(&mut self, mut frames: impl Iterator<Item = &'a str>, n: f64) {
        self.n += n;
        if let Some(frame) = frames.next() {
            self.kids
                .entry(frame.to_string())
                .or_default()
                .add(frames, n);
        }
    }

    /// Each node's share of `first`'s samples on the same path (`total`: all of them).
    fn before_from(&mut self, first: &Node, total: f64) {
        self.before = if total > 0.0 { first.n / total } else { 0.0 };
        for (name, kid) in &mut self.kids {
            match first.kids.get(name) {
                Some(f) => kid.before_from(f, total),
                None => kid.before_from(&Node::default(), total),
            }
        }
    }

    /// The largest change of share on any path (`total`: the second run's samples).
    fn largest_change(&self, total: f64) -> f64 {
        let own = if total > 0.0 {
            (self.n / total - self.before).abs()
        } else {
            0.0
        };
        self.kids
            .values()
            .map(|k| k.largest_change(total))
            .fold(own, f64::max)
    }
}

/// The functions' stacks without the process and thread frames, their addresses without a
/// name written alike (`0x…`), as a call tree.
fn by_code_path(folded: &BTreeMap<String, u64>) -> Node {
    let mut root = Node::default();
    for (stack, n) in folded {
        let frames = function_frames(stack);
        if !frames.is_empty() {
            root.add(frames.into_iter().map(strip_hex), *n as f64);
        }
    }
    root
}

/// An address without a name (`0x55d0c3a1`) as `0x…`: two runs load code at different
/// addresses.
fn strip_hex(frame: &str) -> &str {
    let hex = frame
        .strip_prefix("0x")
        .is_some_and(|h| !h.is_empty() && h.chars().all(|c| c.is_ascii_hexdigit()));
    if hex {
        "0x…"
    } else {
        frame
    }
}

/// A warm colour from a function's name, as flame graphs have it: the same function, the same
/// colour, on every graph of the site and in the pages' script's (`warm`, its twin).
pub fn warm(name: &str) -> String {
    let h = name
        .encode_utf16()
        .fold(0u32, |h, c| h.wrapping_mul(31).wrapping_add(u32::from(c)));
    format!("hsl({},85%,{}%)", h % 50, 55 + (h >> 8) % 15)
}

/// "12.3 µs", without a sign.
fn plain_us(v: f64) -> String {
    signed_us(v).trim_start_matches(['+', '−']).to_string()
}

/// The lines above a gate's graph: what a box is, the colours, how many paths were named.
fn estimate_lines(tree: &CallTree, names: (&str, &str), over: &str) -> Vec<String> {
    let total = tree.paths.first().map_or(0.0, |p| p.change.candidate_us);
    let named = tree.named().count();
    vec![
        format!(
            "Each box a call path, as wide as the CPU per request on it in {} ({} in all).",
            names.1,
            plain_us(total),
        ),
        format!(
            "Red: more than in {}, blue: less, beyond noise; grey: within noise.",
            names.0
        ),
        format!(
            "{named} of {} call paths named as changed ({:.0} % false discovery rate, {over}); hover a box for the µs a request of both and its interval.",
            tree.tested,
            FDR * 100.0,
        ),
        match &tree.hidden_largest {
            Some(h) => format!(
                "{} more changed beyond noise but are too narrow in {} to draw; the largest: {} {}.",
                tree.hidden_named,
                names.1,
                h.name,
                h.figure()
            ),
            None => String::new(),
        },
    ]
}

/// An estimated box's fill: grey within noise; red (grew) or blue (shrank) beyond it, deeper
/// the larger its change beside the largest named change (`largest`).
fn estimate_fill(c: &FunctionChange, largest: f64) -> String {
    if !c.named {
        return "rgb(221,221,221)".into();
    }
    let t = if largest > 0.0 {
        (c.difference_us.abs() / largest).clamp(0.0, 1.0)
    } else {
        1.0
    };
    let pale = (215.0 - 175.0 * t).round() as u8;
    if c.difference_us > 0.0 {
        format!("rgb(255,{pale},{pale})")
    } else {
        format!("rgb({pale},{pale},255)")
    }
}

/// What hovering an estimated box says.
fn estimate_title(c: &FunctionChange, names: (&str, &str)) -> String {
    let verdict = if c.named {
        format!("beyond noise ({:.1} % interval)", c.level * 100.0)
    } else {
        "within noise (95 % interval)".to_string()
    };
    format!(
        "{}\n{}: {} a request, {}: {} (it and what it called on this path)\nchange {} ({} to {}): {verdict}",
        c.name,
        names.0,
        plain_us(c.baseline_us),
        names.1,
        plain_us(c.candidate_us),
        signed_us(c.difference_us),
        signed_us(c.low_us),
        signed_us(c.high_us),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn folded(stacks: &[(&str, u64)]) -> BTreeMap<String, u64> {
        stacks.iter().map(|(s, n)| (s.to_string(), *n)).collect()
    }

    /// Each box's (name, start, width, depth).
    fn boxes(d: &FlameData) -> Vec<(String, f64, f64, u32)> {
        d.boxes
            .iter()
            .map(|b| (d.name(b).to_string(), b.start, b.width, b.depth))
            .collect()
    }

    #[test]
    fn a_profiles_boxes_are_in_pre_order_by_name_each_as_wide_as_its_share() {
        let d = FlameData::of_folded(
            "t",
            vec![],
            &folded(&[
                ("srv;main;main;handle;parse", 30),
                ("srv;main;main;handle;hash", 60),
                ("srv;main;main;handle", 10),
                ("srv;main;main;gc", 100),
            ]),
        );
        let b = boxes(&d);
        let names: Vec<&str> = b.iter().map(|x| x.0.as_str()).collect();
        assert_eq!(
            names,
            ["all", "srv", "main", "main", "gc", "handle", "hash", "parse"]
        );
        let at = |i: usize| (b[i].1, b[i].2, b[i].3);
        assert_eq!(at(0), (0.0, 1.0, 0));
        assert_eq!(at(4), (0.0, 0.5, 4), "gc first by name");
        assert_eq!(at(5), (0.5, 0.5, 4), "handle after it");
        assert_eq!(at(6), (0.5, 0.3, 5), "hash from handle's left edge");
        assert!((at(7).0 - 0.8).abs() < 1e-12 && (at(7).1 - 0.15).abs() < 1e-12);
        assert_eq!(d.names.len(), 7, "main named once");
        assert_eq!(d.boxes[6].title, "hash (60 samples, 30.00 %)");
        assert_eq!(d.boxes[6].fill, warm("hash"));
        assert_eq!(d.hidden, 0.0);
    }

    #[test]
    fn a_path_too_narrow_to_draw_is_counted_not_drawn_and_its_room_kept() {
        let d = FlameData::of_folded(
            "t",
            vec![],
            &folded(&[("p;t;a_rare;deeper", 1), ("p;t;b_common", 9_999)]),
        );
        let b = boxes(&d);
        assert!(b.iter().all(|x| x.0 != "a_rare" && x.0 != "deeper"));
        let common = b.iter().find(|x| x.0 == "b_common").unwrap();
        assert!((common.1 - 0.0001).abs() < 1e-12, "{common:?}");
        assert!((d.hidden - 0.0001).abs() < 1e-12);
    }

    #[test]
    fn a_differential_lines_up_code_paths_and_colours_each_by_its_change_of_share() {
        let run = folded(&[
            ("srv;main;main;handle;hash", 70),
            ("srv;main;main;handle", 30),
            ("srv;main;main;0x55d0c3a1", 100),
        ]);
        // The same code in a cluster's worker, loaded elsewhere: lined up with the main
        // process's.
        let cluster = folded(&[
            ("srv (child);w;main;handle;hash", 20),
            ("srv (child);w;main;handle", 80),
            ("srv (child);w;main;0x7f00aa10", 100),
        ]);
        let d = FlameData::between("d", vec![], ("first", "second"), &run, &cluster);
        assert!(d.names.iter().all(|n| !n.contains("srv")), "{:?}", d.names);
        let title = |name: &str| {
            d.boxes
                .iter()
                .find(|b| d.name(b) == name)
                .map(|b| (b.title.clone(), b.fill.clone()))
                .unwrap()
        };
        // hash's share fell from 35 % to 10 %: the largest change, the deepest blue.
        assert_eq!(
            title("hash"),
            (
                "hash (20 samples, 10.00 % in second; 35.00 % in first: −25.00 points)".into(),
                "rgb(55,55,255)".into()
            )
        );
        // handle (with hash) kept its half; the unnamed code lines up as 0x….
        assert!(title("handle").0.ends_with("+0.00 points)"));
        assert!(title("0x…").0.contains("50.00 % in first"));
        assert_eq!(title("all").1, "rgb(255,255,255)");
    }

    #[test]
    fn the_warm_colour_is_the_scripts() {
        // showdown.js's warm (h * 31 + each UTF-16 code unit, as unsigned 32 bits), run by
        // node on the same names.
        assert_eq!(warm("hash"), "hsl(0,85%,56%)");
        // h above 2^31: the script shifts it unsigned too.
        assert_eq!(warm("handle"), "hsl(0,85%,65%)");
        assert_eq!(warm("uv__io_poll"), "hsl(41,85%,66%)");
        assert_eq!(warm(""), "hsl(0,85%,55%)");
        assert_eq!(warm("é→𝄞x"), "hsl(31,85%,67%)");
    }
}
