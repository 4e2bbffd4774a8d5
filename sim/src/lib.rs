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

pub mod cli;
pub mod engine;
pub mod error;
pub mod probe;
pub mod report;
pub mod scenario;
pub mod studies;

pub use engine::runner::{run, RunOutcome};
pub use error::SimError;
pub use scenario::Scenario;
