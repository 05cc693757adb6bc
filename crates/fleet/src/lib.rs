//! `fleet`: several gun hosts as one generator, and the seam every generator is fired through.
//!
//! A cell's rate is split across the guns, every gun starting at one instant, each writing its
//! shard of the cell's run group to the shared PostgreSQL store, where the shards merge exactly
//! (`store::group`). How a gun is reached is a [`Transport`] (OpenSSH, [`ssh`], is the first);
//! what is said to it is not the transport's: every exchange is an [`order::GunRequest`], one
//! JSON line on the standard input of `loadgen gun` there, over a session of its [`Link`].
//! Nothing but `loadgen gun` is on a remote command line, and everything secret travels in the
//! request. Standard input stays open for the whole attack: when it closes (the runner stopped
//! it, or the link was lost) the gun stops its attack as Ctrl-C would.
//!
//! Before the first cell, [`prepare()`] makes every gun ready: the same `loadgen` build (its
//! SHA-256 compared; this machine's installed where the gun's differs), the gun's clock
//! measured against this one (NTP's way: the reply with the shortest round trip; kept, and
//! corrected for in each shard's start), its CPUs checked, the target reached from it. A gun
//! that fails any of these is refused, with why, before anything runs. The second transport,
//! [`kubernetes`], is a module beside [`ssh`] implementing [`Transport`], [`Link`] and
//! `Backend` (what it checks before anything is opened, and how it is opened), a
//! variant of [`order::GunHosts`] and one arm of `backend::backend`, the crate's one match on
//! the variants: the rest is written once, and no other crate matches on the variants.
//! A link implements only what its transport does: forwarding a port, installing a build and
//! a link's own failures have defaults for a transport without them.
//!
//! The crate prints nothing and reads no variable of its own (the processes it starts are
//! given an environment built by `custody` from this one's): what it does is told to the
//! caller (the preparation's [`Progress`]; a pod's agent calls back once welcomed), and what
//! the caller's environment says comes in as values ([`Settings`], [`find_loadgen`]'s
//! `asked`, the pod's index given to [`kubernetes::agent`]).
//!
//! Modules:
//!
//! - [`transport`]: the [`Transport`] and [`Link`] traits (a gun opened; a session running
//!   `loadgen gun` there; the build found or installed; a port forwarded), and the `Backend`
//!   trait each transport implements: what it checks before anything is opened, and the
//!   transport opened.
//! - `backend`: the one place a transport is chosen from an order's guns (`backend`, the one
//!   match on `order::GunHosts`), above the transports.
//! - `prepare`: the guns checked, resolved, opened and made ready, cancellable, their progress
//!   (and what their transport says meanwhile: a Job's pods awaited, a pod refused) told to the
//!   caller's callback ([`prepare()`], [`Progress`]).
//! - `preparing`: what the guns are made ready from ([`Preparing`]) and what the caller's
//!   environment says of the guns' files, passed in as values ([`Settings`]), below the
//!   preparation and the transports.
//! - `progress`: what the preparation and the transports tell the caller as they go
//!   ([`Progress`]), below both.
//! - `ready`: one gun made ready over its link: its build checked (or installed), its clock
//!   measured, all by `GunRequest` ([`ReadyGun`], [`build_of`], [`CLOCK_TOLERANCE`]).
//! - `volley`: the guns, ready ([`Fleet`]): an order fired from every gun as shards of one run
//!   group ([`Shot`]), or from the first alone; a port forwarded through the first.
//! - [`firing`]: the [`Firing`] trait, what fires an order (this machine's generator, the guns,
//!   both, or a test's fake), and its implementations.
//! - `local`: this machine's `loadgen order`, told its order on its standard input ([`Local`]),
//!   for the runner (its output read) and for a gun's `loadgen gun` (its output relayed).
//! - `fired`: what one generator's run came to ([`Fired`]).
//! - `error`: [`FleetError`] (a transport's own error carried as a `TransportError`, so that it
//!   names no transport), [`GunFault`], [`ClockFault`], [`ShotError`]; at the bottom of the
//!   crate, reached by every module without climbing.
//! - `said`: the last line of what a command or a session said, and milliseconds in words.
//! - [`ssh`]: the first transport, OpenSSH: one multiplexed connection a gun, the hardening,
//!   and the guns of a lab (Terraform's outputs, the twin).
//! - [`kubernetes`]: the second transport, the pods of one Indexed Job the runner renders
//!   (`render`), each dialling back to the runner over TLS with the sitting's token
//!   (`rendezvous`, `wire`), its sessions channels of that one connection (`link`); the pod's
//!   side, `loadgen gun --dial`, is `agent`.
//! - `tests` (tests only): a second transport in one file, its guns tasks of this process
//!   answering `GunRequest`s, made ready and fired by the same code as SSH's.

mod backend;
mod error;
mod fired;
pub mod firing;
pub mod kubernetes;
mod local;
mod prepare;
mod preparing;
mod progress;
mod ready;
mod said;
pub mod ssh;
pub mod transport;
mod volley;

#[cfg(test)]
mod tests;

pub use error::{ClockFault, FleetError, GunFault, ShotError, TransportError};
pub use fired::Fired;
pub use firing::{Firing, Hosts};
pub use local::{find_loadgen, tethered, Local, Output, Ran};
pub use prepare::{check, needs_shared_store, prepare, prepare_over};
pub use preparing::{Preparing, Settings};
pub use progress::Progress;
pub use ready::{build_of, ReadyGun, CLOCK_TOLERANCE};
pub use transport::{Link, Session, Transport};
pub use volley::{Fleet, Shot};
