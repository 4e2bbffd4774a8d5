//! `mcpsim sweep`.

use super::{Exit, ScenarioArgs};
use crate::engine::runner::run;
use crate::error::SimError;

/// `mcpsim sweep`.
pub fn cmd_sweep(
    args: &ScenarioArgs,
    vary: &[String],
    opts: &crate::studies::sweep::SweepOptions,
) -> Result<Exit, SimError> {
    let base = args.build()?;
    let report = crate::studies::sweep::sweep(&base, vary, opts, &run)?;
    print!("{}", crate::studies::sweep::render_report(&report));
    if let Some(csv) = &opts.csv {
        println!("csv: {}", csv.display());
    }
    if let Some(plot) = &opts.plot {
        println!("plot: {}", plot.display());
    }
    Ok(Exit::Clean)
}
