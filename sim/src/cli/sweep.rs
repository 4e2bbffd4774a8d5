//! `mcpsim sweep`.

use super::progress::Bar;
use super::{Exit, ScenarioArgs};
use crate::engine::runner::run;
use crate::error::SimError;
use crate::report::plot::{self, BoundaryMarks, PlotKey, Rate, RateLine, SweepPlot};
use crate::studies::sweep::{numeric, render_report, sweep, SweepOptions, SweepReport};
use crate::studies::tally::Outcome;
use std::path::Path;

/// `mcpsim sweep`: exits 1 when any run of any cell violated an invariant, 0 otherwise. The plot
/// path is checked with everything else, before the first run, and drawn once the sweep is done.
pub fn cmd_sweep(
    args: &ScenarioArgs,
    vary: &[String],
    opts: &SweepOptions,
    plot_path: Option<&Path>,
) -> Result<Exit, SimError> {
    let base = args.build()?;
    if let Some(path) = plot_path {
        plot::check_path(path)?;
    }
    let report = sweep(&base, vary, opts, &run, &Bar::new("sweep"))?;
    print!("{}", render_report(&report));
    if let Some(csv) = &opts.csv {
        println!("csv: {}", csv.display());
    }
    if let Some(path) = plot_path {
        plot::plot_sweep(&plot_data(&report), path)?;
        println!("plot: {}", path.display());
    }
    Ok(if report.violated() { Exit::Violated } else { Exit::Clean })
}

/// What the plot shows of a sweep: one line per outcome any run had (loss-free always), or with
/// two keys the loss-free rate of each cell; the boundaries as measured and predicted.
pub fn plot_data(report: &SweepReport) -> SweepPlot {
    let rate = |tally: &crate::studies::tally::Tally, o: Outcome| {
        let (lo, hi) = tally.interval(o);
        Rate { rate: tally.rate(o), lo, hi }
    };
    let lines = Outcome::ALL
        .into_iter()
        .filter(|o| *o == Outcome::LossFree || report.cells.iter().any(|c| c.tally.count(*o) > 0))
        .map(|o| RateLine { name: o.name().into(), rates: report.cells.iter().map(|c| rate(&c.tally, o)).collect() })
        .collect();
    SweepPlot {
        title: format!("{} × {} × {}: {} seeds per cell", report.client, report.server, report.scenario, report.seeds),
        keys: report
            .varies
            .iter()
            .map(|v| PlotKey {
                key: v.key.into(),
                values: v.values.clone(),
                numeric: v.values.iter().map(|x| numeric(x)).collect(),
            })
            .collect(),
        lines,
        heat: report.cells.iter().map(|c| c.tally.rate(Outcome::LossFree)).collect(),
        heat_label: "loss-free rate".into(),
        along: report.along,
        boundaries: report
            .boundaries
            .iter()
            .map(|b| BoundaryMarks {
                fixed: b.fixed.as_ref().map(|(_, v)| v.clone()),
                predicted: b.predicted.as_ref().map(|p| p.minimal),
                measured: b.measured.as_ref().map(|m| (m.value.clone(), m.x)),
            })
            .collect(),
    }
}
