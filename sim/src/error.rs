//! Errors of the simulator and its command line: every one is a message a user can act on, on
//! one line: what the user typed or a file held is echoed escaped ([`escape`]), so a newline or a
//! control character in it cannot break the line or the terminal.

use std::fmt;
use thiserror::Error;

/// What can go wrong before or around a run. Violations are not errors: they are results.
#[derive(Debug, Error)]
pub enum SimError {
    /// A `--client`, `--server` or load-balancer name that is neither a built-in profile nor a
    /// file.
    #[error("unknown {role} profile {name:?} (known: {known})")]
    UnknownProfile {
        /// `client`, `server` or `lb`.
        role: &'static str,
        /// The name as given.
        name: String,
        /// The built-in names of that role, comma-separated.
        known: String,
    },
    /// A `--scenario` that names no family.
    #[error("unknown scenario {name:?} (known: {known})")]
    UnknownScenario {
        /// The name as given.
        name: String,
        /// The family names, comma-separated.
        known: String,
    },
    /// A `--set` or `--vary` key that no setting or serde path answers to.
    #[error("unknown key {key:?} (known: {known})")]
    UnknownKey {
        /// The key as given.
        key: String,
        /// The short keys, comma-separated.
        known: String,
    },
    /// A `--set` argument without `=`.
    #[error("--set {0:?} is not key=value")]
    BadOverride(String),
    /// A value its key cannot read (`server.keepalive=soon`).
    #[error("{}={}: {}", Esc(.key), Esc(.value), Esc(.problem))]
    BadValue {
        /// The key (or environment variable) set.
        key: String,
        /// The value as given.
        value: String,
        /// Why it cannot be read.
        problem: String,
    },
    /// A scenario asks for something the simulator refuses (`Scenario::validate`).
    #[error("{}: {}", Esc(.key), Esc(.problem))]
    Invalid {
        /// The key of the offending field, as `--set` would name it.
        key: String,
        /// The rule it breaks.
        problem: String,
    },
    /// A profile file that cannot be read as one: `FILE:LINE:COL: message`.
    #[error(transparent)]
    Profile(#[from] mcpsim_model::profiles::ProfileError),
    /// A file or directory that cannot be read or written.
    #[error("{}: {}", Esc(.path), Esc(.problem))]
    Io {
        /// The file or directory.
        path: String,
        /// The operating system's reason.
        problem: String,
    },
    /// A trace file that is not a trace (bad JSON, a missing header, an unknown version).
    #[error("{}: {}", Esc(.path), Esc(&.source.to_string()))]
    Trace {
        /// The trace file.
        path: String,
        /// What the trace parser found.
        #[source]
        source: mcpsim_model::trace::TraceError,
    },
    /// A trace whose header holds a scenario this simulator cannot run again.
    #[error("{}: the trace header's scenario cannot be run: {}", Esc(.path), Esc(.problem))]
    BadScenario {
        /// The trace file.
        path: String,
        /// Why its scenario is refused.
        problem: String,
    },
    /// A run recorded more steps than its budget allows: a setting made it too busy (an event
    /// every microsecond) or too long for its activity. Never a verdict on the protocol.
    #[error(
        "seed {seed}: the run was stopped at its step budget ({max_steps} steps, reached at {at} simulated): \
         a setting makes it too busy or too long; raise the budget with {var}=N if this is intended"
    )]
    OverBudget {
        /// The run's seed.
        seed: u64,
        /// The budget it reached.
        max_steps: u64,
        /// The simulated time it reached it at, written as traces write times.
        at: String,
        /// The environment variable that raises the budget.
        var: &'static str,
    },
    /// The simulation itself failed: a panic inside a run, or a runtime that could not start. A
    /// bug in mcpsim, not a verdict on the protocol.
    #[error("the simulation failed: {}", Esc(.0))]
    Runtime(String),
    /// Arguments that make no sense together (no seeds, a threshold outside [0, 1], a scenario
    /// the engine cannot run).
    #[error("{}", Esc(.0))]
    Usage(String),
}

/// Shows a string with its control characters escaped (`\n`, `\t`, `\u{1b}`, …) and everything
/// else as it is: for text echoed from input into a one-line message.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Esc<'a>(pub &'a str);

impl fmt::Display for Esc<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for c in self.0.chars() {
            if c.is_control() {
                write!(f, "{}", c.escape_default())?;
            } else {
                write!(f, "{c}")?;
            }
        }
        Ok(())
    }
}

/// Shows a string with its control characters escaped (`\n`, `\t`, `\u{1b}`, …) and everything
/// else as it is: for text echoed from input into a one-line message.
pub fn escape(text: &str) -> String {
    Esc(text).to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn control_characters_are_escaped_and_the_rest_kept() {
        assert_eq!(escape("a\nb\tc\u{1b}[31m é ×"), "a\\nb\\tc\\u{1b}[31m é ×");
        let e = SimError::Io { path: "x\ny".into(), problem: "bad\r\n".into() };
        assert_eq!(e.to_string(), "x\\ny: bad\\r\\n");
        let e = SimError::BadValue { key: "k".into(), value: "1\n2".into(), problem: "no".into() };
        assert_eq!(e.to_string().lines().count(), 1);
    }
}
