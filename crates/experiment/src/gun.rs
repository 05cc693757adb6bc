//! Each attack of a cell as the typed [`order::Order`] its generator is told ([`Attack::order`]):
//! a `loadgen order` process of its own on this machine (`fleet::Local`), or the guns' shards
//! of it (`fleet::Fleet`). The order goes on a pipe, never on a command line or in an
//! environment: the store's URL (with its password), the headers (an `Authorization` among
//! them), the requests (their URLs, with any query, and bodies) and the probe's token are in
//! it.
//!
//! A process of its own, rather than the engine in this process: the generator's CPU and
//! memory figures are its own, a crash or a kill ends one cell and not the experiment, and the
//! cell's run is kept by exactly the code that keeps any other run.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::file::{LoadSpec, Mode};

pub use fleet::Fired;

/// One attack of a cell (its warm-up or its measured run).
#[derive(Debug, Clone)]
pub struct Attack {
    pub base_url: String,
    pub load: LoadSpec,
    /// Instead of the load's own length (a warm-up).
    pub only_for: Option<Duration>,
    pub db: String,
    pub experiment: String,
    pub name: String,
    pub run_id: String,
    pub labels: Vec<(String, String)>,
    /// The probes to subscribe to: the target's, then its database's.
    pub probes: Vec<String>,
    pub probe_token_file: Option<PathBuf>,
    pub probe_fingerprint: Option<String>,
    pub probe_ca: Option<PathBuf>,
    pub pre_roll: Duration,
    pub post_roll: Duration,
    /// A capacity search instead of a fixed load.
    pub search: Option<crate::file::SearchSpec>,
    /// A search's gun hosts (`fleet::Fleet::guns`).
    pub guns: Option<order::Guns>,
    /// A search's other targets, compared with this one in interleaved rounds (`[search]
    /// rounds`): each one's own search, as its cell would run it alone.
    pub against: Vec<Attack>,
}

/// The headers in the variable `var` (a load's `headers_env`), one `Name: value` a line. A
/// line that is not a header is named by its place, never shown: it may be the secret itself,
/// and the reason a run or a cell failed is kept and published.
pub fn headers_from(var: &str) -> Result<Vec<String>, GunError> {
    let value = std::env::var(var).map_err(|_| GunError::HeadersEnv(var.to_string()))?;
    let mut lines = Vec::new();
    for (n, line) in value.lines().map(str::trim).enumerate() {
        if line.is_empty() {
            continue;
        }
        match line.split_once(':') {
            // `scheme://user:pw@host` split at its first `:` reads as a header `scheme`.
            Some((_, value)) if value.trim_start().starts_with("//") => {
                return Err(GunError::HeaderLine(var.to_string(), n + 1))
            }
            Some((name, value)) if crate::file::is_header(name.trim(), value.trim()) => {
                lines.push(line.to_string());
            }
            _ => return Err(GunError::HeaderLine(var.to_string(), n + 1)),
        }
    }
    Ok(lines)
}

impl Attack {
    /// The order for this attack: everything the generator needs, secrets included (it goes
    /// on a pipe, never on a command line).
    pub fn order(&self) -> Result<order::Order, GunError> {
        let load = &self.load;
        if let Some(share @ crate::file::Rate::Share(_)) = load.rate {
            return Err(GunError::Share(share));
        }
        let work = match &self.search {
            Some(search) => order::Work::Search(Box::new(self.search_of(search)?)),
            None => order::Work::Attack(order::Attack::new(self.load_of())),
        };
        let mut pacing = order::Pacing {
            threads: load.threads.map(|t| t as u32),
            ..order::Pacing::default()
        };
        if let Some(t) = load.timeout {
            pacing.timeout_ns = order::nanos(t);
        }
        if load.mode() == Mode::Open {
            pacing.max_connections = load.connections;
            pacing.batch_ns = load.batch.map_or(0, order::nanos);
            pacing.arrival = load.arrival.unwrap_or_default();
        }
        let mut headers: Vec<String> = load
            .headers
            .iter()
            .flatten()
            .map(|(k, v)| format!("{k}: {v}"))
            .collect();
        if let Some(var) = &load.headers_env {
            headers.extend(headers_from(var)?);
        }
        Ok(order::Order {
            version: order::VERSION,
            work,
            requests: order::Requests {
                entries: self.requests(),
                headers: headers.into_iter().map(order::Secret).collect(),
            },
            pacing,
            keeping: order::Keeping {
                store: Some(order::StoreAt::Url {
                    url: order::Secret(self.db.clone()),
                }),
                name: Some(self.name.clone()),
                experiment: Some(self.experiment.clone()),
                run_id: Some(self.run_id.clone()),
                labels: self.labels.iter().cloned().collect(),
            },
            probes: self.probes_of()?,
            shard: None,
        })
    }

    /// The load: a warm-up's constant rate (or closed loop) for its time, or the cell's own.
    fn load_of(&self) -> order::Load {
        let load = &self.load;
        match (load.mode(), self.only_for) {
            (Mode::Open, Some(d)) => order::Load::Open {
                schedule: order::Schedule::Constant {
                    rate: load
                        .per_second()
                        .or_else(|| load.steps.as_ref().and_then(|s| s.first().copied()))
                        .unwrap_or(1.0),
                    duration_ns: Some(order::nanos(d)),
                },
                requests: None,
            },
            (Mode::Open, None) => order::Load::Open {
                schedule: match (&load.steps, load.step_duration) {
                    (Some(rates), Some(each)) => order::Schedule::Steps {
                        rates: rates.clone(),
                        each_ns: order::nanos(each),
                    },
                    _ => order::Schedule::Constant {
                        rate: load.per_second().unwrap_or(1.0),
                        duration_ns: load.duration.map(order::nanos),
                    },
                },
                requests: load.requests,
            },
            (Mode::Closed, only_for) => order::Load::Closed {
                connections: load.connections.unwrap_or(1),
                requests: if only_for.is_some() {
                    None
                } else {
                    load.requests
                },
                duration_ns: only_for.or(load.duration).map(order::nanos),
            },
        }
    }

    /// The search: the file's terms and settings over `loadgen capacity`'s defaults.
    fn search_of(&self, spec: &crate::file::SearchSpec) -> Result<order::Search, GunError> {
        let slo = spec
            .slo
            .iter()
            .map(|t| {
                t.parse()
                    .map_err(|e: analysis::capacity::slo::SloError| GunError::Search(e.why))
            })
            .collect::<Result<Vec<_>, _>>()?;
        let mut search = order::Search::new(slo);
        search.start = spec.start;
        if let Some(r) = &spec.resolution {
            search.resolution = order::percent(r)?;
        }
        if let Some(d) = spec.step {
            search.step_ns = order::nanos(d);
        }
        if let Some(d) = spec.warmup {
            search.warmup_ns = order::nanos(d);
        }
        if let Some(d) = spec.settle {
            search.settle_ns = order::nanos(d);
        }
        if let Some(r) = spec.min_rate {
            search.min_rate = r;
        }
        if let Some(r) = spec.max_rate {
            search.max_rate = r;
        }
        if let Some(n) = spec.max_steps {
            search.max_steps = n;
        }
        if let Some(p) = spec.p {
            search.p = p;
        }
        if let Some(u) = &spec.until {
            search.until = order::percent(u)?;
        }
        if let Some(b) = spec.budget {
            search.budget_ns = Some(order::nanos(b));
        }
        search.guns = self.guns.clone();
        if let Some(rounds) = spec.rounds {
            search.rounds = rounds;
        }
        if let Some(blocks) = spec.check {
            search.check = blocks;
        }
        search.against = self
            .against
            .iter()
            .map(Attack::against_of)
            .collect::<Result<_, _>>()?;
        Ok(search)
    }

    /// This attack as another target of a comparison: its origin, its search's name, id and
    /// labels, its own probes.
    fn against_of(&self) -> Result<order::Against, GunError> {
        Ok(order::Against {
            origin: order::Secret(self.base_url.clone()),
            keeping: Some(order::AgainstKeeping {
                name: self.name.clone(),
                run_id: self.run_id.clone(),
                labels: self.labels.iter().cloned().collect(),
            }),
            probes: self.probes_of()?,
        })
    }

    /// The load's requests: its mix, or its one path, at the target's base URL.
    fn requests(&self) -> Vec<order::Request> {
        let one = [crate::file::MixEntry {
            path: self.load.path.clone().unwrap_or_else(|| "/".into()),
            weight: 1,
            method: None,
            body: None,
        }];
        let entries = self.load.mix.as_deref().unwrap_or(&one);
        entries
            .iter()
            .map(|entry| order::Request {
                url: order::Secret(format!("{}{}", self.base_url, entry.path)),
                weight: u64::from(entry.weight),
                method: entry.method.clone().or_else(|| self.load.method.clone()),
                headers: BTreeMap::new(),
                body: order::Secret(
                    entry
                        .body
                        .clone()
                        .or_else(|| self.load.body.clone())
                        .unwrap_or_default(),
                ),
            })
            .collect()
    }

    /// The probes, their token and CA certificate read from the runner's files.
    fn probes_of(&self) -> Result<Option<order::Probes>, GunError> {
        if self.probes.is_empty() {
            return Ok(None);
        }
        let probes = order::Probes::read(order::ProbesAt {
            addresses: &self.probes,
            token_file: self.probe_token_file.as_deref(),
            fingerprint: self.probe_fingerprint.as_deref(),
            ca: self.probe_ca.as_deref(),
        })
        .map_err(|e| match e {
            order::ProbesError::Token(e) => GunError::Token(e),
            order::ProbesError::Ca { path, error } => GunError::Read { path, error },
        })?;
        Ok(probes.map(|p| order::Probes {
            pre_roll_ns: order::nanos(self.pre_roll),
            post_roll_ns: order::nanos(self.post_roll),
            ..p
        }))
    }

    /// How long this attack runs, when that is known: a fixed load's (or a warm-up's) time with
    /// the probes' pre- and post-roll; a search's length is its own.
    pub fn length(&self) -> Option<Duration> {
        match (&self.search, self.only_for.or(self.load.duration)) {
            (None, Some(load)) => Some(self.pre_roll + load + self.post_roll),
            _ => None,
        }
    }
}

/// Writes a file only its owner may read (a request's query and body, a probe's token), whole
/// and never through a link (`probe::files`).
pub fn write_private(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    probe::files::replace(path, bytes, 0o600)
}

/// Why an attack could not be fired (not why it failed: that is [`Fired`]).
#[derive(Debug, thiserror::Error)]
pub enum GunError {
    #[error("cannot read {path}: {error}")]
    Read {
        path: PathBuf,
        error: std::io::Error,
    },
    #[error("the search: {0}")]
    Search(String),
    #[error("the search: {0}")]
    Percent(#[from] order::PercentError),
    #[error("{0}")]
    Token(probe::token::TokenFileError),
    /// Its generator (this machine's, or the guns) could not be run.
    #[error(transparent)]
    Fire(#[from] fleet::FleetError),
    #[error("the rate {0} is a share of a capacity not yet resolved to requests a second")]
    Share(crate::file::Rate),
    #[error("headers_env names {0}, which is not set: export it (one 'Name: value' a line), or drop headers_env")]
    HeadersEnv(String),
    #[error("headers_env {0}: line {1} is not a header 'Name: value' but a URL or other text (not shown, it may be a secret): fix that line of {0}, or name the variable that holds your headers")]
    HeaderLine(String, usize),
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::file::Rate;
    use store::vocabulary::ArrivalProcess;

    fn attack(load: LoadSpec) -> Attack {
        Attack {
            base_url: "http://127.0.0.1:8080".into(),
            load,
            only_for: None,
            db: "sqlite:///tmp/unused.db".into(),
            experiment: "e".into(),
            name: "n".into(),
            run_id: "r".into(),
            labels: vec![("target".into(), "go".into())],
            probes: Vec::new(),
            probe_token_file: None,
            probe_fingerprint: None,
            probe_ca: None,
            pre_roll: Duration::ZERO,
            post_roll: Duration::ZERO,
            search: None,
            guns: None,
            against: Vec::new(),
        }
    }

    #[test]
    fn a_cells_load_becomes_the_order_it_says() {
        let load = LoadSpec {
            path: Some("/now".into()),
            rate: Some(Rate::PerSecond(100.0)),
            duration: Some(Duration::from_millis(1500)),
            arrival: Some(ArrivalProcess::Poisson),
            connections: Some(64),
            headers: Some(BTreeMap::from([("X-Key".into(), "v".into())])),
            ..Default::default()
        };
        let order = attack(load.clone()).order().unwrap();
        let order::Work::Attack(a) = &order.work else {
            panic!("an attack")
        };
        assert_eq!(
            a.load,
            order::Load::Open {
                schedule: order::Schedule::Constant {
                    rate: 100.0,
                    duration_ns: Some(1_500_000_000)
                },
                requests: None
            }
        );
        assert_eq!(order.pacing.arrival, ArrivalProcess::Poisson);
        assert_eq!(order.pacing.max_connections, Some(64));
        assert_eq!(
            order.requests.entries[0].url.expose(),
            "http://127.0.0.1:8080/now"
        );
        assert_eq!(order.requests.headers[0].expose(), "X-Key: v");
        assert_eq!(
            order.keeping.labels.get("target").map(String::as_str),
            Some("go")
        );
        // A warm-up: the rate for its time, the run's own length aside.
        let warm = Attack {
            only_for: Some(Duration::from_secs(2)),
            ..attack(load)
        };
        let order::Work::Attack(a) = warm.order().unwrap().work else {
            panic!("an attack")
        };
        assert!(matches!(
            a.load,
            order::Load::Open {
                schedule: order::Schedule::Constant {
                    duration_ns: Some(2_000_000_000),
                    ..
                },
                ..
            }
        ));
        let share = LoadSpec {
            rate: Some(Rate::Share(0.8)),
            ..Default::default()
        };
        assert!(matches!(attack(share).order(), Err(GunError::Share(_))));
    }

    #[test]
    fn a_search_cell_keeps_loadgens_defaults_where_the_file_is_silent() {
        let mut a = attack(LoadSpec {
            path: Some("/now".into()),
            rate: Some(Rate::PerSecond(1.0)),
            ..Default::default()
        });
        a.search = Some(crate::file::SearchSpec {
            slo: vec!["p99<=10ms".into()],
            resolution: Some("2%".into()),
            ..Default::default()
        });
        let order = a.order().unwrap();
        let search = order.search().unwrap();
        let defaults = order::Search::new(search.slo.clone());
        assert_eq!(search.resolution, 0.02);
        assert_eq!(
            order::Search {
                resolution: defaults.resolution,
                ..search.clone()
            },
            defaults
        );
    }

    #[test]
    fn a_search_cells_p_until_and_budget_are_the_files() {
        let mut a = attack(LoadSpec {
            path: Some("/now".into()),
            ..Default::default()
        });
        a.search = Some(crate::file::SearchSpec {
            slo: vec!["p99<=10ms".into()],
            p: Some(0.9),
            until: Some("10%".into()),
            budget: Some(Duration::from_secs(90)),
            check: Some(30),
            ..Default::default()
        });
        let order = a.order().unwrap();
        let search = order.search().unwrap();
        assert_eq!(
            (search.p, search.until, search.budget_ns, search.check),
            (0.9, 0.1, Some(90_000_000_000), 30)
        );
    }

    #[test]
    fn a_comparisons_other_targets_are_kept_and_watched_as_their_own_cells() {
        let search = crate::file::SearchSpec {
            slo: vec!["p99<=10ms".into()],
            rounds: Some(12),
            ..Default::default()
        };
        let load = LoadSpec {
            path: Some("/now?x=1".into()),
            ..Default::default()
        };
        let mut a = attack(load.clone());
        a.search = Some(search.clone());
        let mut b = attack(load);
        b.base_url = "http://127.0.0.1:9090".into();
        b.name = "e target=node #1".into();
        b.run_id = "r-node".into();
        b.labels = vec![("target".into(), "node".into())];
        b.probes = vec!["127.0.0.1:7001".into()];
        b.search = Some(search);
        a.against = vec![b];
        let order = a.order().unwrap();
        let search = order.search().unwrap();
        assert_eq!(search.rounds, 12);
        assert_eq!(order.keeping.labels["target"], "go");
        let [against] = search.against.as_slice() else {
            panic!("{:?}", search.against)
        };
        assert_eq!(against.origin.expose(), "http://127.0.0.1:9090");
        let keeping = against.keeping.as_ref().unwrap();
        assert_eq!(
            (keeping.name.as_str(), keeping.run_id.as_str()),
            ("e target=node #1", "r-node")
        );
        assert_eq!(keeping.labels["target"], "node");
        // Its own probe, not the first target's (which has none here).
        assert_eq!(
            against.probes.as_ref().map(|p| p.addresses.clone()),
            Some(vec!["127.0.0.1:7001".to_string()])
        );
        assert!(order.probes.is_none());
    }
}
