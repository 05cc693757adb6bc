//! Who the SSH guns are: destinations as given, or the guns of a lab (Terraform's outputs, the
//! twin's namespaces), each checked to be one host and nothing else; and an SSH config that
//! would void the guns' hardening, refused.

use std::path::{Path, PathBuf};

use super::SshError;

/// Where the lab keeps a gun's store URL (terraform/templates/gun.yaml.tftpl).
pub const LAB_STORE_ENV: &str = "/etc/showdown/store.env";

/// Where `scripts/twin.sh` keeps its state, unless told otherwise ([`Lab::twin_state`]).
const TWIN_STATE: &str = "/run/showdown-twin";

/// The SSH guns as an order names them (`order::GunHosts::Ssh`).
#[derive(Debug, Clone, Copy)]
pub struct Lab<'a> {
    /// SSH destinations: `user@host`, or a `Host` of the SSH config.
    pub destinations: &'a [String],
    /// `ssh -F`: an SSH config instead of the user's.
    pub config: Option<&'a Path>,
    /// Or the guns of a lab: its Terraform outputs, or the twin's namespaces.
    pub from: Option<order::Lab>,
    /// With `from = "terraform"`: the lab's configuration directory (default `../terraform`
    /// from the directory the guns are resolved in).
    pub terraform_dir: Option<&'a Path>,
    /// With `from = "twin"`: where `scripts/twin.sh` keeps its state, when not in its default
    /// place (`TWIN_STATE_DIR`, read by the caller).
    pub twin_state: Option<&'a Path>,
}

/// The guns found: who, and how SSH reaches them.
#[derive(Debug, Clone, PartialEq)]
pub struct Resolved {
    pub destinations: Vec<String>,
    pub config: Option<PathBuf>,
    /// The lab's file on each gun that sets the store's URL.
    pub store_env_file: Option<String>,
}

/// What serde cannot check of the guns' names.
pub fn check(lab: &Lab<'_>) -> Result<(), SshError> {
    match (&lab.from, lab.destinations.is_empty()) {
        (Some(_), false) => return Err(SshError::Both),
        (None, true) => return Err(SshError::Neither),
        _ => {}
    }
    for d in lab.destinations {
        check_destination(d)?;
    }
    if let Some(c) = lab.config {
        if !c.is_file() {
            return Err(SshError::ConfigNotAFile(c.to_path_buf()));
        }
    }
    Ok(())
}

/// The guns, with their lab's outputs read (`dir`: the experiment file's directory).
pub fn resolve(lab: &Lab<'_>, dir: &Path) -> Result<Resolved, SshError> {
    let (destinations, config, store) = match lab.from {
        None => (lab.destinations.to_vec(), None, None),
        Some(order::Lab::Twin) => {
            let state = lab
                .twin_state
                .map_or_else(|| PathBuf::from(TWIN_STATE), Path::to_path_buf);
            let list =
                std::fs::read_to_string(state.join("guns")).map_err(|error| SshError::Twin {
                    path: state.join("guns"),
                    error,
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
        Some(order::Lab::Terraform) => {
            let tf = match lab.terraform_dir {
                Some(d) if d.is_absolute() => d.to_path_buf(),
                Some(d) => dir.join(d),
                None => dir.join("../terraform"),
            };
            (terraform_guns(&tf)?, None, Some(LAB_STORE_ENV.to_string()))
        }
    };
    if destinations.is_empty() {
        return Err(SshError::NoGuns);
    }
    for d in &destinations {
        check_destination(d)?;
    }
    Ok(Resolved {
        destinations,
        config: lab.config.map(Path::to_path_buf).or(config),
        store_env_file: store,
    })
}

/// The directives a file's SSH config may set: who the guns are and how to sign in to them,
/// and how the connection behaves. Anything else is refused, whatever the flags: a known-hosts
/// file or command of the config's choosing (which `StrictHostKeyChecking=yes` would then check
/// against), a forward, a tunnel, a local command, another file (`Include`), a condition that
/// runs a command (`Match exec`), a library ssh loads (`PKCS11Provider`,
/// `SecurityKeyProvider`), variables sent to the guns (`SendEnv`, `SetEnv`), a remote command:
/// an allowlist, since ssh learns new directives and a denylist would not.
const ALLOWED: [&str; 39] = [
    "host",
    "hostname",
    "user",
    "port",
    "identityfile",
    "identitiesonly",
    "certificatefile",
    "identityagent",
    "addkeystoagent",
    "addressfamily",
    "bindaddress",
    "bindinterface",
    "connecttimeout",
    "connectionattempts",
    "serveraliveinterval",
    "serveralivecountmax",
    "tcpkeepalive",
    "compression",
    "ciphers",
    "macs",
    "kexalgorithms",
    "hostkeyalgorithms",
    "pubkeyacceptedalgorithms",
    "pubkeyacceptedkeytypes",
    "casignaturealgorithms",
    "preferredauthentications",
    "pubkeyauthentication",
    "passwordauthentication",
    "kbdinteractiveauthentication",
    "batchmode",
    "loglevel",
    "stricthostkeychecking",
    "checkhostip",
    "hashknownhosts",
    "forwardagent",
    "forwardx11",
    "ipqos",
    "rekeylimit",
    "requesttty",
];

/// Directives that run a command or reach a host besides the gun: taken only when the user
/// confirms them (`--trust-ssh-proxy`), as a lab behind a bastion needs.
const PROXIES: [&str; 2] = ["proxycommand", "proxyjump"];

/// The most of an SSH config that is read: a config is a few lines, and one that is larger is
/// refused rather than read in part (ssh would read the rest).
pub const MAX_CONFIG: u64 = 1 << 20;

/// A file's SSH config, read whole to be checked: refused above [`MAX_CONFIG`].
pub fn read_config(path: &Path) -> Result<String, SshError> {
    use std::io::Read;
    let mut bytes = Vec::new();
    std::fs::File::open(path)
        .and_then(|f| f.take(MAX_CONFIG + 1).read_to_end(&mut bytes))
        .map_err(|error| SshError::ConfigRead {
            path: path.to_path_buf(),
            error,
        })?;
    if bytes.len() as u64 > MAX_CONFIG {
        return Err(SshError::ConfigTooLarge(path.to_path_buf()));
    }
    String::from_utf8(bytes).map_err(|_| SshError::ConfigNotText(path.to_path_buf()))
}

/// Why a file's SSH config `text` (from `path`) cannot be used as it is: the first directive
/// that is not one of [`ALLOWED`], a proxy the user did not confirm, or a keyword ssh would
/// read otherwise than it is written (ssh drops quotes inside a keyword: `"Match"` and
/// `P"roxyCommand"` are Match and ProxyCommand to it).
pub fn config_refusal(path: &Path, text: &str, proxies_confirmed: bool) -> Result<(), SshError> {
    for (n, line) in text.lines().enumerate() {
        let line = line.trim_matches(|c: char| c == ' ' || c == '\t' || c == '\r');
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        // ssh's keyword: up to the first space, tab or `=` (its `strdelim`).
        let keyword = line.split([' ', '\t', '=']).next().unwrap_or_default();
        let at = format!("{} line {}", path.display(), n + 1);
        if keyword.is_empty() || !keyword.chars().all(|c| c.is_ascii_alphanumeric()) {
            return Err(SshError::Unplain { at });
        }
        let keyword = keyword.to_ascii_lowercase();
        if PROXIES.contains(&keyword.as_str()) {
            if !proxies_confirmed {
                return Err(SshError::Proxy { at, keyword });
            }
            continue;
        }
        if !ALLOWED.contains(&keyword.as_str()) {
            return Err(SshError::Voiding { at, keyword });
        }
    }
    Ok(())
}

/// The proxies a file's SSH config sets, as lines to show (`plan`).
pub fn config_proxies(text: &str) -> Vec<String> {
    text.lines()
        .map(str::trim)
        .filter(|line| {
            let keyword = line.split([' ', '\t', '=']).next().unwrap_or_default();
            PROXIES.contains(&keyword.to_ascii_lowercase().as_str())
        })
        .map(str::to_string)
        .collect()
}

/// A destination ssh takes as one host and nothing else: `user@host`, an address (`[::1]`
/// too), or a `Host` of the SSH config; not an option, and no character an SSH config's `%h`
/// or a shell could read as more than a name.
fn check_destination(d: &str) -> Result<(), SshError> {
    let allowed =
        |c: char| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '@' | ':' | '[' | ']' | '-');
    if d.is_empty() || d.starts_with('-') || !d.chars().all(allowed) {
        return Err(SshError::Destination(d.to_string()));
    }
    Ok(())
}

/// The guns of the lab in `dir`: `terraform output -json ssh_guns` (`["ssh admin@IP", …]`).
fn terraform_guns(dir: &Path) -> Result<Vec<String>, SshError> {
    let out = std::process::Command::new("terraform")
        .arg(format!("-chdir={}", dir.display()))
        .args(["output", "-json", "ssh_guns"])
        .stdin(std::process::Stdio::null())
        .output()
        .map_err(SshError::Terraform)?;
    if !out.status.success() {
        return Err(SshError::TerraformFailed {
            dir: dir.to_path_buf(),
            // Several lines made one: an error here is one line.
            said: String::from_utf8_lossy(&out.stderr)
                .split_whitespace()
                .collect::<Vec<_>>()
                .join(" "),
        });
    }
    parse_ssh_guns(&out.stdout)
}

/// `["ssh admin@IP", …]` → `["admin@IP", …]`.
pub fn parse_ssh_guns(json: &[u8]) -> Result<Vec<String>, SshError> {
    let lines: Vec<String> = serde_json::from_slice(json).map_err(SshError::SshGuns)?;
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
        let said = |r: Result<(), super::SshError>| r.err().map(|e| e.to_string());
        assert_eq!(said(config_refusal(path, plain, false)), None);
        for (bad, word) in [
            ("  UserKnownHostsFile /dev/null", "userknownhostsfile"),
            (
                "RemoteForward 9000 /run/user/0/ssh-agent.sock",
                "remoteforward",
            ),
            ("  localforward=5432 db:5432", "localforward"),
            ("Match exec \"touch /tmp/x\"", "match"),
            ("Include ~/.ssh/other", "include"),
            ("PKCS11Provider /tmp/x.so", "pkcs11provider"),
            ("SecurityKeyProvider /tmp/x.so", "securitykeyprovider"),
            ("SendEnv SHOWDOWN_DB", "sendenv"),
            ("KnownHostsCommand /bin/cat /tmp/keys", "knownhostscommand"),
        ] {
            let text = format!("{plain}{bad}\n");
            let said = said(config_refusal(path, &text, true)).unwrap_or_default();
            assert!(said.contains(&format!("line 4 sets {word}")), "{said}");
        }
        // ssh unquotes a keyword: a quote in one is refused, whatever the flags.
        for bad in [
            "\"Match\" exec \"touch /tmp/x\"",
            "P\"roxyCommand\" touch /tmp/x",
            "\"RemoteForward\" 9000 /run/agent.sock",
            "Ho\u{301}st x",
        ] {
            let text = format!("{plain}{bad}\n");
            let said = said(config_refusal(path, &text, true)).unwrap_or_default();
            assert!(
                said.contains("line 4") && said.contains("plain"),
                "{bad}: {said}"
            );
        }
        let bastion = format!("{plain}  ProxyJump bastion\n");
        let refused = said(config_refusal(path, &bastion, false)).unwrap_or_default();
        assert!(refused.contains("--trust-ssh-proxy"), "{refused}");
        assert_eq!(said(config_refusal(path, &bastion, true)), None);
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
