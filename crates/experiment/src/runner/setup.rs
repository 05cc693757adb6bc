//! What the cells of a run share: the targets' database (named by the file, or a throwaway
//! cluster), the environment every local target gets, and each target held to the contract.

use std::collections::BTreeMap;
use std::time::Duration;

use store::experiment::Verification;
use store::vocabulary::Outcome;

use super::options::{Error, SECRET};
use crate::file::{Experiment, TargetSpec};
use crate::targets::{Launch, Target};
use crate::upstream::Upstream;
use crate::verify::{self, Expect};

/// The database the local targets use: the file's, `DATABASE_URL`, or a throwaway cluster.
pub(super) struct TargetsDatabase {
    pub(super) url: String,
    _cluster: Option<pgcluster::Cluster>,
}

/// The database the file names (`url`, or the variable `url_env` names), if it names one.
/// No other variable is read: a `DATABASE_URL` exported for something else is never used.
pub(super) fn named_database(experiment: &Experiment) -> Result<Option<String>, Error> {
    let file = &experiment.file.database;
    match (&file.url, &file.url_env) {
        (Some(url), _) => Ok(Some(url.clone())),
        (None, Some(var)) => match std::env::var(var) {
            Ok(url) if !url.is_empty() => Ok(Some(url)),
            _ => Err(Error::Setup(format!(
                "[database] url_env names {var}, which is not set: export it, or drop [database] for a throwaway PostgreSQL"
            ))),
        },
        (None, None) => Ok(None),
    }
}

/// Where the throwaway PostgreSQL runs: the file's `[database] cpus`, else beside the targets.
pub(super) fn database_cpus(experiment: &Experiment) -> Option<String> {
    let file = &experiment.file;
    file.database
        .cpus
        .as_ref()
        .or(file.placement.target_cpus.as_ref())
        .map(ToString::to_string)
}

pub(super) async fn database(experiment: &Experiment) -> Result<TargetsDatabase, Error> {
    let db = match named_database(experiment)? {
        Some(url) => TargetsDatabase {
            url,
            _cluster: None,
        },
        None => {
            if std::env::var_os("DATABASE_URL").is_some() {
                eprintln!("Note: DATABASE_URL is set but not used: this experiment file names no database (add url_env = \"DATABASE_URL\" under [database] to use it).");
            }
            let cpus = database_cpus(experiment);
            eprintln!(
                "Starting a throwaway PostgreSQL for the targets{}…",
                cpus.as_deref()
                    .map(|c| format!(" on CPU {c}"))
                    .unwrap_or_default()
            );
            let options = pgcluster::Options {
                cpus,
                ..pgcluster::Options::default()
            };
            let cluster = tokio::task::spawn_blocking(move || pgcluster::Cluster::start(&options))
                .await
                .map_err(|e| Error::Setup(e.to_string()))??;
            TargetsDatabase {
                url: cluster.url("postgres"),
                _cluster: Some(cluster),
            }
        }
    };
    crate::database::apply_schema(&db.url).await?;
    Ok(db)
}

/// The environment every local target gets.
pub(super) fn target_launch(
    experiment: &Experiment,
    spec: &TargetSpec,
    env: &BTreeMap<String, String>,
    db: &str,
    upstream: &Upstream,
) -> Launch {
    let file = &experiment.file;
    let mut launch = Launch::new(spec.run_name())
        .env("DATABASE_URL", db)
        .env("UPSTREAM_URL", upstream.url())
        .env("SECRET", SECRET);
    if let Some(pool) = file.database.pool {
        launch = launch.env("DB_POOL", pool.to_string());
    }
    if let Some(t) = file.database.timeout_ms {
        launch = launch.env("DB_TIMEOUT_MS", t.to_string());
    }
    for (k, v) in env {
        launch = launch.env(k, v.clone());
    }
    launch.cpus = file.placement.target_cpus.as_ref().map(ToString::to_string);
    launch.cpu_quota = spec.cpus;
    launch.memory = spec
        .memory
        .as_deref()
        .and_then(|m| crate::limits::parse_bytes(m).ok());
    launch
}

/// Checks every target of the plan against the contract; a local one is started for it.
pub(super) async fn verify_targets(
    experiment: &Experiment,
    names: &[String],
    db: Option<&str>,
    upstream: &Upstream,
) -> Vec<Verification> {
    let dir = crate::targets::directory();
    let mut out = Vec::new();
    for name in names {
        let Some(spec) = experiment.file.targets.iter().find(|t| &t.name == name) else {
            continue;
        };
        let checks = match &spec.url {
            Some(url) => {
                let expect = Expect {
                    database_url: None,
                    secret: None,
                    upstream_body: None,
                };
                Ok(verify::verify(url.trim_end_matches('/'), &expect).await)
            }
            None => match (&dir, db) {
                (Ok(dir), Some(db)) => {
                    let launch = target_launch(experiment, spec, &spec.env, db, upstream);
                    match Target::start(dir, &launch).await {
                        Ok(target) => {
                            let expect = Expect {
                                database_url: Some(db.to_string()),
                                secret: Some(SECRET.into()),
                                upstream_body: Some(upstream.body.clone()),
                            };
                            let verdict = verify::verify(&target.base_url(), &expect).await;
                            let _ = target.stop(Duration::from_secs(15)).await;
                            Ok(verdict)
                        }
                        Err(e) => Err(e.to_string()),
                    }
                }
                (Err(e), _) => Err(e.to_string()),
                (_, None) => Err("no database".into()),
            },
        };
        let v = match checks {
            Ok(verdict) => Verification {
                target: name.clone(),
                passed: verdict.passed(),
                checks: verdict
                    .checks
                    .iter()
                    .map(|c| (c.name.to_string(), c.outcome.clone()))
                    .collect(),
            },
            Err(why) => Verification {
                target: name.clone(),
                passed: false,
                checks: vec![("start".into(), Outcome::Failed(why))],
            },
        };
        eprintln!(
            "Verified {name} against targets/CONTRACT.md: {}",
            if v.passed {
                "passed".to_string()
            } else {
                format!("FAILED ({}): it will not be measured", failures(&v))
            }
        );
        out.push(v);
    }
    out
}

pub(super) fn failures(v: &Verification) -> String {
    v.checks
        .iter()
        .filter_map(|(c, o)| match o {
            Outcome::Failed(why) => Some(format!("{c}: {why}")),
            _ => None,
        })
        .collect::<Vec<_>>()
        .join("; ")
}
