//! `mcpsim probe`: the simulator's questions asked of real servers and clients over loopback.
//!
//! The parts, each depending only on those listed before it:
//!
//! | part | what it is |
//! |---|---|
//! | [`error`], [`target`], [`limits`] | what can stop a probe; the URL; the bounds on what a server can make it hold |
//! | [`proxy`] | the fault-injecting TCP proxy (toxics driven by the simulator's fault vocabulary) |
//! | [`recorder`] | the scripted HTTP client, its SSE parser, and the recorder that turns what it saw into a trace in the simulator's schema |
//! | [`fingerprint`] | the `ServerPolicy` fields a probe decided, written as a TOML profile |
//! | [`server`] | `probe server`: the scenarios against a real server, the keep-alive measurement, the verdicts |
//! | [`standin`] | a stand-in MCP server of known behaviour (client runs, and the server probe's tests) |
//! | [`client`] | `probe client`: a real client against the stand-in behind a tap that injects each run's fault |
//! | [`reality`] | `probe reality`: the SDK fixtures probed, every scenario and run mirrored in the simulator |
//!
//! Nothing here is reachable from a simulated run: it uses real tokio sockets and the wall
//! clock, and the engine does not import it. It refuses non-loopback URLs unless allowed,
//! bounds every request and every loop, and stops by itself.

pub mod client;
pub mod error;
pub mod fingerprint;
pub mod limits;
pub mod proxy;
pub mod reality;
pub mod recorder;
pub mod server;
pub mod standin;
pub mod target;

pub use error::ProbeError;
pub use fingerprint::KnownFieldDifference;
pub use server::run::{
    probe_async, probe_server, read_profile, verdict_table, ProbeOptions, ProbeReport, ScenarioReport,
};
pub use target::{parse_target, Target};
