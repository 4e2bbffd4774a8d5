//! mcpsim: the sans-IO machines of `mcpsim-model` run as actors on madsim, with fault plans,
//! traces and the command line.

pub mod error;
pub mod faults;
pub mod scenario;

mod actors;
pub mod logging;
pub mod net;
pub mod recorder;
pub mod runner;

pub use error::SimError;
pub use runner::{run, RunOutcome};
pub use scenario::Scenario;
pub mod advise;
pub mod plot;
pub mod stats;
pub mod sweep;
pub mod timeline;
