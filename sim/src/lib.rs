//! mcpsim: the sans-IO machines of `mcpsim-model` run as actors on madsim, with fault plans,
//! traces and the command line.
//!
//! - [`scenario`]: scenario families, profiles and the settable keys; [`faults`]: the fault plan.
//! - [`runner::run`]: one seeded simulation on the calling thread, returning its trace and verdict.
//! - [`search`]: proptest strategies (swarm testing) and shrinking.
//! - [`cli`]: the commands of the `mcpsim` binary; [`timeline`]: traces as readable text.

mod actors;
pub mod advise;
pub mod bench;
pub mod cli;
pub mod diagram;
pub mod error;
pub mod faults;
pub mod logging;
pub mod matrix;
pub mod net;
pub mod plot;
pub mod recorder;
pub mod run_thread;
pub mod runner;
pub mod scenario;
pub mod search;
pub mod stats;
pub mod sweep;
pub mod timeline;

pub use error::SimError;
pub use runner::{run, RunOutcome};
pub use scenario::Scenario;
