//! `[guns]`: the gun hosts an experiment fires each cell from, together.

use std::path::{Path, PathBuf};
use std::time::Duration;

use probe::cpus::CpuList;
use serde::{Deserialize, Serialize};

/// Where the lab keeps a gun's store URL (terraform/templates/gun.yaml.tftpl).
pub const LAB_STORE_ENV: &str = "/etc/showdown/store.env";

/// Where `scripts/twin.sh` keeps its state.
const TWIN_STATE: &str = "/run/showdown-twin";

/// The gun hosts, by SSH destination or from the lab that made them.
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct GunsSpec {
    /// SSH destinations: `user@host`, or a `Host` of the SSH config.
    #[serde(default)]
    pub ssh: Vec<String>,
    /// Or the guns of a lab: its Terraform outputs, or the twin's namespaces.
    pub from: Option<GunSource>,
    /// With `from = "terraform"`: the lab's configuration directory (default `terraform`,
    /// beside the experiment file's directory's parent or the current one).
    pub terraform_dir: Option<PathBuf>,
    /// `ssh -F`: an SSH config instead of the user's.
    pub ssh_config: Option<PathBuf>,
    /// The CPUs each gun's generator is held to (`taskset -c` on the gun).
    pub cpus: Option<CpuList>,
    /// Threads of each gun's generator (instead of the load's `threads`).
    pub threads: Option<u32>,
    /// `loadgen` on the guns; this machine's build is copied to them when theirs differs.
    pub loadgen: Option<String>,
    /// A file on each gun that sets `SHOWDOWN_DB` (the lab's: its guns reach the store by an
    /// address this machine does not); by default the guns get this runner's store URL.
    pub store_env_file: Option<String>,
    /// How far a gun's clock may be from this machine's: its shard's start is corrected by
    /// the offset, but an offset this large means a clock that is not kept.
    #[serde(
        default = "clock_tolerance",
        deserialize_with = "crate::file::duration"
    )]
    pub clock_tolerance: Duration,
}

/// How far a gun's clock may be from the runner's by default.
pub const CLOCK_TOLERANCE: Duration = Duration::from_millis(50);

fn clock_tolerance() -> Duration {
    CLOCK_TOLERANCE
}

/// Where a lab's guns are listed (the order's word for it).
pub use order::Lab as GunSource;

/// The guns found: who, and how SSH reaches them.
#[derive(Debug, Clone, PartialEq)]
pub struct Resolved {
    pub destinations: Vec<String>,
    pub ssh_config: Option<PathBuf>,
    pub store_env_file: Option<String>,
}

impl GunsSpec {
    /// What serde cannot check.
    pub fn check(&self) -> Result<(), String> {
        match (&self.from, self.ssh.is_empty()) {
            (Some(_), false) => {
                return Err("[guns]: give ssh = [\"user@host\", …] or from = \"terraform\" | \"twin\", not both".into())
            }
            (None, true) => {
                return Err("[guns]: name the guns: ssh = [\"user@host\", …], or from = \"terraform\" | \"twin\"".into())
            }
            _ => {}
        }
        for d in &self.ssh {
            check_destination(d)?;
        }
        if let Some(c) = &self.ssh_config {
            if !c.is_file() {
                return Err(format!(
                    "[guns] ssh_config {:?} is not a file: name your SSH config, or drop it for ~/.ssh/config",
                    c.display().to_string()
                ));
            }
        }
        if self.threads == Some(0) {
            return Err("[guns] threads must be at least 1".into());
        }
        if self.clock_tolerance.is_zero() {
            return Err("[guns] clock_tolerance must be above 0, e.g. \"50ms\"".into());
        }
        Ok(())
    }

    /// The guns, with their lab's outputs read (`dir`: the experiment file's directory).
    pub fn resolve(&self, dir: &Path) -> Result<Resolved, String> {
        let (destinations, config, store) = match self.from {
            None => (self.ssh.clone(), None, None),
            Some(GunSource::Twin) => {
                let state = std::env::var_os("TWIN_STATE_DIR")
                    .map(PathBuf::from)
                    .unwrap_or_else(|| PathBuf::from(TWIN_STATE));
                let list = std::fs::read_to_string(state.join("guns")).map_err(|e| {
                    format!(
                        "[guns] from = \"twin\": cannot read {}: {e} (scripts/twin.sh up --guns N first)",
                        state.join("guns").display()
                    )
                })?;
                let guns = list
                    .lines()
                    .map(str::trim)
                    .filter(|l| !l.is_empty())
                    .map(str::to_string)
                    .collect();
                // The twin's guns are namespaces of this machine: they read its state's
                // environment file (SHOWDOWN_DB=…) as a lab's guns read theirs.
                (
                    guns,
                    Some(state.join("ssh/config")),
                    Some(state.join("env").display().to_string()),
                )
            }
            Some(GunSource::Terraform) => {
                let tf = match &self.terraform_dir {
                    Some(d) if d.is_absolute() => d.clone(),
                    Some(d) => dir.join(d),
                    None => dir.join("../terraform"),
                };
                (terraform_guns(&tf)?, None, Some(LAB_STORE_ENV.to_string()))
            }
        };
        if destinations.is_empty() {
            return Err("[guns]: the lab has no guns".into());
        }
        for d in &destinations {
            check_destination(d)?;
        }
        Ok(Resolved {
            destinations,
            ssh_config: self.ssh_config.clone().or(config),
            store_env_file: self.store_env_file.clone().or(store),
        })
    }
}

/// Directives of an SSH config that would void the guns' hardening, which the command line's
/// options cannot override (a later `-o` does not remove a forward, and a known-hosts file of
/// the config's choosing makes `StrictHostKeyChecking=yes` check against its keys): refused in
/// a file's `ssh_config` whatever the flags.
const VOIDING: [&str; 12] = [
    "userknownhostsfile",
    "globalknownhostsfile",
    "knownhostscommand",
    "remoteforward",
    "localforward",
    "dynamicforward",
    "permitremoteopen",
    "tunnel",
    "localcommand",
    "include",
    "match",
    "proxyusefdpass",
];

/// Directives that run a command or reach a host besides the gun: taken only when the user
/// confirms them (`--trust-ssh-proxy`), as a lab behind a bastion needs.
const PROXIES: [&str; 2] = ["proxycommand", "proxyjump"];

/// Why a file's SSH config `text` (from `path`) cannot be used as it is: the first directive
/// that voids the hardening, or a proxy the user did not confirm; `None` when it can.
pub fn config_refusal(path: &Path, text: &str, proxies_confirmed: bool) -> Option<String> {
    for (n, line) in text.lines().enumerate() {
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let keyword = line
            .split(|c: char| c.is_whitespace() || c == '=')
            .next()
            .unwrap_or_default()
            .to_ascii_lowercase();
        let at = format!("{} line {}", path.display(), n + 1);
        if VOIDING.contains(&keyword.as_str()) {
            return Some(format!(
                "[guns] ssh_config: {at} sets {keyword}, which would void the guns' hardening (known hosts, forwards, local commands, other files): remove it from the config you give the guns"
            ));
        }
        if PROXIES.contains(&keyword.as_str()) && !proxies_confirmed {
            return Some(format!(
                "[guns] ssh_config: {at} sets {keyword}, which runs a command or reaches a host besides the guns: if it is your bastion, run again with --trust-ssh-proxy"
            ));
        }
    }
    None
}

/// A destination ssh takes as one host and nothing else: `user@host`, an address (`[::1]`
/// too), or a `Host` of the SSH config; not an option, and no character an SSH config's `%h`
/// or a shell could read as more than a name.
fn check_destination(d: &str) -> Result<(), String> {
    let allowed =
        |c: char| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '@' | ':' | '[' | ']' | '-');
    if d.is_empty() || d.starts_with('-') || !d.chars().all(allowed) {
        return Err(format!(
            "[guns] {d:?} is not an SSH destination: user@host, or a Host of your SSH config (letters, digits and . _ @ : [ ] -)"
        ));
    }
    Ok(())
}

/// The guns of the lab in `dir`: `terraform output -json ssh_guns` (`["ssh admin@IP", …]`).
fn terraform_guns(dir: &Path) -> Result<Vec<String>, String> {
    let out = std::process::Command::new("terraform")
        .arg(format!("-chdir={}", dir.display()))
        .args(["output", "-json", "ssh_guns"])
        .stdin(std::process::Stdio::null())
        .output()
        .map_err(|e| format!("[guns] from = \"terraform\": cannot run terraform: {e}"))?;
    if !out.status.success() {
        return Err(format!(
            "[guns] from = \"terraform\": terraform output in {} failed: {} (terraform apply the lab first, or set terraform_dir)",
            dir.display(),
            crate::flatten(&String::from_utf8_lossy(&out.stderr))
        ));
    }
    parse_ssh_guns(&out.stdout)
}

/// `["ssh admin@IP", …]` → `["admin@IP", …]`.
pub fn parse_ssh_guns(json: &[u8]) -> Result<Vec<String>, String> {
    let lines: Vec<String> = serde_json::from_slice(json).map_err(|e| {
        format!("[guns] from = \"terraform\": ssh_guns is not a list of strings: {e}")
    })?;
    Ok(lines
        .iter()
        .map(|l| l.trim().trim_start_matches("ssh ").trim().to_string())
        .collect())
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_config_that_voids_the_hardening_is_refused_and_a_proxy_needs_confirming() {
        use super::config_refusal;
        let path = std::path::Path::new("lab.ssh");
        let plain = "Host gun*\n  User admin\n  IdentityFile ~/.ssh/lab\n";
        assert_eq!(config_refusal(path, plain, false), None);
        for (bad, word) in [
            ("  UserKnownHostsFile /dev/null", "userknownhostsfile"),
            (
                "RemoteForward 9000 /run/user/0/ssh-agent.sock",
                "remoteforward",
            ),
            ("  localforward=5432 db:5432", "localforward"),
            ("Match exec \"touch /tmp/x\"", "match"),
            ("Include ~/.ssh/other", "include"),
        ] {
            let text = format!("{plain}{bad}\n");
            let said = config_refusal(path, &text, true).unwrap_or_default();
            assert!(said.contains(&format!("line 4 sets {word}")), "{said}");
        }
        let bastion = format!("{plain}  ProxyJump bastion\n");
        let said = config_refusal(path, &bastion, false).unwrap_or_default();
        assert!(said.contains("--trust-ssh-proxy"), "{said}");
        assert_eq!(config_refusal(path, &bastion, true), None);
    }

    use super::*;

    #[test]
    fn the_labs_outputs_name_its_guns() {
        let guns =
            parse_ssh_guns(br#"["ssh admin@203.0.113.5", "ssh admin@203.0.113.6"]"#).unwrap();
        assert_eq!(guns, ["admin@203.0.113.5", "admin@203.0.113.6"]);
        assert!(parse_ssh_guns(b"{}").is_err());
    }

    #[test]
    fn a_destination_is_one_word_and_no_option() {
        for good in [
            "admin@gun1",
            "10.0.1.5",
            "root@[fd00::2]",
            "sd-gun1",
            "gun_2.lab",
        ] {
            assert!(check_destination(good).is_ok(), "{good}");
        }
        for bad in [
            "-oProxyCommand=x",
            "a b",
            "",
            "a\nb",
            "gun;touch /tmp/x",
            "$(id)@gun",
            "gun%h",
            "`id`",
            "gun'1",
            "gun|x",
        ] {
            assert!(check_destination(bad).is_err(), "{bad:?}");
        }
    }
}
