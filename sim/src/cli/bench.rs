//! `mcpsim bench`.

use super::Exit;
use crate::error::SimError;
use crate::scenario::{Scenario, ScenarioArgs};
use crate::studies::bench::{self, Subject};

/// How many times fewer seeds the two-hour `chatty-tool` line runs per round than the others.
const LONG_RUN_SHARE: u64 = 16;

/// `mcpsim bench`: the table, or with `profile` one scenario's seeds and nothing else (with
/// `model_alone`, the madsim-free model driving its exchange instead).
pub fn cmd_bench(runs: u64, rounds: u32, profile: Option<&ScenarioArgs>, model_alone: bool) -> Result<Exit, SimError> {
    if runs == 0 {
        return Err(SimError::Usage("--runs must be at least 1".into()));
    }
    if rounds == 0 {
        return Err(SimError::Usage("--rounds must be at least 1".into()));
    }
    if let Some(args) = profile {
        let scenario = args.build()?;
        let (round, what) = if model_alone {
            (bench::profile_model_alone(&scenario, runs)?, "the model alone, ")
        } else {
            (bench::profile(&scenario, runs)?, "")
        };
        println!(
            "{}{} × {} × {}: {} runs in {:.3} s ({}), {:.0} runs/s",
            what,
            scenario.client_label(),
            scenario.server.name,
            scenario.name,
            round.runs,
            round.seconds,
            bench::clock_name(),
            round.runs as f64 / round.seconds.max(1e-9)
        );
        return Ok(Exit::Clean);
    }
    let reference = |name: &str| Scenario::build(name, "reference", "reference");
    let mut two_hours = reference("chatty-tool")?;
    two_hours.apply_overrides(&[("tool.duration".to_string(), "2h".to_string())])?;
    let subjects = [
        Subject { label: "reference × reference × long-tool".into(), scenario: reference("long-tool")?, runs },
        Subject { label: "reference × reference × chatty-tool".into(), scenario: reference("chatty-tool")?, runs },
        Subject {
            label: "… chatty-tool, tool.duration=2h".into(),
            scenario: two_hours,
            runs: runs.div_ceil(LONG_RUN_SHARE),
        },
    ];
    bench::print(&bench::bench(&subjects, rounds)?);
    Ok(Exit::Clean)
}
