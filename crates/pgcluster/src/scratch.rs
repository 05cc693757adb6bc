//! A fresh, empty database of one's own: on the server named by `SHOWDOWN_TEST_POSTGRES_URL`
//! when it is set (the test script starts one server for the whole run, so that each test does
//! not pay for an `initdb`), else on a cluster of its own that lives as long as the value.

use std::process::Command;
use std::sync::atomic::{AtomicU32, Ordering};

use crate::{tools, Cluster, Error, Options};

/// The variable naming a shared server to make scratch databases on.
pub const SHARED_SERVER: &str = "SHOWDOWN_TEST_POSTGRES_URL";

/// A database of one's own; its cluster, if it has one of its own, goes when it is dropped.
#[derive(Debug)]
pub struct Scratch {
    /// A URL to the new database.
    pub url: String,
    cluster: Option<Cluster>,
}

impl Scratch {
    /// A new, empty database.
    pub fn new() -> Result<Scratch, Error> {
        static SERIAL: AtomicU32 = AtomicU32::new(0);
        let name = format!(
            "t_{}_{}_{}",
            std::process::id(),
            SERIAL.fetch_add(1, Ordering::Relaxed),
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map(|d| d.subsec_nanos())
                .unwrap_or(0)
        );
        match std::env::var(SHARED_SERVER) {
            Ok(server) => {
                let mut psql = Command::new(tools::find("psql")?);
                psql.args(["-X", "-q", "-v", "ON_ERROR_STOP=1", "-d"])
                    .arg(&server)
                    .arg("-c")
                    .arg(format!("CREATE DATABASE \"{name}\""));
                tools::run(psql, "create a scratch database")?;
                let base = server.rsplit_once('/').map_or(server.as_str(), |(b, _)| b);
                Ok(Scratch {
                    url: format!("{base}/{name}"),
                    cluster: None,
                })
            }
            Err(_) => {
                let cluster = Cluster::start(&Options::default())?;
                cluster.create_database(&name)?;
                Ok(Scratch {
                    url: cluster.url(&name),
                    cluster: Some(cluster),
                })
            }
        }
    }

    /// The cluster of its own, when no shared server was named.
    pub fn cluster(&self) -> Option<&Cluster> {
        self.cluster.as_ref()
    }
}
