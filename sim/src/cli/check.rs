//! `mcpsim check deployment.toml`.

use super::progress::Bar;
use super::{Exit, ShardArgs};
use crate::engine::runner::run;
use crate::error::SimError;
use crate::report::artifacts::{check_writable, program, write_file};
use crate::studies::check::{assemble, check, check_part, render_html, render_text, CheckReport, Deployment};
use crate::studies::shard::{self, Shard, TallyRecord};
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};

/// The flags of `mcpsim check`.
#[derive(Clone, Debug)]
pub struct CheckArgs {
    /// The deployment file.
    pub file: PathBuf,
    /// Seeds per cell.
    pub seeds: u64,
    /// `text` or `html`.
    pub format: String,
    /// Where the HTML report goes (`html` only).
    pub output: Option<PathBuf>,
    /// Worker threads (0: one per core).
    pub jobs: usize,
    /// Run only this shard's cells and write them for `mcpsim merge`.
    pub shard: ShardArgs,
    /// What-if overrides (`KEY=VALUE`) on top of the file's, for every cell.
    pub sets: Vec<String>,
}

/// `mcpsim check`: exits 1 when any client × family cell broke an invariant, 0 when every cell
/// is clean, 2 on bad input.
pub fn cmd_check(args: &CheckArgs) -> Result<Exit, SimError> {
    if args.seeds == 0 {
        return Err(SimError::Usage("--seeds must be at least 1".into()));
    }
    if let Some((shard, dir)) = args.shard.parse()? {
        if !args.sets.is_empty() {
            return Err(SimError::Usage(
                "--set goes with an unsharded check; a sharded one reads its overrides from the file's [set] table"
                    .into(),
            ));
        }
        if args.output.is_some() || args.format != "text" {
            return Err(SimError::Usage("--format and -o go with `mcpsim merge`, not with --shard".into()));
        }
        return check_shard(args, shard, &dir);
    }
    let html = output_format(&args.format, args.output.as_deref())?;
    let deployment = Deployment::load(&args.file)?.with_sets(&args.sets)?;
    let report = check(&deployment, args.seeds, args.jobs, &run, &Bar::new("check"))?;
    finish(&report, args.output.as_deref(), html)
}

/// Whether the report is HTML, checking its output path before anything runs.
fn output_format(format: &str, output: Option<&Path>) -> Result<bool, SimError> {
    let html = match format {
        "text" => false,
        "html" => true,
        other => return Err(SimError::Usage(format!("unknown format {other:?} (use text or html)"))),
    };
    if html && output.is_none() {
        return Err(SimError::Usage("--format html writes a file: give it with -o FILE.html".into()));
    }
    if let Some(out) = output {
        check_writable(out)?;
    }
    Ok(html)
}

/// Prints (and writes) the report as `check` does.
fn finish(report: &CheckReport, output: Option<&Path>, html: bool) -> Result<Exit, SimError> {
    let text = render_text(report) + &conditions_text(report)?;
    match (output, html) {
        (Some(out), true) => {
            print!("{}", crate::report::escape::control(&text));
            write_file(out, &render_html(report, &run)?)?;
            println!("\nwrote {}", show(out));
        }
        (Some(out), false) => {
            write_file(out, &text)?;
            println!("wrote {}", show(out));
        }
        (None, _) => print!("{}", crate::report::escape::control(&text)),
    }
    Ok(if report.broken() { Exit::Violated } else { Exit::Clean })
}

/// Each broken cell's first failing seed, run again: which of the design note's conditions of
/// validity explain each invariant it broke (`oracle::conditions`), or that all four held.
fn conditions_text(report: &CheckReport) -> Result<String, SimError> {
    use std::fmt::Write as _;
    let mut out = String::new();
    for c in report.cells.iter().filter(|c| c.broken()) {
        let Some((seed, _)) = &c.tally.first_violation else { continue };
        let outcome = run(&c.scenario, *seed)?;
        let conditions = mcpsim_model::oracle::conditions::Conditions::judge(&outcome.trace);
        if out.is_empty() {
            out.push_str("\nconditions of validity at each broken cell's first failing seed (design note):\n");
        }
        let mut seen = std::collections::BTreeSet::new();
        for v in &outcome.violations {
            if seen.insert(v.invariant) {
                let _ = writeln!(out, "  {} × {}: {} — {}", c.client, c.family, v.invariant, conditions.explain(v));
            }
        }
    }
    Ok(out)
}

/// What every shard of one sharded check must share: the deployment (its text, and where it was
/// read from, which its relative paths depend on) and the seeds.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
struct CheckQuestion {
    origin: String,
    deployment: String,
    seeds: u64,
    cells: usize,
}

/// One cell of a check shard: its index, tally and the mitigations that fix it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
struct CheckRecord {
    index: usize,
    tally: TallyRecord,
    fixes: Vec<String>,
}

/// `check --shard K/N`: the cells `i mod N = K − 1`, each with its mitigations when broken.
fn check_shard(args: &CheckArgs, shard: Shard, dir: &Path) -> Result<Exit, SimError> {
    let origin = args.file.display().to_string();
    let text =
        crate::scenario::files::read(&args.file).map_err(|problem| SimError::Io { path: origin.clone(), problem })?;
    let deployment = Deployment::parse(&text, &origin)?;
    check_writable(&dir.join(shard::file_name("check")))?;
    let progress = Bar::new("check shard");
    let (total, cells) = check_part(&deployment, args.seeds, args.jobs, |i| shard.owns(i), &run, &progress)?;
    let question = CheckQuestion { origin, deployment: text, seeds: args.seeds, cells: total };
    let records: Vec<CheckRecord> = cells
        .iter()
        .map(|(index, (tally, fixes))| CheckRecord {
            index: *index,
            tally: TallyRecord::of(tally),
            fixes: fixes.iter().map(|f| f.to_string()).collect(),
        })
        .collect();
    let path = shard::write_shard(dir, "check", shard, &question, &records)?;
    eprintln!("shard {shard}: {} of {total} cells → {}", cells.len(), path.display());
    eprintln!("when every shard is done: {} merge DIR... [--format text|html] [-o FILE]", program());
    Ok(if cells.iter().any(|(_, (t, _))| t.violated()) { Exit::Violated } else { Exit::Clean })
}

/// `mcpsim merge` of a `check --shard K/N` run: what the unsharded check prints and writes.
pub(crate) fn merge_check(dirs: &[PathBuf], format: &str, output: Option<&Path>) -> Result<Exit, SimError> {
    let (q, parts) = shard::read_shards::<CheckQuestion, Vec<CheckRecord>>(dirs, "check", "deployment or seeds")?;
    let html = output_format(format, output)?;
    let deployment = Deployment::parse(&q.deployment, &q.origin)?;
    let mut indexed = Vec::new();
    for (shard, _, records) in parts {
        let bad = |e: String| SimError::Usage(format!("merge: shard {shard}: {e}"));
        let mut cells = Vec::new();
        for r in records {
            // assemble() refuses a fix that is not one the deployment's check tries.
            cells.push((r.index, (r.tally.tally(q.seeds).map_err(bad)?, r.fixes)));
        }
        indexed.push((shard, cells));
    }
    let results = shard::collect_cells(indexed, q.cells)?;
    let report = assemble(&deployment, q.seeds, results)?;
    finish(&report, output, html)
}

fn show(path: &Path) -> String {
    path.display().to_string()
}
