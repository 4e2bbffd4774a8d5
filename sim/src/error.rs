//! Errors of the simulator and its command line: every one is a message a user can act on.

use thiserror::Error;

/// What can go wrong before or around a run. Violations are not errors: they are results.
#[derive(Debug, Error)]
pub enum SimError {
    #[error("unknown {role} profile {name:?} (known: {known})")]
    UnknownProfile { role: &'static str, name: String, known: String },
    #[error("unknown scenario {name:?} (known: {known})")]
    UnknownScenario { name: String, known: String },
    #[error("unknown key {key:?} (known: {known})")]
    UnknownKey { key: String, known: String },
    #[error("--set {0:?} is not key=value")]
    BadOverride(String),
    #[error("{key}={value}: {problem}")]
    BadValue { key: String, value: String, problem: String },
    /// A scenario asks for something the simulator refuses (`Scenario::validate`).
    #[error("{key}: {problem}")]
    Invalid { key: String, problem: String },
    /// A profile file that cannot be read as one: `FILE:LINE:COL: message`.
    #[error(transparent)]
    Profile(#[from] mcpsim_model::profiles::ProfileError),
    #[error("{path}: {problem}")]
    Io { path: String, problem: String },
    #[error("{path}: {source}")]
    Trace { path: String, source: mcpsim_model::trace::TraceError },
    #[error("{path}: the trace header's scenario cannot be read: {problem}")]
    BadScenario { path: String, problem: String },
    #[error("the simulation failed: {0}")]
    Runtime(String),
    #[error("{0}")]
    Usage(String),
}
