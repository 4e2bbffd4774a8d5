//! Trace files and the commands printed beside them: naming, reading, writing and diffing
//! traces, and the command line that replays a run.

use crate::engine::runner::runnable;
use crate::error::SimError;
use crate::report::timeline;
use crate::scenario::Scenario;
use mcpsim_model::trace::{fnv1a, step_line, Header, Trace, FNV_OFFSET};
use std::fs;
use std::io::Read;
use std::path::Path;

/// How the user invokes this binary, for the commands we print: `cargo run` from a checkout,
/// `mcpsim` once installed.
pub(crate) fn program() -> String {
    let exe = std::env::current_exe().map(|p| p.to_string_lossy().into_owned()).unwrap_or_default();
    if exe.contains("/target/release/") {
        "cargo run --release -p mcpsim --".to_string()
    } else if exe.contains("/target/debug/") {
        "cargo run -p mcpsim --".to_string()
    } else {
        "mcpsim".to_string()
    }
}

/// The command that re-runs one seed of a scenario, every argument quoted the way a POSIX shell
/// reads it back (`--set 'fault.partition=70s..80s, 3m..4m'`).
///
/// The command starts with how this program was invoked: `mcpsim`, or `cargo run -p mcpsim --`
/// from a checkout.
///
/// ```
/// use mcpsim::report::artifacts::replay_command;
///
/// let mut s = mcpsim::Scenario::build("long-tool", "naive", "reference")?;
/// s.apply_overrides(&[("fault.partition".into(), "70s..80s, 3m..4m".into())])?;
/// let command = replay_command(&s, 7);
/// assert!(
///     command.ends_with(
///         " run --client naive --server reference --scenario long-tool \
///          --set 'fault.partition=70s..80s, 3m..4m' --seed 7"
///     ),
///     "{command}"
/// );
/// # Ok::<(), mcpsim::SimError>(())
/// ```
pub fn replay_command(scenario: &Scenario, seed: u64) -> String {
    format!("{} run {} --seed {seed}", program(), quoted_cli_args(scenario))
}

/// The command that replays a trace file (its timeline, and the byte-for-byte comparison).
pub fn replay_file_command(path: &Path) -> String {
    format!("{} replay {}", program(), shell_quote(&path.display().to_string()))
}

/// The arguments that rebuild `scenario` (`--client … --set …`), quoted for a shell.
pub(crate) fn quoted_cli_args(scenario: &Scenario) -> String {
    let mut args = vec![
        "--client".to_string(),
        shell_quote(scenario.client_arg.as_deref().unwrap_or(&scenario.client.name)),
        "--server".to_string(),
        shell_quote(scenario.server_arg.as_deref().unwrap_or(&scenario.server.name)),
        "--scenario".to_string(),
        shell_quote(scenario.scenario_arg.as_deref().unwrap_or(&scenario.name)),
    ];
    // The recorded overrides, or those that rebuild a scenario edited in code (see `cli_args`).
    let sets = match scenario.replay_sets() {
        Ok(None) => scenario.overrides.clone(),
        Ok(Some(derived)) => derived,
        Err(field) => {
            let mut sets = scenario.overrides.clone();
            sets.push((crate::scenario::settings::UNREPLAYABLE.to_string(), field));
            sets
        }
    };
    for (k, v) in &sets {
        args.push("--set".to_string());
        args.push(shell_quote(&format!("{k}={v}")));
    }
    args.join(" ")
}

/// One argument as a POSIX shell reads it back: as it is when it is safe, else quoted.
pub(crate) fn shell_quote(arg: &str) -> String {
    // `key=value` with plain characters reads back as it is in every POSIX shell (shlex quotes any
    // `=`, for zsh's `=cmd` expansion at the start of a word only).
    let plain = |c: char| c.is_ascii_alphanumeric() || "_@%+=:,./-".contains(c);
    if !arg.is_empty() && !arg.starts_with('=') && arg.chars().all(plain) {
        return arg.to_string();
    }
    // Only a NUL byte cannot be quoted, and no argument a user can pass holds one.
    shlex::try_quote(arg).map(|q| q.into_owned()).unwrap_or_else(|_| format!("{arg:?}"))
}

/// Writes a text file, creating its directory.
pub fn write_file(path: &Path, text: &str) -> Result<(), SimError> {
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        fs::create_dir_all(dir)
            .map_err(|e| SimError::Io { path: dir.display().to_string(), problem: e.to_string() })?;
    }
    fs::write(path, text).map_err(|e| SimError::Io { path: path.display().to_string(), problem: e.to_string() })
}

/// Fails early, before any run, if `path` cannot be written.
pub(crate) fn check_writable(path: &Path) -> Result<(), SimError> {
    let dir = path.parent().filter(|d| !d.as_os_str().is_empty()).unwrap_or(Path::new("."));
    fs::create_dir_all(dir).map_err(|e| SimError::Io { path: dir.display().to_string(), problem: e.to_string() })?;
    if dir.metadata().map(|m| m.permissions().readonly()).unwrap_or(true) {
        return Err(SimError::Io { path: dir.display().to_string(), problem: "directory is not writable".into() });
    }
    Ok(())
}

/// The file name a found counterexample is saved under: invariant, profiles, family and a short
/// hash of seed, overrides and steps (two counterexamples of one family differ in one of those).
pub(crate) fn trace_file_name(scenario: &Scenario, invariant: &str, seed: u64, trace: &Trace) -> String {
    let (digest, _) = trace.digest();
    let mut h = fnv1a(FNV_OFFSET, &seed.to_le_bytes());
    h = fnv1a(h, scenario.cli_args().as_bytes());
    h = fnv1a(h, digest.as_bytes());
    format!(
        "{invariant}--{}--{}--{}--{:08x}.jsonl",
        scenario.client_label(),
        scenario.server.name,
        scenario.name,
        h >> 32
    )
}

/// The largest trace file read: far above any recorded run (the step budget keeps traces to a
/// few tens of MB), and a bound on what `replay /dev/urandom` can take.
pub const MAX_TRACE_BYTES: u64 = 64 * 1024 * 1024;

/// Reads and validates a trace file (at most [`MAX_TRACE_BYTES`]).
pub fn read_trace(path: &Path) -> Result<Trace, SimError> {
    let io = |problem: String| SimError::Io { path: path.display().to_string(), problem };
    let file = fs::File::open(path).map_err(|e| io(e.to_string()))?;
    let mut bytes = Vec::new();
    file.take(MAX_TRACE_BYTES + 1).read_to_end(&mut bytes).map_err(|e| io(e.to_string()))?;
    if bytes.len() as u64 > MAX_TRACE_BYTES {
        return Err(io(format!("larger than {} MiB: not a trace this mcpsim reads", MAX_TRACE_BYTES >> 20)));
    }
    let text = String::from_utf8(bytes).map_err(|_| io("stream did not contain valid UTF-8".to_string()))?;
    parse_trace(path, &text)
}

/// Parses a trace's text (`path` names it in errors).
pub fn parse_trace(path: &Path, text: &str) -> Result<Trace, SimError> {
    Trace::parse(text).map_err(|source| SimError::Trace { path: path.display().to_string(), source })
}

/// Reads only a trace file's header, of any schema (at most [`MAX_TRACE_BYTES`]): enough to run
/// it again.
pub fn read_header(path: &Path) -> Result<Header, SimError> {
    let io = |problem: String| SimError::Io { path: path.display().to_string(), problem };
    let file = fs::File::open(path).map_err(|e| io(e.to_string()))?;
    let mut bytes = Vec::new();
    file.take(MAX_TRACE_BYTES + 1).read_to_end(&mut bytes).map_err(|e| io(e.to_string()))?;
    let text = String::from_utf8_lossy(&bytes);
    Trace::parse_header(&text).map_err(|source| SimError::Trace { path: path.display().to_string(), source })
}

/// The scenario recorded in a trace header, checked to be runnable: the header is not covered by
/// the footer's digest, so it is input like any other.
pub fn recorded_scenario(path: &Path, trace: &Trace) -> Result<Scenario, SimError> {
    scenario_in_header(path, &trace.header)
}

/// The scenario a header records, checked to be runnable.
pub fn scenario_in_header(path: &Path, header: &Header) -> Result<Scenario, SimError> {
    let bad = |problem: String| SimError::BadScenario { path: path.display().to_string(), problem };
    let value = header.scenario.get("scenario").cloned().ok_or_else(|| bad("no \"scenario\" field".into()))?;
    let scenario: Scenario = serde_json::from_value(value).map_err(|e| bad(e.to_string()))?;
    runnable(&scenario).map_err(bad)?;
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scenario::ScenarioArgs;

    #[test]
    fn a_printed_command_split_as_a_shell_would_rebuilds_the_same_scenario() {
        let mut s = Scenario::build("long-tool", "naive", "reference").unwrap();
        let sets = [("fault.partition", "70s..80s, 3m..4m"), ("lb.idle_timeout", "45s")];
        s.apply_overrides(&sets.map(|(k, v)| (k.to_string(), v.to_string()))).unwrap();
        let command = replay_command(&s, 9);
        let words = shlex::split(&command).expect("shell words");
        let args: Vec<&str> = words.iter().map(String::as_str).skip_while(|w| *w != "run").skip(1).collect();
        let value = |flag: &str| args.iter().position(|a| *a == flag).map(|i| args[i + 1].to_string()).unwrap();
        let sets: Vec<String> = args.windows(2).filter(|w| w[0] == "--set").map(|w| w[1].to_string()).collect();
        assert_eq!(sets, ["fault.partition=70s..80s, 3m..4m", "lb.idle_timeout=45s"]);
        let rebuilt =
            ScenarioArgs { client: value("--client"), server: value("--server"), scenario: value("--scenario"), sets }
                .build()
                .unwrap();
        assert_eq!(rebuilt, s);
        assert_eq!(value("--seed"), "9");
    }

    #[test]
    fn a_path_with_a_space_is_quoted_in_the_replay_command() {
        let command = replay_file_command(Path::new("/tmp/my traces/a.jsonl"));
        assert!(command.ends_with("replay '/tmp/my traces/a.jsonl'"), "{command}");
    }
}
