//! The programs an experiment file needs on this host, found before anything starts: what
//! `experiment plan` lists, and fails on when one is missing, so that a missing `go` or
//! `initdb` is found before a sitting rather than in it. (`experiment run` still measures the
//! targets that can start, and fails the others' verification naming the program.)

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use crate::file::{Experiment, TargetKind};

/// One program the file needs, and where it was found.
#[derive(Debug, Clone, PartialEq)]
pub struct Needed {
    /// As the file (or the runner) names it: `go`, `./gate-server`, `initdb`.
    pub program: String,
    /// What for: "server's build", "the throwaway PostgreSQL".
    pub why: String,
    /// Where it is; `None` when it is not there.
    pub found: Option<PathBuf>,
    /// Where it was looked for, said when it is missing: "on PATH", "in DIR".
    pub looked: String,
}

/// What the targets in `names` (the plan's) need, in the file's order, each program once per
/// use.
pub fn needed(experiment: &Experiment, names: &BTreeSet<String>) -> Vec<Needed> {
    let file = &experiment.file;
    let mut out = Vec::new();
    let targets: Vec<_> = file
        .targets
        .iter()
        .filter(|t| names.contains(&t.name))
        .collect();
    let mut builtin = false;
    let mut own = false;
    for t in &targets {
        let cwd = crate::runner::user_cwd(experiment, t);
        match t.kind() {
            TargetKind::Remote => {}
            TargetKind::Builtin => {
                builtin = true;
                let stack = t.run.as_deref().unwrap_or(&t.name);
                out.extend(builtin_tools(stack, &t.name));
            }
            TargetKind::Command => {
                own = true;
                if t.git_ref.is_some() {
                    out.push(on_path("git", format!("{}'s checkout", t.name)));
                }
                // In a checkout the tree is made later: only names on PATH can be found now.
                let later = t.git_ref.is_some();
                if let Some(program) = t.build.as_ref().and_then(|b| b.first()) {
                    out.extend(program_of(
                        program,
                        &cwd,
                        later,
                        format!("{}'s build", t.name),
                    ));
                }
                // `{loadgen}` is the runner itself: there is nothing to find.
                if let Some(program) = t
                    .command
                    .as_ref()
                    .and_then(|c| c.first())
                    .filter(|p| *p != crate::file::LOADGEN_PLACEHOLDER)
                {
                    // A path the build makes is not there before it.
                    let later = later || t.build.is_some();
                    out.extend(program_of(program, &cwd, later, t.name.clone()));
                }
            }
        }
    }
    let database = file.database();
    let throwaway = database.url.is_none() && database.url_env.is_none();
    if throwaway && (builtin || (file.database.is_some() && own)) {
        for program in ["initdb", "pg_ctl"] {
            out.push(Needed {
                program: program.into(),
                why: "the throwaway PostgreSQL".into(),
                found: pgcluster::tools::find(program).ok(),
                looked: "on PATH or in /usr/lib/postgresql/*/bin".into(),
            });
        }
    }
    match file.guns.as_ref().map(|g| &g.kubernetes) {
        Some(None) => out.push(on_path("ssh", "the guns".into())),
        Some(Some(k)) if k.apply => {
            out.push(on_path("kubectl", "the guns' Job (apply = true)".into()))
        }
        _ => {}
    }
    out
}

/// The missing ones, as one line naming each program once, with what for and the fix; `None`
/// when all are there.
pub fn missing(needed: &[Needed]) -> Option<String> {
    let mut by: Vec<(&str, Vec<&str>, &str)> = Vec::new();
    for n in needed.iter().filter(|n| n.found.is_none()) {
        match by.iter_mut().find(|(p, ..)| *p == n.program) {
            Some((_, whys, _)) => whys.push(&n.why),
            None => by.push((&n.program, vec![&n.why], &n.looked)),
        }
    }
    let them = if by.len() == 1 { "it" } else { "them" };
    (!by.is_empty()).then(|| {
        let each: Vec<String> = by
            .iter()
            .map(|(program, whys, looked)| {
                format!("{program} (for {}; not found {looked})", whys.join(", "))
            })
            .collect();
        format!(
            "this host lacks {}: install {them}, or put {them} on PATH",
            each.join(", ")
        )
    })
}

/// What `targets/run STACK` runs: the stack's toolchain, unless its build is already there
/// (targets/run then runs the build as it is).
fn builtin_tools(stack: &str, name: &str) -> Vec<Needed> {
    let dir = crate::targets::directory().ok();
    let built = |path: &str| dir.as_ref().is_some_and(|d| d.join(path).exists());
    let why = format!("{name} (targets/run {stack})");
    match stack {
        "node" | "node-cluster" => {
            let mut out = vec![on_path("node", why.clone())];
            if !built("node/node_modules") {
                out.push(on_path("npm", format!("{why}: its build")));
            }
            out
        }
        "go" | "go-goroutine" if !built("go/showdown-target-go") => {
            vec![on_path("go", format!("{why}: its build"))]
        }
        "rust" => vec![on_path("cargo", format!("{why}: its build"))],
        _ => Vec::new(),
    }
}

/// `program` as a command line's first word: a name on PATH, or a path in `cwd` (unless it is
/// made `later`, by a build or a checkout).
fn program_of(program: &str, cwd: &Path, later: bool, why: String) -> Option<Needed> {
    if !program.contains('/') {
        return Some(on_path(program, why));
    }
    if later {
        return None;
    }
    let path = cwd.join(program);
    Some(Needed {
        program: program.into(),
        why,
        found: crate::targets::runnable(&path).then_some(path),
        looked: format!("in {}", cwd.display()),
    })
}

fn on_path(program: &str, why: String) -> Needed {
    let found = std::env::var_os("PATH").and_then(|path| crate::targets::on_path(program, &path));
    Needed {
        program: program.into(),
        why,
        found,
        looked: "on PATH".into(),
    }
}
