//! `mcpsim bench`.

use super::Exit;
use crate::error::SimError;
use crate::scenario::Scenario;

/// `mcpsim bench`.
pub fn cmd_bench(runs: u64, rounds: u32) -> Result<Exit, SimError> {
    if runs == 0 {
        return Err(SimError::Usage("--runs must be at least 1".into()));
    }
    if rounds == 0 {
        return Err(SimError::Usage("--rounds must be at least 1".into()));
    }
    let scenarios = [
        Scenario::build("long-tool", "reference", "reference")?,
        Scenario::build("chatty-tool", "reference", "reference")?,
    ];
    crate::studies::bench::print(&crate::studies::bench::bench(&scenarios, runs, rounds)?);
    Ok(Exit::Clean)
}
