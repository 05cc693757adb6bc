//! The one place a transport is chosen from an order's guns: [`backend`] turns the guns'
//! `order::GunHosts` into their transport's [`Backend`] (its fields borrowed), which says what
//! can be checked before anything is opened and opens the transport. A transport is a module
//! implementing [`Transport`](crate::Transport), [`Link`](crate::Link) and [`Backend`], a variant of
//! `order::GunHosts` and one arm of [`backend`]: no other code of the crate matches on the
//! variants.

use crate::transport::Backend;

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
