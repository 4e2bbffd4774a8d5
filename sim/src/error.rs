//! Errors of the simulator and its command line: every one is a message a user can act on, on
//! one line: what the user typed or a file held is echoed through [`Esc`], so a newline or a
//! control character in it cannot break the line or the terminal.

use std::fmt;
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
    #[error("{}={}: {}", Esc(.key), Esc(.value), Esc(.problem))]
    BadValue { key: String, value: String, problem: String },
    /// A scenario asks for something the simulator refuses (`Scenario::validate`).
    #[error("{}: {}", Esc(.key), Esc(.problem))]
    Invalid { key: String, problem: String },
    /// A profile file that cannot be read as one: `FILE:LINE:COL: message`.
    #[error(transparent)]
    Profile(#[from] mcpsim_model::profiles::ProfileError),
    #[error("{}: {}", Esc(.path), Esc(.problem))]
    Io { path: String, problem: String },
    #[error("{}: {}", Esc(.path), Esc(&.source.to_string()))]
    Trace {
        path: String,
        #[source]
        source: mcpsim_model::trace::TraceError,
    },
    #[error("{}: the trace header's scenario cannot be run: {}", Esc(.path), Esc(.problem))]
    BadScenario { path: String, problem: String },
    /// A run recorded more steps than its budget allows: a setting made it too busy (an event
    /// every microsecond) or too long for its activity. Never a verdict on the protocol.
    #[error(
        "seed {seed}: the run was stopped at its step budget ({max_steps} steps, reached at {at} simulated): \
         a setting makes it too busy or too long; raise the budget with {var}=N if this is intended"
    )]
    OverBudget { seed: u64, max_steps: u64, at: String, var: &'static str },
    #[error("the simulation failed: {}", Esc(.0))]
    Runtime(String),
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

/// [`Esc`] as an owned string.
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
