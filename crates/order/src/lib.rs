//! What a generator is told to do, and what it came to: Showdown's order, version 1.
//!
//! The experiment runner, a gun host and `loadgen` speak in these types, never in `loadgen`'s
//! flags: the runner builds an [`Order`] from a cell of the experiment file, a gun receives it
//! over SSH in an [`Envelope`], `loadgen order` reads it on its standard input and answers with
//! one [`Outcome`] on its standard output. `loadgen attack` and `loadgen capacity` turn their
//! flags into the same `Order` (in `loadgen::cli`), so every generator runs from one value,
//! whoever asked for it.
//!
//! # Wire
//!
//! One JSON object on one line each way, at most [`MAX_LINE`] bytes. Durations are integer
//! nanoseconds (`*_ns`), enums are tagged objects with `snake_case` names. An order carries
//! its `version`, which must equal the reader's [`VERSION`]; unknown fields are refused (a
//! field ignored would change the load without a word). An [`Outcome`] is read tolerantly:
//! later versions may add fields.
//!
//! # Secrets
//!
//! An order holds everything a run needs, secrets included (the store's URL, the headers, the
//! requests' URLs and bodies, the probes' token), so it travels only on a standard input or
//! over SSH, never on a command line or in an environment. Each such value is a [`Secret`],
//! whose `Debug` shows nothing: an order can be logged without leaking one.

use std::collections::BTreeMap;
use std::io::BufRead;

use serde::{Deserialize, Serialize};

pub use analysis::capacity::Term;
pub use store::vocabulary::ArrivalProcess;

/// The version of the order this build speaks.
pub const VERSION: u32 = 1;

/// The most an order (or an outcome) may weigh: its requests and bodies included.
pub const MAX_LINE: u64 = 64 << 20;

/// One generator's work, with everything it needs to do it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Order {
    /// [`VERSION`] when written.
    pub version: u32,
    pub work: Work,
    pub requests: Requests,
    pub pacing: Pacing,
    pub keeping: Keeping,
    /// The probes that watch the servers during the run.
    #[serde(default)]
    pub probes: Option<Probes>,
    /// This generator's part of a run group sent from several.
    #[serde(default)]
    pub shard: Option<Shard>,
}

/// An attack, or a search for the capacity.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case", deny_unknown_fields)]
pub enum Work {
    Attack(Attack),
    Search(Box<Search>),
}

/// A load, recorded in intervals.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Attack {
    pub load: Load,
    /// The length of one interval of the per-interval figures.
    pub interval_ns: u64,
    /// After a stop, how long requests in flight may finish.
    pub grace_ns: u64,
    /// Stop when an interval's p99 send lateness exceeds this.
    #[serde(default)]
    pub max_lateness_ns: Option<u64>,
    /// Time zero on this host's clock (Unix nanoseconds), when the attack is to start at an
    /// instant (the shards of a run group all start at one).
    #[serde(default)]
    pub start_at_ns: Option<i64>,
    /// The SLO the run is judged against on its whole-run figures (none: not judged).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub slo: Vec<Term>,
}

/// Open loop (requests on a schedule) or closed loop (each connection sends when answered).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "loop", rename_all = "snake_case", deny_unknown_fields)]
pub enum Load {
    Open {
        schedule: Schedule,
        #[serde(default)]
        requests: Option<u64>,
    },
    Closed {
        connections: u64,
        #[serde(default)]
        requests: Option<u64>,
        #[serde(default)]
        duration_ns: Option<u64>,
    },
}

/// When an open loop's requests are due.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "shape", rename_all = "snake_case", deny_unknown_fields)]
pub enum Schedule {
    /// A constant rate, until `duration_ns` (or the request count).
    Constant {
        rate: f64,
        #[serde(default)]
        duration_ns: Option<u64>,
    },
    /// A rate ramping linearly.
    Ramp {
        from: f64,
        to: f64,
        duration_ns: u64,
    },
    /// Rates one after another, each for `each_ns`.
    Steps { rates: Vec<f64>, each_ns: u64 },
}

/// A search for the highest constant rate served within an SLO.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Search {
    pub slo: Vec<Term>,
    /// The first rate tried; `None`: estimated first.
    #[serde(default)]
    pub start: Option<f64>,
    /// How narrow the coarse bracket gets (a share of its low end, 0.08 for 8 %) before the
    /// steps beside the knee begin.
    pub resolution: f64,
    /// The figure searched for is C_p: the rate a window meets the SLO at with probability p.
    #[serde(default = "half")]
    pub p: f64,
    pub step_ns: u64,
    pub warmup_ns: u64,
    /// The longest the server is warmed before the first step, until its latency stops
    /// trending (0: not warmed).
    #[serde(default = "two_minutes")]
    pub settle_ns: u64,
    pub min_rate: f64,
    pub max_rate: f64,
    pub max_steps: u64,
    pub searches: u32,
    /// Stop once C_p's 95 % interval is within ± this share of it (of one search, or of
    /// repeated ones' steps pooled).
    pub until: f64,
    #[serde(default)]
    pub budget_ns: Option<u64>,
    /// Every step fired from these gun hosts together.
    #[serde(default)]
    pub guns: Option<Guns>,
    /// Other targets, each sent the same requests at its own origin: their searches run
    /// interleaved with this one, a step of each per round, and are compared by the ratio of
    /// their figures. Empty: one target.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub against: Vec<Against>,
    /// The rounds of such a comparison (with `sequential`, the most it may run).
    #[serde(default = "sixteen")]
    pub rounds: u32,
    /// Read the comparison at 8, 16, 32, … rounds and stop at the first look where every ratio
    /// is decided (its interval excludes 1, or lies within ± `until` of it), each look's
    /// intervals read so that the answer holds 95 % however the rounds stopped.
    #[serde(default)]
    pub sequential: bool,
    /// Blocks of a calibration check run after a single search (0: none): one step at each of
    /// five rates of its fit per block (the two ends of C_0.5's interval, C_0.75, C_0.5 and
    /// C_0.25), then the search again.
    #[serde(default)]
    pub check: u32,
}

/// Another target of a comparison: where it is, how its search is kept, what watches it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Against {
    /// `http://host:port`: the order's requests are sent here instead, paths and queries kept.
    pub origin: Secret,
    /// Its search's name, id and labels instead of the order's (an experiment's cell of
    /// another target); `None`: the order's labels, named by its origin, a new id.
    #[serde(default)]
    pub keeping: Option<AgainstKeeping>,
    /// Its own probes. The order's watch the order's target only: a figure labelled with a
    /// target is that target's alone.
    #[serde(default)]
    pub probes: Option<Probes>,
}

/// How another target's search of a comparison is kept (into the order's store).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AgainstKeeping {
    pub name: String,
    pub run_id: String,
    #[serde(default)]
    pub labels: BTreeMap<String, String>,
}

impl Against {
    /// Another target at `origin`, kept and watched as the order says by default.
    pub fn at(origin: impl Into<String>) -> Against {
        Against {
            origin: Secret(origin.into()),
            keeping: None,
            probes: None,
        }
    }
}

/// The fewest rounds a comparison runs (its ratio's interval is drawn from them).
pub use analysis::capacity::compare::MIN_ROUNDS;

fn two_minutes() -> u64 {
    120_000_000_000
}

fn sixteen() -> u32 {
    16
}

/// Where a lab's guns are listed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Lab {
    /// `terraform output -json ssh_guns` of the lab (docs/lab.md).
    Terraform,
    /// `scripts/twin.sh up --guns N`: its gun namespaces, over its SSH config.
    Twin,
}

/// Gun hosts, as `[guns]` or `loadgen capacity --gun` name them: who they are and how they are
/// reached ([`GunHosts`]: a transport's own fields), and what every gun's generator is given.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Guns {
    pub hosts: GunHosts,
    /// The CPUs each gun's generator is held to (`taskset -c` list).
    #[serde(default)]
    pub cpus: Option<String>,
    #[serde(default)]
    pub threads: Option<u32>,
    /// `loadgen` on the guns.
    #[serde(default)]
    pub loadgen: Option<String>,
    /// A file on each gun that sets `SHOWDOWN_DB`.
    #[serde(default)]
    pub store_env_file: Option<String>,
    /// How far a gun's clock may be from the runner's (by default 50 ms).
    #[serde(default)]
    pub clock_tolerance_ns: Option<u64>,
}

/// Who the guns are, by the transport that reaches them.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "transport", rename_all = "snake_case", deny_unknown_fields)]
pub enum GunHosts {
    /// Over OpenSSH: SSH destinations, or the guns of a lab.
    Ssh {
        #[serde(default)]
        destinations: Vec<String>,
        /// `ssh -F`: an SSH config instead of the user's.
        #[serde(default)]
        config: Option<String>,
        #[serde(default)]
        from: Option<Lab>,
        #[serde(default)]
        terraform_dir: Option<String>,
    },
    /// Pods of a Kubernetes Indexed Job this runner renders (and applies, when told), each
    /// dialling back to the runner over TLS.
    Kubernetes(Kubernetes),
}

/// The guns as pods of one Kubernetes Indexed Job: what the Job is rendered from, and where
/// its pods dial this runner.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Kubernetes {
    /// How many guns: the Job's completions and parallelism, one pod a node.
    pub count: u32,
    /// The image whose `loadgen` the pods run (the repository's Dockerfile builds it).
    pub image: String,
    /// Where this runner listens for the pods, `host:port`.
    pub listen: String,
    /// Where the pods dial, `host:port` as the cluster reaches this runner (default: `listen`).
    #[serde(default)]
    pub advertise: Option<String>,
    /// The namespace of the Job and its Secret (default `default`).
    #[serde(default)]
    pub namespace: Option<String>,
    /// The Job's name (default `showdown-guns`); its Secret is `<name>-dial`.
    #[serde(default)]
    pub job: Option<String>,
    /// Whole CPUs each pod requests and is limited to (Guaranteed QoS; default 2).
    #[serde(default)]
    pub cpus: Option<u32>,
    /// Memory each pod requests and is limited to, as Kubernetes writes it (default `1Gi`);
    /// a whole number of bytes may be written bare (`memory=1073741824` on a flag).
    #[serde(default, deserialize_with = "text_or_whole")]
    pub memory: Option<String>,
    /// The file the Job is written to (no secret in it); default `<job>.yaml`. A relative one
    /// is in the experiment file's directory (the current one for flags).
    #[serde(default)]
    pub manifest: Option<String>,
    /// The runner applies the Job and its Secret with `kubectl` and resumes the Job itself.
    #[serde(default)]
    pub apply: bool,
    /// How long the runner waits for every pod to dial in (default 300 s). Written as
    /// nanoseconds; read as nanoseconds or, as an experiment file and `--kubernetes` write it
    /// (`wait = "5m"`), as a duration.
    #[serde(default, alias = "wait", deserialize_with = "nanos_or_duration")]
    pub wait_ns: Option<u64>,
}

/// An optional duration read as whole nanoseconds (an order's own form) or as a duration such
/// as `"300s"`, `"5m"` or `"1h"` (humantime's, as an experiment file writes one).
fn nanos_or_duration<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Option<u64>, D::Error> {
    use serde::de::{Error, Unexpected, Visitor};

    struct NanosOrDuration;

    impl<'de> Visitor<'de> for NanosOrDuration {
        type Value = Option<u64>;

        fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            f.write_str("whole nanoseconds, or a duration such as \"5m\"")
        }

        fn visit_none<E: Error>(self) -> Result<Option<u64>, E> {
            Ok(None)
        }

        fn visit_unit<E: Error>(self) -> Result<Option<u64>, E> {
            Ok(None)
        }

        fn visit_some<Inner: serde::Deserializer<'de>>(
            self,
            d: Inner,
        ) -> Result<Option<u64>, Inner::Error> {
            d.deserialize_any(NanosOrDuration)
        }

        fn visit_u64<E: Error>(self, v: u64) -> Result<Option<u64>, E> {
            Ok(Some(v))
        }

        fn visit_i64<E: Error>(self, v: i64) -> Result<Option<u64>, E> {
            u64::try_from(v)
                .map(Some)
                .map_err(|_| E::invalid_value(Unexpected::Signed(v), &self))
        }

        fn visit_str<E: Error>(self, text: &str) -> Result<Option<u64>, E> {
            humantime::parse_duration(text)
                .map(|d| Some(nanos(d)))
                .map_err(|e| {
                    E::custom(format!(
                        "{text:?} is not a duration ({e}): write e.g. \"30s\" or \"500ms\""
                    ))
                })
        }
    }

    d.deserialize_option(NanosOrDuration)
}

/// An optional quantity: text as Kubernetes writes it (`"1Gi"`), or whole bytes written bare,
/// read as its digits.
fn text_or_whole<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Option<String>, D::Error> {
    use serde::de::{Error, Unexpected, Visitor};

    struct TextOrWhole;

    impl<'de> Visitor<'de> for TextOrWhole {
        type Value = Option<String>;

        fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            f.write_str("a quantity such as \"1Gi\" or \"512Mi\", or whole bytes")
        }

        fn visit_none<E: Error>(self) -> Result<Option<String>, E> {
            Ok(None)
        }

        fn visit_unit<E: Error>(self) -> Result<Option<String>, E> {
            Ok(None)
        }

        fn visit_some<Inner: serde::Deserializer<'de>>(
            self,
            d: Inner,
        ) -> Result<Option<String>, Inner::Error> {
            d.deserialize_any(TextOrWhole)
        }

        fn visit_u64<E: Error>(self, v: u64) -> Result<Option<String>, E> {
            Ok(Some(v.to_string()))
        }

        fn visit_i64<E: Error>(self, v: i64) -> Result<Option<String>, E> {
            u64::try_from(v)
                .map(|v| Some(v.to_string()))
                .map_err(|_| E::invalid_value(Unexpected::Signed(v), &self))
        }

        fn visit_str<E: Error>(self, text: &str) -> Result<Option<String>, E> {
            Ok(Some(text.to_string()))
        }
    }

    d.deserialize_option(TextOrWhole)
}

impl Default for GunHosts {
    /// Over SSH, to no gun yet.
    fn default() -> GunHosts {
        GunHosts::Ssh {
            destinations: Vec::new(),
            config: None,
            from: None,
            terraform_dir: None,
        }
    }
}

/// What to send.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Requests {
    /// The kinds of request, each with its weight in the mix (one for a single URL).
    pub entries: Vec<Request>,
    /// Headers of every request, `Name: value`, before each request's own.
    #[serde(default)]
    pub headers: Vec<Secret>,
}

/// One kind of request.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Request {
    /// An absolute URL (its query may hold a key); placeholders allowed in its path.
    pub url: Secret,
    pub weight: u64,
    /// `None`: GET.
    #[serde(default)]
    pub method: Option<String>,
    #[serde(default)]
    pub headers: BTreeMap<String, Secret>,
    /// A template, like `--body` (empty: none).
    #[serde(default)]
    pub body: Secret,
}

/// How requests are sent.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Pacing {
    /// Worker threads; `None`: the CPUs this process may run on.
    #[serde(default)]
    pub threads: Option<u32>,
    /// The open loop's cap on connections; `None`: loadgen's default.
    #[serde(default)]
    pub max_connections: Option<u64>,
    /// The open loop's connections opened before the first request; `None`: on demand only
    /// (a search's steps: Little's law at each step's rate).
    #[serde(default)]
    pub ready_connections: Option<u64>,
    /// Release requests on a grid of this width (0: each at its own instant).
    pub batch_ns: u64,
    pub arrival: ArrivalProcess,
    pub keepalive: bool,
    pub h2: bool,
    pub insecure: bool,
    pub timeout_ns: u64,
}

/// How the run is kept.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Keeping {
    /// `None`: not kept.
    #[serde(default)]
    pub store: Option<StoreAt>,
    #[serde(default)]
    pub name: Option<String>,
    #[serde(default)]
    pub experiment: Option<String>,
    /// The id to keep the run (or the search) under.
    #[serde(default)]
    pub run_id: Option<String>,
    #[serde(default)]
    pub labels: BTreeMap<String, String>,
}

/// Where the store is.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "at", rename_all = "snake_case", deny_unknown_fields)]
pub enum StoreAt {
    /// This URL (its password included).
    Url { url: Secret },
    /// The `SHOWDOWN_DB` a file on the gun sets (the lab's `/etc/showdown/store.env`).
    GunFile { path: String },
}

/// The probes to subscribe to.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Probes {
    /// `HOST:PORT`, each.
    pub addresses: Vec<String>,
    /// The probes' token (only sent over TLS that checks the probe).
    #[serde(default)]
    pub token: Option<Secret>,
    #[serde(default)]
    pub trust: Option<ProbeTrust>,
    pub pre_roll_ns: u64,
    pub post_roll_ns: u64,
    /// Every probe must profile.
    #[serde(default)]
    pub profile: bool,
}

/// Where a generator's probes are and how they are trusted, as a user names them: the files
/// are read by [`Probes::read`].
#[derive(Debug, Clone, Copy, Default)]
pub struct ProbesAt<'a> {
    /// `HOST:PORT`, each.
    pub addresses: &'a [String],
    /// A file that holds only the probes' token.
    pub token_file: Option<&'a std::path::Path>,
    /// The probes' certificate's SHA-256 (hex): wins over a CA.
    pub fingerprint: Option<&'a str>,
    /// CA certificates (PEM) that signed the probes'.
    pub ca: Option<&'a std::path::Path>,
}

/// Why the probes' files could not be read.
#[derive(Debug, thiserror::Error)]
pub enum ProbesError {
    #[error(transparent)]
    Token(#[from] probe::token::TokenFileError),
    #[error("cannot read {}: {error}", .path.display())]
    Ca {
        path: std::path::PathBuf,
        #[source]
        error: std::io::Error,
    },
}

impl Probes {
    /// The probes `at` names, their token and CA certificate read now (the token first);
    /// `None` without an address. No pre- or post-roll and no profile: the caller's to set.
    pub fn read(at: ProbesAt<'_>) -> Result<Option<Probes>, ProbesError> {
        let token = at
            .token_file
            .map(probe::token::read)
            .transpose()?
            .map(Secret);
        let trust = match (at.fingerprint, at.ca) {
            (Some(hex), _) => Some(ProbeTrust::Fingerprint {
                hex: hex.to_string(),
            }),
            (None, Some(ca)) => Some(ProbeTrust::Ca {
                pem: std::fs::read_to_string(ca).map_err(|error| ProbesError::Ca {
                    path: ca.to_path_buf(),
                    error,
                })?,
            }),
            (None, None) => None,
        };
        Ok((!at.addresses.is_empty()).then(|| Probes {
            addresses: at.addresses.to_vec(),
            token,
            trust,
            pre_roll_ns: 0,
            post_roll_ns: 0,
            profile: false,
        }))
    }
}

/// How the probes' TLS certificate is checked.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "by", rename_all = "snake_case", deny_unknown_fields)]
pub enum ProbeTrust {
    /// Exactly this certificate (its SHA-256, hex).
    Fingerprint { hex: String },
    /// Certificates signed by these (PEM).
    Ca { pem: String },
}

/// One generator's part of a run group.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Shard {
    /// The run group: the same on every generator.
    pub group: String,
    /// This part, `index` of `count` (0-based): requests `index`, `index + count`, … .
    pub index: u32,
    pub count: u32,
}

/// A value that may be a secret: serialized as itself, never shown by `Debug`.
#[derive(Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(transparent)]
pub struct Secret(pub String);

impl std::fmt::Debug for Secret {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("<redacted>")
    }
}

impl From<String> for Secret {
    fn from(value: String) -> Self {
        Secret(value)
    }
}

impl Secret {
    pub fn expose(&self) -> &str {
        &self.0
    }
}

/// What a generator's order came to: `loadgen order`'s one line on standard output.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Outcome {
    pub version: u32,
    /// An attack's summary.
    #[serde(default)]
    pub summary: Option<store::summary::Summary>,
    /// A search's result (of a comparison: the order's own target's).
    #[serde(default)]
    pub search: Option<analysis::capacity::Repeated>,
    /// A comparison's result: every target's search and their ratios.
    #[serde(default)]
    pub compared: Option<analysis::capacity::compare::Compared>,
    /// The id the run was kept under, if it was.
    #[serde(default)]
    pub run_id: Option<String>,
    /// Stopped before its end (a signal, its input closed, `max_lateness`): what was recorded
    /// is still kept and reported.
    #[serde(default)]
    pub stopped: bool,
}

impl Outcome {
    /// The first search's result, when the work was a search.
    pub fn first_search(&self) -> Option<&analysis::capacity::Search> {
        self.search.as_ref().and_then(|r| r.searches.first())
    }
}

/// What a gun host is told over SSH (`loadgen gun` on its standard input): one line.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "ask", rename_all = "snake_case", deny_unknown_fields)]
pub enum GunRequest {
    /// Say this build, its CPUs and its clock ([`GunCheck`]); with `reach`, whether this URL's
    /// host and port accept a TCP connection from the gun.
    Check {
        #[serde(default)]
        reach: Option<String>,
    },
    /// Answer every further line with the gun's clock (Unix nanoseconds).
    Clock,
    /// Run this order, held to these CPUs (`taskset -c`); the gun's standard input closing
    /// stops it.
    Fire {
        order: Box<Order>,
        #[serde(default)]
        cpus: Option<String>,
    },
}

/// What `loadgen gun` says of its host when asked to [`GunRequest::Check`].
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct GunCheck {
    pub version: String,
    /// SHA-256 of the `loadgen` binary: the same build, not only the same version.
    pub build: String,
    /// `uname -m`'s answer, for a copy that can run there.
    pub arch: String,
    /// The CPUs the gun may run on.
    pub cpus: String,
    /// Its clock when it answered (Unix nanoseconds).
    pub now_ns: i64,
    /// Whether the target answered a TCP connection from the gun, and if not, why.
    pub reach: Option<Reach>,
}

/// Whether a gun reached the target it was asked to check ([`GunCheck::reach`]).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "is", rename_all = "snake_case")]
pub enum Reach {
    /// It accepted a TCP connection from the gun.
    Reached,
    /// It did not, and why (in the gun's words).
    Unreachable { why: String },
}

/// Why a line is not an order (or an outcome).
#[derive(Debug, thiserror::Error)]
pub enum OrderError {
    #[error("cannot read standard input: {0}")]
    Read(std::io::Error),
    #[error("nothing on standard input: `loadgen order` reads one order, a JSON line (docs/architecture.md, \"The order\")")]
    Empty,
    #[error("the order is over {} MiB: send fewer or smaller requests", MAX_LINE >> 20)]
    TooLarge,
    #[error("the order is version {theirs}, this loadgen speaks version {ours}: run the same build on both sides")]
    Version { theirs: u32, ours: u32 },
    /// Its text is not repeated: it may hold a secret.
    #[error("standard input is not an order (line {line}, column {column}: {why})")]
    Malformed {
        line: usize,
        column: usize,
        why: String,
    },
}

/// The shape of a JSON error without its text (a serde message may quote the input).
fn malformed(e: &serde_json::Error) -> OrderError {
    let why = match e.classify() {
        serde_json::error::Category::Io => "cannot read",
        serde_json::error::Category::Syntax => "not JSON",
        serde_json::error::Category::Eof => "cut short",
        serde_json::error::Category::Data => "a field missing, unknown or of the wrong kind",
    };
    OrderError::Malformed {
        line: e.line(),
        column: e.column(),
        why: why.into(),
    }
}

/// Reads one line of at most [`MAX_LINE`] bytes as `T`.
pub fn read_line<T: serde::de::DeserializeOwned>(input: impl BufRead) -> Result<T, OrderError> {
    let mut line = Vec::new();
    input
        .take(MAX_LINE + 1)
        .read_until(b'\n', &mut line)
        .map_err(OrderError::Read)?;
    if line.len() as u64 > MAX_LINE {
        return Err(OrderError::TooLarge);
    }
    if line.iter().all(u8::is_ascii_whitespace) {
        return Err(OrderError::Empty);
    }
    // The version first, so that another version's order is named as such, not as malformed.
    #[derive(Deserialize)]
    struct Versioned {
        version: Option<u32>,
    }
    if let Ok(Versioned {
        version: Some(theirs),
    }) = serde_json::from_slice::<Versioned>(&line)
    {
        if theirs != VERSION {
            return Err(OrderError::Version {
                theirs,
                ours: VERSION,
            });
        }
    }
    serde_json::from_slice(&line).map_err(|e| malformed(&e))
}

/// `value` as one JSON line.
pub fn line<T: Serialize>(value: &T) -> Vec<u8> {
    // Serializing these types cannot fail (string keys, no non-finite number is refused by
    // serde_json: it writes null), but a line is written whatever happens.
    let mut line = serde_json::to_vec(value).unwrap_or_else(|_| b"{}".to_vec());
    line.push(b'\n');
    line
}

impl Attack {
    /// `load`, recorded in intervals of a second, with 3 s of grace after a stop: `loadgen
    /// attack`'s defaults.
    pub fn new(load: Load) -> Attack {
        Attack {
            load,
            interval_ns: 1_000_000_000,
            grace_ns: 3_000_000_000,
            max_lateness_ns: None,
            start_at_ns: None,
            slo: Vec::new(),
        }
    }
}

fn half() -> f64 {
    0.5
}

impl Search {
    /// A search within `slo` with `loadgen capacity`'s defaults: C_0.5 of windows of 10 s after
    /// 2 s of warm-up, the server warmed first for at most 2 min, from 1 to 1,000,000 req/s, a coarse bracket to 8 %, until the 95 %
    /// interval is within ±5 %, at most 30 steps, one search.
    pub fn new(slo: Vec<Term>) -> Search {
        Search {
            slo,
            start: None,
            resolution: 0.08,
            p: 0.5,
            step_ns: 10_000_000_000,
            warmup_ns: 2_000_000_000,
            settle_ns: two_minutes(),
            min_rate: 1.0,
            max_rate: 1_000_000.0,
            max_steps: 30,
            searches: 1,
            until: 0.05,
            budget_ns: None,
            guns: None,
            against: Vec::new(),
            rounds: 16,
            sequential: false,
            check: 0,
        }
    }
}

impl Default for Pacing {
    /// `loadgen attack`'s: as many threads as CPUs, uniform arrivals each at its own instant,
    /// connections kept alive, HTTP/1.1, certificates checked, 30 s to answer.
    fn default() -> Pacing {
        Pacing {
            threads: None,
            max_connections: None,
            ready_connections: None,
            batch_ns: 0,
            arrival: ArrivalProcess::Uniform,
            keepalive: true,
            h2: false,
            insecure: false,
            timeout_ns: 30_000_000_000,
        }
    }
}

impl Order {
    /// Reads an order: one JSON line, this [`VERSION`].
    pub fn read(input: impl BufRead) -> Result<Order, OrderError> {
        read_line(input)
    }

    /// This order as one JSON line.
    pub fn line(&self) -> Vec<u8> {
        line(self)
    }

    /// Part `index` of `count` of this order, run by one of several generators from one start
    /// (`start_at_ns`, on that generator's clock) as run group `group`. Only the first part
    /// subscribes to the probes: the group keeps one copy of their samples.
    pub fn for_shard(&self, index: u32, count: u32, group: &str, start_at_ns: i64) -> Order {
        let mut part = self.clone();
        part.shard = Some(Shard {
            group: group.to_string(),
            index,
            count,
        });
        if let Work::Attack(attack) = &mut part.work {
            attack.start_at_ns = Some(start_at_ns);
        }
        if index > 0 {
            part.probes = None;
        }
        part
    }

    /// The order's search, if it is one.
    pub fn search(&self) -> Option<&Search> {
        match &self.work {
            Work::Search(s) => Some(s.as_ref()),
            Work::Attack(_) => None,
        }
    }
}

/// A duration as an order carries it: whole nanoseconds (saturating past 584 years).
pub fn nanos(d: std::time::Duration) -> u64 {
    u64::try_from(d.as_nanos()).unwrap_or(u64::MAX)
}

/// A text that is not a percentage above 0 % and below 100 %: the text as given.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0:?} is not a percentage between 0% and 100%, e.g. 5%")]
pub struct PercentError(pub String);

/// A text that is not a probability a search can aim at: the text as given.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "'{0}' is not a probability a search can aim at: give one from 0.05 to 0.95, e.g. 0.5 or 0.9"
)]
pub struct ProbabilityError(pub String);

/// A percentage such as `5%`, as a share (0.05): above 0 % and below 100 %.
pub fn percent(text: &str) -> Result<f64, PercentError> {
    text.trim()
        .strip_suffix('%')
        .and_then(|p| p.trim().parse::<f64>().ok())
        .filter(|p| *p > 0.0 && *p < 100.0)
        .map(|p| p / 100.0)
        .ok_or_else(|| PercentError(text.to_string()))
}

/// A probability a search can aim at (its C_p's p), such as `0.9`: from 0.05 to 0.95.
pub fn probability(text: &str) -> Result<f64, ProbabilityError> {
    text.trim()
        .parse::<f64>()
        .ok()
        .filter(|p| (0.05..=0.95).contains(p))
        .ok_or_else(|| ProbabilityError(text.to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn attack() -> Order {
        Order {
            version: VERSION,
            work: Work::Attack(Attack {
                load: Load::Open {
                    schedule: Schedule::Constant {
                        rate: 250.5,
                        duration_ns: Some(2_000_000_000),
                    },
                    requests: None,
                },
                interval_ns: 1_000_000_000,
                grace_ns: 3_000_000_000,
                max_lateness_ns: None,
                start_at_ns: None,
                slo: vec!["p99<=10ms".parse().expect("a term")],
            }),
            requests: Requests {
                entries: vec![Request {
                    url: Secret("http://127.0.0.1:8080/users?key=KeySecret".into()),
                    weight: 1,
                    method: Some("POST".into()),
                    headers: BTreeMap::from([("X-Api".into(), Secret("HeaderSecret".into()))]),
                    body: Secret("{\"password\":\"BodySecret\"}".into()),
                }],
                headers: vec![Secret("Authorization: Bearer TokenSecret".into())],
            },
            pacing: Pacing {
                threads: Some(2),
                max_connections: Some(64),
                ready_connections: None,
                batch_ns: 0,
                arrival: ArrivalProcess::Poisson,
                keepalive: true,
                h2: false,
                insecure: false,
                timeout_ns: 30_000_000_000,
            },
            keeping: Keeping {
                store: Some(StoreAt::Url {
                    url: Secret("postgres://runs:StoreSecret@db/showdown".into()),
                }),
                name: Some("cell".into()),
                experiment: Some("e".into()),
                run_id: Some("0193a0a0-0000-7000-8000-000000000001".into()),
                labels: BTreeMap::from([("target".into(), "go".into())]),
            },
            probes: Some(Probes {
                addresses: vec!["127.0.0.1:7070".into()],
                token: Some(Secret("ProbeSecret".into())),
                trust: Some(ProbeTrust::Ca {
                    pem: "-----BEGIN CERTIFICATE-----".into(),
                }),
                pre_roll_ns: 0,
                post_roll_ns: 1,
                profile: true,
            }),
            shard: None,
        }
    }

    #[test]
    fn every_kind_of_order_reads_back_as_written() {
        let mut orders = vec![attack()];
        for load in [
            Load::Open {
                schedule: Schedule::Ramp {
                    from: 10.0,
                    to: 100.0,
                    duration_ns: 5,
                },
                requests: Some(7),
            },
            Load::Open {
                schedule: Schedule::Steps {
                    rates: vec![1.0, 2.5],
                    each_ns: 9,
                },
                requests: None,
            },
            Load::Closed {
                connections: 16,
                requests: None,
                duration_ns: Some(2),
            },
        ] {
            let mut o = attack();
            o.work = Work::Attack(Attack {
                load,
                interval_ns: 1,
                grace_ns: 2,
                max_lateness_ns: Some(3),
                start_at_ns: None,
                slo: Vec::new(),
            });
            o.probes = None;
            orders.push(o.for_shard(1, 3, "group", -5));
        }
        let mut search = attack();
        search.work = Work::Search(Box::new(Search {
            slo: vec!["p99<=10ms".parse().expect("a term")],
            start: None,
            resolution: percent("5%").expect("a share"),
            p: 0.5,
            step_ns: 10,
            warmup_ns: 2,
            settle_ns: 3,
            min_rate: 1.0,
            max_rate: 1e6,
            max_steps: 30,
            searches: 6,
            until: 0.05,
            budget_ns: None,
            guns: Some(Guns {
                hosts: GunHosts::Ssh {
                    destinations: vec!["gun1".into()],
                    config: Some("/home/me/lab.ssh".into()),
                    from: Some(Lab::Twin),
                    terraform_dir: None,
                },
                store_env_file: Some("/etc/showdown/store.env".into()),
                clock_tolerance_ns: Some(50_000_000),
                ..Guns::default()
            }),
            against: vec![
                Against::at("http://127.0.0.1:8081"),
                Against {
                    origin: Secret("http://127.0.0.1:8082".into()),
                    keeping: Some(AgainstKeeping {
                        name: "fast".into(),
                        run_id: "r2".into(),
                        labels: [("target".to_string(), "fast".to_string())].into(),
                    }),
                    probes: Some(Probes {
                        addresses: vec!["127.0.0.1:7002".into()],
                        token: Some(Secret("t".into())),
                        trust: None,
                        pre_roll_ns: 1,
                        post_roll_ns: 2,
                        profile: false,
                    }),
                },
            ],
            rounds: 12,
            sequential: false,
            check: 30,
        }));
        search.keeping.store = Some(StoreAt::GunFile {
            path: "/etc/showdown/store.env".into(),
        });
        // The guns name their transport, its own fields beside the tag.
        let guns =
            serde_json::to_value(search.search().and_then(|s| s.guns.as_ref())).expect("a value");
        assert_eq!(guns["hosts"]["transport"], "ssh");
        assert_eq!(guns["hosts"]["destinations"][0], "gun1");
        orders.push(search);
        for order in orders {
            let line = order.line();
            assert_eq!(line.iter().filter(|b| **b == b'\n').count(), 1);
            assert_eq!(line.last(), Some(&b'\n'));
            let back = Order::read(&line[..]).expect("reads back");
            assert_eq!(back, order);
        }
    }

    #[test]
    fn a_wrong_order_is_refused_in_one_line_that_repeats_none_of_it() {
        let mut value = serde_json::to_value(attack()).expect("a value");
        value["pacing"]["turbo"] = true.into();
        let unknown = serde_json::to_vec(&value).expect("bytes");
        let e = Order::read(&unknown[..])
            .expect_err("an unknown field")
            .to_string();
        assert!(e.contains("unknown"), "{e}");
        value = serde_json::to_value(attack()).expect("a value");
        value["version"] = 2.into();
        let later = serde_json::to_vec(&value).expect("bytes");
        let e = Order::read(&later[..]).expect_err("version 2").to_string();
        assert!(e.contains("version 2") && e.contains("version 1"), "{e}");
        for bad in [
            &b""[..],
            b"\n",
            b"{\"version\":1,\"work\":",
            b"not json KeySecret",
        ] {
            let e = Order::read(bad).expect_err("not an order").to_string();
            assert!(!e.contains('\n') && !e.contains("Secret"), "{e}");
        }
        let huge = vec![b' '; (MAX_LINE + 2) as usize];
        assert!(matches!(Order::read(&huge[..]), Err(OrderError::TooLarge)));
    }

    #[test]
    fn an_order_shown_for_debugging_holds_no_secret() {
        let shown = format!("{:?}", attack());
        for secret in [
            "KeySecret",
            "HeaderSecret",
            "BodySecret",
            "TokenSecret",
            "StoreSecret",
            "ProbeSecret",
        ] {
            assert!(!shown.contains(secret), "{secret} in {shown}");
        }
        assert!(shown.contains("<redacted>") && shown.contains("Poisson"));
    }

    #[test]
    fn a_shard_after_the_first_leaves_the_probes_to_the_first() {
        let order = attack();
        let first = order.for_shard(0, 2, "g", 42);
        let second = order.for_shard(1, 2, "g", 43);
        assert!(first.probes.is_some() && second.probes.is_none());
        for (part, i, at) in [(&first, 0, 42), (&second, 1, 43)] {
            let shard = part.shard.as_ref().expect("a shard");
            assert_eq!(
                (shard.group.as_str(), shard.index, shard.count),
                ("g", i, 2)
            );
            let Work::Attack(attack) = &part.work else {
                panic!("an attack")
            };
            assert_eq!(attack.start_at_ns, Some(at));
        }
        assert_eq!(first.keeping, order.keeping);
    }

    #[test]
    fn kubernetes_guns_wait_in_nanoseconds_or_as_a_file_writes_it() {
        let read = |wait: &str| {
            serde_json::from_str::<GunHosts>(&format!(
                "{{\"transport\":\"kubernetes\",\"count\":3,\"image\":\"me/loadgen:1\",\"listen\":\"0.0.0.0:7411\"{wait}}}"
            ))
        };
        let waits = |hosts: GunHosts| match hosts {
            GunHosts::Kubernetes(k) => k.wait_ns,
            other => panic!("{other:?}"),
        };
        for (wait, ns) in [
            ("", None),
            (",\"wait_ns\":null", None),
            (",\"wait_ns\":300000000000", Some(300_000_000_000)),
            (",\"wait\":\"5m\"", Some(300_000_000_000)),
            (",\"wait\":\"90s\"", Some(90_000_000_000)),
            (",\"wait\":\"1h\"", Some(3_600_000_000_000)),
            (",\"memory\":1073741824", None),
        ] {
            assert_eq!(waits(read(wait).expect(wait)), ns, "{wait}");
        }
        match read(",\"memory\":1073741824").expect("a bare quantity") {
            GunHosts::Kubernetes(k) => assert_eq!(k.memory.as_deref(), Some("1073741824")),
            other => panic!("{other:?}"),
        }
        let e = read(",\"wait\":\"soon\"").expect_err("not a duration");
        assert!(e.to_string().contains("is not a duration"), "{e}");
        assert!(read(",\"wait_ns\":-1").is_err());
        // Written as the order always was: `wait_ns`, in nanoseconds.
        let hosts = read(",\"wait\":\"5m\"").expect("reads");
        let written = serde_json::to_value(&hosts).expect("a value");
        assert_eq!(written["wait_ns"], 300_000_000_000_u64);
        assert!(written.get("wait").is_none());
    }

    #[test]
    fn a_percentage_is_a_share_strictly_between_none_and_all() {
        assert_eq!(percent("5%"), Ok(0.05));
        assert_eq!(percent(" 2.5 % "), Ok(0.025));
        for bad in ["5", "0%", "100%", "-1%", "x%"] {
            assert!(percent(bad).is_err(), "{bad}");
        }
    }
}
