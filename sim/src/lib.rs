//! mcpsim: the sans-IO machines of `mcpsim-model` run as actors on madsim, with fault plans,
//! traces, studies over many runs, and the command line.
//!
//! The folders are the architecture; dependencies point one way:
//! `cli` → [`studies`] / [`report`] → [`engine`] / [`scenario`] → `mcpsim-model`.
//!
//! - [`scenario`]: what a run is: families, profiles, settable keys and their validation, and
//!   the fault plan ([`scenario::faults`]).
//! - [`engine`]: one seeded run on the calling thread ([`run`]), returning its trace and verdict.
//! - [`studies`]: search and shrinking, sweeps, advice, the compatibility matrix, the benchmark.
//! - [`report`]: timelines, sequence diagrams and plots of traces and studies.
//! - `cli`: the commands of the `mcpsim` binary.

#![warn(missing_docs)]

#[cfg(not(madsim))]
compile_error!(
    "mcpsim simulates on madsim and must be built with `--cfg madsim`: put `[build] rustflags = [\"--cfg\", \"madsim\"]` in your .cargo/config.toml (see mcpsim's README, \"mcpsim as a library\")"
);

#[cfg(all(madsim, feature = "cli"))]
pub mod cli;
#[cfg(madsim)]
pub mod engine;
#[cfg(madsim)]
pub mod error;
#[cfg(madsim)]
pub mod report;
#[cfg(madsim)]
pub mod scenario;
#[cfg(madsim)]
pub mod studies;

#[cfg(madsim)]
pub use engine::runner::{run, RunOutcome};
#[cfg(madsim)]
pub use error::SimError;
#[cfg(madsim)]
pub use scenario::Scenario;
