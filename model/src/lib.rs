//! The MCP Streamable HTTP transport as plain state machines (sans-IO).
//!
//! Nothing here performs I/O, reads a clock or draws randomness of its own: time comes in as a
//! `now: Instant` argument, entropy as a seed, input as method calls, and every effect leaves as
//! an output value to be polled. The simulator (`mcpsim`) drives these machines on madsim; unit
//! tests drive them directly.
//!
//! - [`server::Server`], [`client::Client`], [`lb::LoadBalancer`]: the machines.
//! - [`decision`]: the design note's decision procedure for a closed stream.
//! - [`config`] and [`profiles`]: policies as data, and the named profiles.
//! - [`schedule`]: reconnect schedules and the retention bounds they imply.
//! - [`era`]: the protocol era of each request (2025-11-25 or 2026-07-28); [`tasks`]: the Tasks
//!   extension's store.
//! - [`trace`]: the trace schema; [`oracle`]: the invariants, judged over a trace.
//! - [`testing`]: the three machines wired together in memory, without madsim.

#![warn(missing_docs)]

pub mod client;
pub mod config;
pub mod decision;
pub mod era;
pub mod http;
pub mod ids;
pub mod lb;
pub mod oracle;
pub mod profiles;
pub mod rng;
pub mod schedule;
pub mod server;
pub mod sse;
pub mod subscriptions;
pub mod tasks;
pub mod testing;
pub mod time;
pub mod trace;

pub use time::Instant;
