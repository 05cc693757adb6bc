//! A target's source at a git commit (`ref = "origin/main"` on a target started by command),
//! checked out apart from the user's repository, so that a pull request's build and its base
//! branch's can be built and run side by side from one checkout.
//!
//! The repository holding the target's `cwd` is cloned with `git clone --shared --no-checkout`
//! into a temporary directory (its objects borrowed through the clone's alternates, nothing
//! copied) and the commit checked out there, detached. The user's repository is only read: no
//! worktree is recorded in it, its index, HEAD and files are not touched. Targets whose refs
//! name one commit of one repository share one checkout. The checkouts are removed with the
//! [`Checkouts`] (and by the next runner, when this one was killed outright).

use std::collections::BTreeMap;
use std::ffi::{OsStr, OsString};
use std::path::{Path, PathBuf};
use std::time::Duration;

/// How long one git command may take (a checkout of a large tree included).
const GIT_TIMEOUT: Duration = Duration::from_secs(300);

/// Why a `ref` cannot be checked out as written.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RefError {
    #[error("ref is empty: write a branch, tag or commit, e.g. ref = \"origin/main\"")]
    Empty,
    #[error("ref {0:?} is not a git revision: write a branch, tag or commit, e.g. ref = \"origin/main\"")]
    NotARevision(String),
}

/// Whether `reference` can be a ref to check out: a name git can read, not an option.
pub fn check_ref(reference: &str) -> Result<(), RefError> {
    if reference.trim().is_empty() {
        return Err(RefError::Empty);
    }
    if reference.starts_with('-')
        || reference
            .chars()
            .any(|c| c.is_whitespace() || c.is_control())
    {
        return Err(RefError::NotARevision(reference.to_string()));
    }
    Ok(())
}

/// Why the targets' sources could not be checked out.
#[derive(Debug, thiserror::Error)]
pub enum CheckoutError {
    #[error("cannot make a temporary directory for the checkouts: {0}")]
    TempDir(#[source] std::io::Error),
    #[error("target {target:?}: ref {reference:?}: {why}")]
    Target {
        target: String,
        reference: String,
        #[source]
        why: TargetCheckoutError,
    },
}

/// Why one target's `ref` could not be checked out; each says what to do.
#[derive(Debug, thiserror::Error)]
pub enum TargetCheckoutError {
    #[error("its cwd {} cannot be read ({source}): ref checks out the repository holding cwd, so cwd must exist here", .cwd.display())]
    Cwd {
        cwd: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("{} is not in a git repository ({source}): drop ref, or point cwd into a clone", .cwd.display())]
    NotInRepository {
        cwd: PathBuf,
        #[source]
        source: GitError,
    },
    #[error("{0}")]
    Top(#[source] std::io::Error),
    #[error("{} is not inside its repository's top {}", .cwd.display(), .top.display())]
    Outside { cwd: PathBuf, top: PathBuf },
    #[error("no such commit in {}: fetch it first (e.g. git fetch origin main), or fix ref", .top.display())]
    NoCommit { top: PathBuf },
    #[error("git clone --shared failed: {0}")]
    Clone(#[source] GitError),
    #[error("git checkout failed: {0}")]
    Checkout(#[source] GitError),
    #[error("commit {} has no directory {}: the target's cwd must be there at that commit", short(.commit), .inside.display())]
    NoDirectory { commit: String, inside: PathBuf },
}

/// A commit's first 12 hex digits.
fn short(commit: &str) -> &str {
    commit.get(..12).unwrap_or(commit)
}

/// Why one git command failed.
#[derive(Debug, thiserror::Error)]
pub enum GitError {
    #[error("git {command} took over {GIT_TIMEOUT:?}")]
    Timeout { command: String },
    #[error("cannot run git ({0}): install git")]
    Run(#[source] std::io::Error),
    /// The last line it wrote to its standard error.
    #[error("{0}")]
    Said(String),
    #[error("git exited with {0}")]
    Exited(std::process::ExitStatus),
}

/// A target's source at the commit its `ref` named.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Revision {
    /// The ref as the file wrote it (`origin/main`).
    pub reference: String,
    /// The commit it named when checked out (hex).
    pub commit: String,
    /// The target's `cwd` inside the checkout.
    pub cwd: PathBuf,
}

impl Revision {
    /// `origin/main at 1a2b3c4d5e6f`: what the runs and the gate say the target was.
    pub fn text(&self) -> String {
        let short = self.commit.get(..12).unwrap_or(&self.commit);
        if self.reference == self.commit || self.commit.starts_with(&self.reference) {
            format!("commit {short}")
        } else {
            format!("{} at {short}", self.reference)
        }
    }
}

/// The checkouts of an experiment's targets that have a `ref`, by target name.
#[derive(Debug, Default)]
pub struct Checkouts {
    by_target: BTreeMap<String, Revision>,
    /// The temporary directory they are in, removed on drop.
    dir: Option<tempfile::TempDir>,
    /// Removes that directory after a SIGKILL (the next runner's sweep).
    _custody: Option<custody::Group>,
}

/// One target to check out: its name, its `cwd` in the user's tree, its `ref`.
#[derive(Debug, Clone)]
pub struct Wanted<'a> {
    pub target: &'a str,
    pub cwd: PathBuf,
    pub reference: &'a str,
}

/// Where a wanted target's source is: its repository's top, `cwd` inside it, the commit.
struct Located {
    top: PathBuf,
    inside: PathBuf,
    commit: String,
}

/// The repository holding `w.cwd` and the commit `w.reference` names there; the error names
/// the target, the ref and what to do.
async fn locate(git: &Git<'_>, w: &Wanted<'_>) -> Result<Located, CheckoutError> {
    let fail = |why: TargetCheckoutError| CheckoutError::Target {
        target: w.target.to_string(),
        reference: w.reference.to_string(),
        why,
    };
    let cwd = w.cwd.canonicalize().map_err(|source| {
        fail(TargetCheckoutError::Cwd {
            cwd: w.cwd.clone(),
            source,
        })
    })?;
    let top = git
        .run(&cwd, &["rev-parse", "--show-toplevel"])
        .await
        .map_err(|source| {
            fail(TargetCheckoutError::NotInRepository {
                cwd: cwd.clone(),
                source,
            })
        })?;
    let top = PathBuf::from(top)
        .canonicalize()
        .map_err(|e| fail(TargetCheckoutError::Top(e)))?;
    let inside = cwd
        .strip_prefix(&top)
        .map_err(|_| {
            fail(TargetCheckoutError::Outside {
                cwd: cwd.clone(),
                top: top.clone(),
            })
        })?
        .to_path_buf();
    let commit = git
        .run(
            &top,
            &[
                "rev-parse",
                "--verify",
                "--quiet",
                &format!("{}^{{commit}}", w.reference),
            ],
        )
        .await
        .map_err(|_| fail(TargetCheckoutError::NoCommit { top: top.clone() }))?;
    Ok(Located {
        top,
        inside,
        commit,
    })
}

/// The commit each `wanted` target's `ref` names, without checking anything out (what `plan`
/// says, and fails on when a ref names nothing): (target, ref, commit).
pub async fn resolve(
    wanted: &[Wanted<'_>],
    env: &[(OsString, OsString)],
) -> Result<Vec<(String, String, String)>, CheckoutError> {
    let git = Git { env };
    let mut out = Vec::new();
    for w in wanted {
        let located = locate(&git, w).await?;
        out.push((
            w.target.to_string(),
            w.reference.to_string(),
            located.commit,
        ));
    }
    Ok(out)
}

impl Checkouts {
    /// Checks out every `wanted` target's source, with `env` the environment git runs in.
    /// The error names the target, the ref and what to do.
    pub async fn make(
        wanted: &[Wanted<'_>],
        env: &[(OsString, OsString)],
    ) -> Result<Checkouts, CheckoutError> {
        if wanted.is_empty() {
            return Ok(Checkouts::default());
        }
        let dir = tempfile::Builder::new()
            .prefix("showdown-checkouts-")
            .tempdir()
            .map_err(CheckoutError::TempDir)?;
        let mut custody = custody::Group::new("checkouts");
        custody.remove_with(dir.path().to_path_buf());
        let git = Git { env };
        // One checkout per (repository, commit).
        let mut made: BTreeMap<(PathBuf, String), PathBuf> = BTreeMap::new();
        let mut by_target = BTreeMap::new();
        for w in wanted {
            let revision = check_out(&git, dir.path(), &mut made, w).await?;
            by_target.insert(w.target.to_string(), revision);
        }
        Ok(Checkouts {
            by_target,
            dir: Some(dir),
            _custody: Some(custody),
        })
    }

    /// The revision `target` was checked out at, when it has a `ref`.
    pub fn revision(&self, target: &str) -> Option<&Revision> {
        self.by_target.get(target)
    }

    /// What each of `targets` was built from, in words, where it had a ref (a gate's
    /// `revisions`).
    pub fn texts<'t>(
        &self,
        targets: impl IntoIterator<Item = &'t str>,
    ) -> std::collections::BTreeMap<String, String> {
        targets
            .into_iter()
            .filter_map(|name| Some((name.to_string(), self.revision(name)?.text())))
            .collect()
    }

    /// Every target's revision, by name.
    pub fn revisions(&self) -> impl Iterator<Item = (&String, &Revision)> {
        self.by_target.iter()
    }

    /// Where the checkouts are, while they are.
    pub fn directory(&self) -> Option<&Path> {
        self.dir.as_ref().map(tempfile::TempDir::path)
    }
}

/// `w`'s source checked out in `dir` (a checkout of `made` when one of the same repository
/// and commit is there already), and the revision it is at; the error names the target, the
/// ref and what to do.
async fn check_out(
    git: &Git<'_>,
    dir: &Path,
    made: &mut BTreeMap<(PathBuf, String), PathBuf>,
    w: &Wanted<'_>,
) -> Result<Revision, CheckoutError> {
    let fail = |why: TargetCheckoutError| CheckoutError::Target {
        target: w.target.to_string(),
        reference: w.reference.to_string(),
        why,
    };
    let Located {
        top,
        inside,
        commit,
    } = locate(git, w).await?;
    let inside = inside.as_path();
    let checkout = checkout_of(git, dir, made, top, &commit)
        .await
        .map_err(fail)?;
    let cwd = checkout.join(inside);
    if !cwd.is_dir() {
        return Err(fail(TargetCheckoutError::NoDirectory {
            commit,
            inside: inside.to_path_buf(),
        }));
    }
    Ok(Revision {
        reference: w.reference.to_string(),
        commit,
        cwd,
    })
}

/// The checkout of the repository `top` at `commit`: the one in `made`, else a new shared
/// clone in `dir`, checked out at the commit and kept in `made`.
async fn checkout_of(
    git: &Git<'_>,
    dir: &Path,
    made: &mut BTreeMap<(PathBuf, String), PathBuf>,
    top: PathBuf,
    commit: &str,
) -> Result<PathBuf, TargetCheckoutError> {
    let key = (top, commit.to_string());
    if let Some(path) = made.get(&key) {
        return Ok(path.clone());
    }
    let path = dir.join(format!("{}", made.len() + 1));
    // The paths as they are (not as text): a directory's name need not be UTF-8.
    let clone = [
        OsStr::new("clone"),
        OsStr::new("--quiet"),
        OsStr::new("--shared"),
        OsStr::new("--no-checkout"),
        key.0.as_os_str(),
        path.as_os_str(),
    ];
    git.run(dir, clone)
        .await
        .map_err(TargetCheckoutError::Clone)?;
    git.run(
        &path,
        &[
            "-c",
            "advice.detachedHead=false",
            "checkout",
            "--quiet",
            "--detach",
            commit,
        ],
    )
    .await
    .map_err(TargetCheckoutError::Checkout)?;
    made.insert(key, path.clone());
    Ok(path)
}

/// git, run without a shell in a given environment, bounded in time.
struct Git<'e> {
    env: &'e [(OsString, OsString)],
}

impl Git<'_> {
    /// Its standard output, trimmed; else its standard error's last line.
    async fn run<A: AsRef<OsStr>>(
        &self,
        dir: &Path,
        args: impl IntoIterator<Item = A>,
    ) -> Result<String, GitError> {
        let args: Vec<OsString> = args.into_iter().map(|a| a.as_ref().to_owned()).collect();
        let mut command = tokio::process::Command::new("git");
        command
            .args(&args)
            .current_dir(dir)
            .env_clear()
            .envs(self.env.iter().map(|(k, v)| (k, v)))
            .env("GIT_TERMINAL_PROMPT", "0")
            .stdin(std::process::Stdio::null())
            .kill_on_drop(true);
        let output = tokio::time::timeout(GIT_TIMEOUT, command.output())
            .await
            .map_err(|_| {
                let words: Vec<_> = args.iter().map(|a| a.to_string_lossy()).collect();
                GitError::Timeout {
                    command: words.join(" "),
                }
            })?
            .map_err(GitError::Run)?;
        if output.status.success() {
            return Ok(String::from_utf8_lossy(&output.stdout).trim().to_string());
        }
        let stderr = String::from_utf8_lossy(&output.stderr);
        Err(stderr
            .lines()
            .rev()
            .find(|l| !l.trim().is_empty())
            .map_or(GitError::Exited(output.status), |l| {
                GitError::Said(l.trim().to_string())
            }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::process::Command;

    fn git(dir: &Path, args: &[&str]) -> String {
        let out = Command::new("git")
            .args([
                "-c",
                "user.name=t",
                "-c",
                "user.email=t@t",
                "-c",
                "init.defaultBranch=main",
            ])
            .args(args)
            .current_dir(dir)
            .output()
            .unwrap();
        assert!(out.status.success(), "git {args:?}: {out:?}");
        String::from_utf8(out.stdout).unwrap().trim().to_string()
    }

    fn env() -> Vec<(OsString, OsString)> {
        crate::environment::build(&crate::environment::Base::current(), &[], &[])
    }

    #[test]
    fn refs_that_are_options_or_blank_are_refused() {
        assert!(check_ref("origin/main").is_ok());
        assert!(check_ref("v1.2^{commit}").is_ok());
        for bad in ["", " ", "--upload-pack=x", "-c", "main branch", "a\nb"] {
            assert!(check_ref(bad).is_err(), "{bad:?}");
        }
    }

    #[tokio::test]
    async fn a_ref_is_checked_out_apart_and_the_users_repository_is_untouched() {
        let root = tempfile::tempdir().unwrap();
        let repo = root.path().join("repo");
        std::fs::create_dir_all(repo.join("server")).unwrap();
        git(&repo, &["init", "-q"]);
        std::fs::write(repo.join("server/version"), "old").unwrap();
        git(&repo, &["add", "."]);
        git(&repo, &["commit", "-qm", "old"]);
        let old = git(&repo, &["rev-parse", "HEAD"]);
        git(&repo, &["tag", "base"]);
        std::fs::write(repo.join("server/version"), "new").unwrap();
        git(&repo, &["commit", "-qam", "new"]);
        // Uncommitted work the user has: it must stay as it is.
        std::fs::write(repo.join("server/version"), "mine").unwrap();
        let before = (
            git(&repo, &["rev-parse", "HEAD"]),
            git(&repo, &["status", "--porcelain"]),
            git(&repo, &["worktree", "list", "--porcelain"]),
        );

        let server = repo.join("server");
        let wanted = [
            Wanted {
                target: "baseline",
                cwd: server.clone(),
                reference: "base",
            },
            Wanted {
                target: "control",
                cwd: server.clone(),
                reference: &old,
            },
        ];
        let checkouts = Checkouts::make(&wanted, &env()).await.unwrap();
        let base = checkouts.revision("baseline").unwrap();
        assert_eq!(base.commit, old);
        assert_eq!(
            std::fs::read_to_string(base.cwd.join("version")).unwrap(),
            "old"
        );
        assert_eq!(base.text(), format!("base at {}", &old[..12]));
        // One commit, one checkout.
        assert_eq!(checkouts.revision("control").unwrap().cwd, base.cwd);
        assert_eq!(
            checkouts.revision("control").unwrap().text(),
            format!("commit {}", &old[..12])
        );
        assert!(checkouts.revision("candidate").is_none());

        let after = (
            git(&repo, &["rev-parse", "HEAD"]),
            git(&repo, &["status", "--porcelain"]),
            git(&repo, &["worktree", "list", "--porcelain"]),
        );
        assert_eq!(before, after);
        assert_eq!(
            std::fs::read_to_string(repo.join("server/version")).unwrap(),
            "mine"
        );

        let dir = checkouts.directory().unwrap().to_path_buf();
        drop(checkouts);
        assert!(!dir.exists(), "the checkouts are removed with them");
    }

    #[tokio::test]
    async fn a_ref_that_names_nothing_says_which_and_what_to_do() {
        let root = tempfile::tempdir().unwrap();
        git(root.path(), &["init", "-q"]);
        git(root.path(), &["commit", "-q", "--allow-empty", "-m", "one"]);
        let wanted = [Wanted {
            target: "baseline",
            cwd: root.path().to_path_buf(),
            reference: "origin/nope",
        }];
        let err = Checkouts::make(&wanted, &env())
            .await
            .unwrap_err()
            .to_string();
        assert!(
            err.starts_with("target \"baseline\": ref \"origin/nope\": no such commit"),
            "{err}"
        );
        assert!(err.contains("git fetch"), "{err}");
        assert!(!err.contains('\n'));

        let plain = tempfile::tempdir().unwrap();
        let wanted = [Wanted {
            target: "baseline",
            cwd: plain.path().to_path_buf(),
            reference: "main",
        }];
        let err = Checkouts::make(&wanted, &env())
            .await
            .unwrap_err()
            .to_string();
        assert!(err.contains("is not in a git repository"), "{err}");
    }
}
