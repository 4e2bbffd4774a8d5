//! mcpsim: the sans-IO machines of `mcpsim-model` run as actors on madsim, with fault plans,
//! traces and the command line.

pub mod diagram;
pub mod error;
pub mod faults;
pub mod scenario;

pub use error::SimError;
pub use scenario::Scenario;
pub mod timeline;
