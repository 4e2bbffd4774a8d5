//! Trace files and the commands printed beside them: naming, reading, writing and diffing
//! traces, and the command line that replays a run.

use crate::error::SimError;
use crate::report::timeline;
use crate::scenario::Scenario;
use mcpsim_model::trace::{fnv1a, step_line, Header, Trace, FNV_OFFSET};
use std::fs;
use std::path::Path;

/// Writes a text file, creating its directory.
/// How the user invokes this binary, for the commands we print: `cargo run` from a checkout,
/// `mcpsim` once installed.
pub fn program() -> String {
    let exe = std::env::current_exe().map(|p| p.to_string_lossy().into_owned()).unwrap_or_default();
    if exe.contains("/target/release/") {
        "cargo run --release -p mcpsim --".to_string()
    } else if exe.contains("/target/debug/") {
        "cargo run -p mcpsim --".to_string()
    } else {
        "mcpsim".to_string()
    }
}

/// The command that re-runs one seed of a scenario.
pub fn replay_command(scenario: &Scenario, seed: u64) -> String {
    format!("{} run {} --seed {seed}", program(), scenario.cli_args())
}

pub fn write_file(path: &Path, text: &str) -> Result<(), SimError> {
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        fs::create_dir_all(dir)
            .map_err(|e| SimError::Io { path: dir.display().to_string(), problem: e.to_string() })?;
    }
    fs::write(path, text).map_err(|e| SimError::Io { path: path.display().to_string(), problem: e.to_string() })
}

/// Fails early, before any run, if `path` cannot be written.
pub fn check_writable(path: &Path) -> Result<(), SimError> {
    let dir = path.parent().filter(|d| !d.as_os_str().is_empty()).unwrap_or(Path::new("."));
    fs::create_dir_all(dir).map_err(|e| SimError::Io { path: dir.display().to_string(), problem: e.to_string() })?;
    if dir.metadata().map(|m| m.permissions().readonly()).unwrap_or(true) {
        return Err(SimError::Io { path: dir.display().to_string(), problem: "directory is not writable".into() });
    }
    Ok(())
}

/// The file name a found counterexample is saved under: invariant, profiles, family and a short
/// hash of seed, overrides and steps (two counterexamples of one family differ in one of those).
pub fn trace_file_name(scenario: &Scenario, invariant: &str, seed: u64, trace: &Trace) -> String {
    let (digest, _) = trace.digest();
    let mut h = fnv1a(FNV_OFFSET, &seed.to_le_bytes());
    h = fnv1a(h, scenario.cli_args().as_bytes());
    h = fnv1a(h, digest.as_bytes());
    format!("{invariant}--{}--{}--{}--{:08x}.jsonl", scenario.client.name, scenario.server.name, scenario.name, h >> 32)
}

/// Reads and validates a trace file.
pub fn read_trace(path: &Path) -> Result<Trace, SimError> {
    let text = fs::read_to_string(path)
        .map_err(|e| SimError::Io { path: path.display().to_string(), problem: e.to_string() })?;
    Trace::parse(&text).map_err(|source| SimError::Trace { path: path.display().to_string(), source })
}

/// Reads only a trace file's header, of any schema: enough to run it again.
pub fn read_header(path: &Path) -> Result<Header, SimError> {
    let text = fs::read_to_string(path)
        .map_err(|e| SimError::Io { path: path.display().to_string(), problem: e.to_string() })?;
    Trace::parse_header(&text).map_err(|source| SimError::Trace { path: path.display().to_string(), source })
}

/// The scenario recorded in a trace header.
pub fn recorded_scenario(path: &Path, trace: &Trace) -> Result<Scenario, SimError> {
    scenario_in_header(path, &trace.header)
}

/// The scenario a header records.
pub fn scenario_in_header(path: &Path, header: &Header) -> Result<Scenario, SimError> {
    let value = header.scenario.get("scenario").cloned().ok_or_else(|| SimError::BadScenario {
        path: path.display().to_string(),
        problem: "no \"scenario\" field".into(),
    })?;
    let scenario: Scenario = serde_json::from_value(value)
        .map_err(|e| SimError::BadScenario { path: path.display().to_string(), problem: e.to_string() })?;
    scenario
        .validate()
        .map_err(|e| SimError::BadScenario { path: path.display().to_string(), problem: e.to_string() })?;
    Ok(scenario)
}

/// Where two traces first differ, in words; `None` if their steps and footers are identical.
pub fn first_difference(recorded: &Trace, replayed: &Trace) -> Option<String> {
    for (i, (a, b)) in recorded.steps.iter().zip(&replayed.steps).enumerate() {
        if a != b {
            // The timeline rounds times to the millisecond: show the raw lines when it hides the
            // difference.
            let (mut ra, mut rb) = (timeline::line(a), timeline::line(b));
            if ra == rb {
                (ra, rb) = (step_line(a), step_line(b));
            }
            return Some(format!("step {i} differs:\n  recorded: {ra}\n  replayed: {rb}"));
        }
    }
    if recorded.steps.len() != replayed.steps.len() {
        return Some(format!("recorded {} steps, replayed {}", recorded.steps.len(), replayed.steps.len()));
    }
    if recorded.footer != replayed.footer {
        return Some("same steps but a different verdict (the oracles changed)".to_string());
    }
    None
}
