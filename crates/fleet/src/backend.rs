//! The one place a transport is chosen from an order's guns: [`backend`] turns the guns'
//! `order::GunHosts` into their transport's [`Backend`] (its fields borrowed), which says what
//! can be checked before anything is opened and opens the transport. A transport is a module
//! implementing [`Transport`], [`Link`](crate::Link) and [`Backend`], a variant of
//! `order::GunHosts` and one arm of [`backend`]: no other code of the crate matches on the
//! variants.

use tokio::sync::mpsc;

use crate::error::FleetError;
use crate::prepare::Preparing;
use crate::progress::Progress;
use crate::transport::Transport;

/// One transport's side of an order's guns, before anything is opened.
pub(crate) trait Backend {
    /// What can be checked of the guns before anything is opened (what serde cannot): nothing
    /// is read but what the order says.
    fn check(&self) -> Result<(), FleetError>;

    /// The transport opened: the guns resolved (a lab read from `preparing.dir`, with
    /// `preparing.settings`), ready for each gun's link to be opened; what it tells while the
    /// guns are made ready goes to `told`.
    fn open(
        &self,
        preparing: Preparing<'_>,
        told: mpsc::UnboundedSender<Progress>,
    ) -> Result<Box<dyn Transport>, FleetError>;
}

/// The backend of the transport `hosts` names, borrowing its fields: the only match on the
/// variants of `order::GunHosts` in the crate.
pub(crate) fn backend(hosts: &order::GunHosts) -> Box<dyn Backend + '_> {
    match hosts {
        order::GunHosts::Ssh {
            destinations,
            config,
            from,
            terraform_dir,
        } => Box::new(crate::ssh::SshBackend {
            destinations,
            config: config.as_deref(),
            from: *from,
            terraform_dir: terraform_dir.as_deref(),
        }),
        order::GunHosts::Kubernetes(spec) => Box::new(crate::kubernetes::KubeBackend(spec)),
    }
}
