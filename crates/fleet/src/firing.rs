//! [`Firing`]: what fires an order, the seam between what decides the load (the experiment
//! runner's cells, a capacity search's steps) and the generators: this machine's `loadgen
//! order` ([`Local`]), the guns ([`Fleet`]), this machine's for searches and the guns for every
//! other attack ([`Hosts`]), or a test's fake.

use std::time::Duration;

use order::Order;
use tokio::sync::watch;

use crate::error::FleetError;
use crate::fired::Fired;
use crate::local::{Local, Output};
use crate::volley::{Fleet, Shot};

/// What fires an order.
#[allow(async_fn_in_trait)]
pub trait Firing {
    /// How many guns a volley is fired from (0: none).
    fn count(&self) -> usize;
    /// The guns a search's order names, so that its own generator fires its steps from them;
    /// `Some` also means that warm-ups and measured runs are volleys.
    fn guns(&self) -> Option<order::Guns>;
    /// `order` from one generator, unsharded: this machine's ([`Local`], [`Hosts`]), or the
    /// first gun alone ([`Fleet`]: a search's trickle). `stop` turning true interrupts it.
    async fn one(&self, order: &Order, stop: watch::Receiver<bool>) -> Result<Fired, FleetError>;
    /// `order` from every gun, as shards of the run group `group` (see [`Fleet::volley`]).
    async fn volley(
        &self,
        order: &Order,
        group: &str,
        stop: watch::Receiver<bool>,
        length: Option<Duration>,
    ) -> Result<Vec<Shot>, FleetError>;
}

impl Firing for Local {
    fn count(&self) -> usize {
        0
    }

    fn guns(&self) -> Option<order::Guns> {
        None
    }

    async fn one(
        &self,
        order: &Order,
        mut stop: watch::Receiver<bool>,
    ) -> Result<Fired, FleetError> {
        let stopped = async move {
            // A runner gone is a stop too.
            let _ = stop.wait_for(|s| *s).await;
        };
        let ran = self.run(order, Output::Read, stopped).await?;
        Ok(Fired::of(&ran.stdout, &ran.stderr, ran.code))
    }

    async fn volley(
        &self,
        _order: &Order,
        _group: &str,
        _stop: watch::Receiver<bool>,
        _length: Option<Duration>,
    ) -> Result<Vec<Shot>, FleetError> {
        Err(FleetError::NoGuns)
    }
}

impl Firing for Fleet {
    fn count(&self) -> usize {
        Fleet::count(self)
    }

    fn guns(&self) -> Option<order::Guns> {
        Some(Fleet::guns(self))
    }

    async fn one(&self, order: &Order, stop: watch::Receiver<bool>) -> Result<Fired, FleetError> {
        self.single(order, stop).await
    }

    async fn volley(
        &self,
        order: &Order,
        group: &str,
        stop: watch::Receiver<bool>,
        length: Option<Duration>,
    ) -> Result<Vec<Shot>, FleetError> {
        Fleet::volley(self, order, group, stop, length).await
    }
}

/// This machine's generator (for searches, which fire their steps from the guns themselves)
/// and the gun hosts (for every other attack).
#[derive(Debug)]
pub struct Hosts<'a> {
    pub local: &'a Local,
    pub fleet: &'a Fleet,
}

impl Firing for Hosts<'_> {
    fn count(&self) -> usize {
        self.fleet.count()
    }

    fn guns(&self) -> Option<order::Guns> {
        Some(self.fleet.guns())
    }

    async fn one(&self, order: &Order, stop: watch::Receiver<bool>) -> Result<Fired, FleetError> {
        self.local.one(order, stop).await
    }

    async fn volley(
        &self,
        order: &Order,
        group: &str,
        stop: watch::Receiver<bool>,
        length: Option<Duration>,
    ) -> Result<Vec<Shot>, FleetError> {
        self.fleet.volley(order, group, stop, length).await
    }
}
