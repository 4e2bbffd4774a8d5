//! `mcpsim sweep`.

use super::progress::Bar;
use super::{Exit, ScenarioArgs, ShardArgs};
use crate::engine::runner::run;
use crate::error::SimError;
use crate::report::artifacts::{check_writable, program};
use crate::report::plot::{self, BoundaryMarks, PlotKey, Rate, RateLine, SweepPlot};
use crate::studies::shard::{self, TallyRecord};
use crate::studies::sweep::{
    numeric, render_report, sweep, sweep_from, sweep_shard, SweepCells, SweepOptions, SweepReport,
};
use crate::studies::tally::Outcome;
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};

/// `mcpsim sweep`: exits 1 when any run of any cell violated an invariant, 0 otherwise. The plot
/// path is checked with everything else, before the first run, and drawn once the sweep is done.
pub fn cmd_sweep(
    args: &ScenarioArgs,
    vary: &[String],
    opts: &SweepOptions,
    plot_path: Option<&Path>,
    shard: &ShardArgs,
) -> Result<Exit, SimError> {
    let base = args.build()?;
    if let Some((shard, dir)) = shard.parse()? {
        if plot_path.is_some() {
            return Err(SimError::Usage("--plot goes with `mcpsim merge`, not with --shard".into()));
        }
        check_writable(&dir.join(shard::file_name("sweep")))?;
        let (total, cells) = sweep_shard(&base, vary, opts, shard, &run, &Bar::new("sweep shard"))?;
        let question = SweepQuestion {
            client: args.client.clone(),
            server: args.server.clone(),
            scenario: args.scenario.clone(),
            sets: args.sets.clone(),
            vary: vary.to_vec(),
            seeds: opts.seeds,
            threshold: opts.threshold,
            cells: total,
        };
        let records: Vec<(usize, TallyRecord)> = cells.iter().map(|(i, t)| (*i, TallyRecord::of(t))).collect();
        let path = shard::write_shard(&dir, "sweep", shard, &question, &records)?;
        eprintln!("shard {shard}: {} of {total} cells → {}", cells.len(), path.display());
        eprintln!("when every shard is done: {} merge DIR... [--csv FILE] [--plot FILE.svg]", program());
        return Ok(if cells.iter().any(|(_, t)| t.violated()) { Exit::Violated } else { Exit::Clean });
    }
    if let Some(path) = plot_path {
        plot::check_path(path)?;
    }
    let report = sweep(&base, vary, opts, &run, &Bar::new("sweep"))?;
    finish(&report, opts, plot_path)
}

/// Prints the report, and draws the plot when asked.
fn finish(report: &SweepReport, opts: &SweepOptions, plot_path: Option<&Path>) -> Result<Exit, SimError> {
    print!("{}", crate::report::escape::control(&render_report(report)));
    if let Some(csv) = &opts.csv {
        println!("csv: {}", csv.display());
    }
    if let Some(path) = plot_path {
        plot::plot_sweep(&plot_data(report), path)?;
        println!("plot: {}", path.display());
    }
    Ok(if report.violated() { Exit::Violated } else { Exit::Clean })
}

/// What every shard of one sharded sweep must share.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
struct SweepQuestion {
    client: String,
    server: String,
    scenario: String,
    sets: Vec<String>,
    vary: Vec<String>,
    seeds: u64,
    threshold: f64,
    cells: usize,
}

/// `mcpsim merge` of a `sweep --shard K/N` run: what the unsharded sweep prints, and with `csv`
/// (and `plot`) writes.
pub(crate) fn merge_sweep(dirs: &[PathBuf], csv: Option<PathBuf>, plot_path: Option<&Path>) -> Result<Exit, SimError> {
    let what = "profiles, scenario, --set, --vary, seeds or threshold";
    let (q, parts) = shard::read_shards::<SweepQuestion, Vec<(usize, TallyRecord)>>(dirs, "sweep", what)?;
    let args = ScenarioArgs { client: q.client, server: q.server, scenario: q.scenario, sets: q.sets };
    let base = args.build()?;
    if let Some(path) = plot_path {
        plot::check_path(path)?;
    }
    let mut indexed = Vec::new();
    for (shard, _, records) in parts {
        let mut cells = Vec::new();
        for (i, record) in records {
            cells.push((i, record.tally(q.seeds).map_err(|e| SimError::Usage(format!("merge: shard {shard}: {e}")))?));
        }
        indexed.push((shard, cells));
    }
    let tallies = shard::collect_cells(indexed, q.cells)?;
    let opts = SweepOptions { seeds: q.seeds, jobs: 1, csv, resume: false, threshold: q.threshold };
    let report = sweep_from(&base, &q.vary, &opts, SweepCells::Given(tallies))?;
    finish(&report, &opts, plot_path)
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
                key: v.key.clone(),
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
