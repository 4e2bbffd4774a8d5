//! `mcpsim matrix`.

use super::progress::Bar;
use super::{Exit, ShardArgs};
use crate::error::SimError;
use crate::report::artifacts::{check_writable, program};
use crate::studies::shard;
use std::path::PathBuf;

/// The flags of `mcpsim matrix`.
#[derive(Clone, Debug)]
pub struct MatrixArgs {
    /// Client profiles, one row group each.
    pub clients: Vec<String>,
    /// Server profiles.
    pub servers: Vec<String>,
    /// Scenario families.
    pub scenarios: Vec<String>,
    /// Seeds `0..seeds` per cell.
    pub seeds: u64,
    /// `table`, `csv`, `json` or `markdown`.
    pub format: String,
    /// A mitigation applied to every cell (see `studies::matrix::MITIGATIONS`).
    pub mitigate: Option<String>,
    /// Worker threads; `None` for the machine's available parallelism.
    pub jobs: Option<usize>,
    /// A markdown file whose table (between the matrix markers) is rewritten.
    pub doc: Option<PathBuf>,
    /// Where the first failing trace of each violated cell is saved, with `doc`.
    pub traces: PathBuf,
    /// Run only this shard's cells (`K/N`) and write them for `mcpsim merge`.
    pub shard: ShardArgs,
}

/// `mcpsim matrix`: repeated profiles or scenarios in a list run once; exits 1 when any cell
/// broke an invariant.
pub fn cmd_matrix(args: &MatrixArgs) -> Result<Exit, SimError> {
    use crate::studies::matrix::{self, MatrixSpec};
    let mut spec = MatrixSpec::everything(args.seeds);
    let pick = |given: &[String], all: Vec<String>| if given.is_empty() { all } else { given.to_vec() };
    spec.clients = pick(&args.clients, spec.clients.clone());
    spec.servers = pick(&args.servers, spec.servers.clone());
    spec.scenarios = pick(&args.scenarios, spec.scenarios.clone());
    if let Some(j) = args.jobs {
        spec.jobs = j;
    }
    if args.seeds == 0 {
        return Err(SimError::Usage("--seeds must be at least 1".into()));
    }
    spec.mitigation = args.mitigate.as_deref().map(matrix::mitigation).transpose()?;
    let render: fn(&[matrix::MatrixCell]) -> String = match args.format.as_str() {
        "md" | "markdown" => matrix::to_markdown,
        "csv" => matrix::to_csv,
        "json" => matrix::to_json,
        other => return Err(SimError::Usage(format!("unknown format {other:?} (use md, csv or json)"))),
    };
    if let Some((shard, dir)) = args.shard.parse()? {
        if args.doc.is_some() {
            return Err(SimError::Usage("--doc goes with `mcpsim merge`, not with --shard".into()));
        }
        check_writable(&dir.join(shard::file_name("matrix")))?;
        let (total, cells) = matrix::run_matrix_part(&spec, |i| shard.owns(i), &Bar::new("matrix shard"))?;
        // What the compatibility document says of each broken cell, found here so that
        // `merge --doc` runs nothing.
        let cells = cells
            .into_iter()
            .map(|(i, c)| matrix::cell_doc(&spec, &c).map(|doc| (i, c, doc)))
            .collect::<Result<Vec<_>, _>>()?;
        let question = shard::MatrixQuestion {
            clients: spec.clients.clone(),
            servers: spec.servers.clone(),
            scenarios: spec.scenarios.clone(),
            seeds: spec.seeds,
            mitigation: args.mitigate.clone(),
            cells: total,
        };
        let path = shard::write_matrix_shard(&dir, shard, &question, &cells)?;
        eprintln!("shard {shard}: {} of {total} cells → {}", cells.len(), path.display());
        eprintln!("when every shard is done: {} merge DIR... [--format md|csv|json] [--doc FILE]", program());
        let broken = cells.iter().any(|(_, c, _)| c.violated());
        return Ok(if broken { Exit::Violated } else { Exit::Clean });
    }
    if let Some(doc) = &args.doc {
        check_writable(doc)?;
        check_writable(&args.traces.join("probe"))?;
    }
    let results = matrix::run_matrix(&spec, &Bar::new("matrix"))?;
    print!("{}", crate::report::escape::control(&render(&results)));
    if let Some(doc) = &args.doc {
        matrix::write_doc(&spec, &results, doc, &args.traces)?;
        println!("wrote {}", doc.display());
    }
    let broken = results.iter().any(matrix::MatrixCell::violated);
    Ok(if broken { Exit::Violated } else { Exit::Clean })
}

/// The flags of `mcpsim merge`.
#[derive(Clone, Debug)]
pub struct MergeArgs {
    /// The shard directories.
    pub dirs: Vec<PathBuf>,
    /// matrix: `md`, `csv` or `json`; check: `text` or `html` (default: the command's).
    pub format: Option<String>,
    /// matrix: also write the compatibility document here, as `matrix --doc`.
    pub doc: Option<PathBuf>,
    /// matrix: where the document's traces go.
    pub traces: PathBuf,
    /// sweep: the CSV to write, as `sweep --csv`.
    pub csv: Option<PathBuf>,
    /// sweep: the SVG plot to draw, as `sweep --plot`.
    pub plot: Option<PathBuf>,
    /// check: the report file, as `check -o`.
    pub output: Option<PathBuf>,
    /// explore: where the counterexample's trace goes, as `explore --out`.
    pub out: PathBuf,
}

/// `mcpsim merge DIR...`: the shards of one `matrix`, `sweep`, `check` or `explore` run with
/// `--shard K/N`, printed and written exactly as the unsharded command does, with its exit
/// status. Flags that belong to another command are bad input.
pub fn cmd_merge(args: &MergeArgs) -> Result<Exit, SimError> {
    let first = args.dirs.first().ok_or_else(|| SimError::Usage("merge needs the shard directories".into()))?;
    let command = shard::command_in(first)?;
    let given = [
        ("--format", args.format.is_some(), ["matrix", "check"].as_slice()),
        ("--doc", args.doc.is_some(), &["matrix"]),
        ("--csv", args.csv.is_some(), &["sweep"]),
        ("--plot", args.plot.is_some(), &["sweep"]),
        ("--output", args.output.is_some(), &["check"]),
    ];
    if let Some((flag, _, _)) = given.iter().find(|(_, set, of)| *set && !of.contains(&command)) {
        return Err(SimError::Usage(format!("{flag} does not go with the shards of {command}")));
    }
    match command {
        "sweep" => super::sweep::merge_sweep(&args.dirs, args.csv.clone(), args.plot.as_deref()),
        "check" => {
            super::check::merge_check(&args.dirs, args.format.as_deref().unwrap_or("text"), args.output.as_deref())
        }
        "explore" => super::explore::merge_explore(&args.dirs, &args.out),
        _ => merge_matrix(args),
    }
}

/// `mcpsim merge` of a `matrix --shard K/N` run: exit 1 when any cell broke an invariant.
fn merge_matrix(args: &MergeArgs) -> Result<Exit, SimError> {
    use crate::studies::matrix;
    let render: fn(&[matrix::MatrixCell]) -> String = match args.format.as_deref().unwrap_or("md") {
        "md" | "markdown" => matrix::to_markdown,
        "csv" => matrix::to_csv,
        "json" => matrix::to_json,
        other => return Err(SimError::Usage(format!("unknown format {other:?} (use md, csv or json)"))),
    };
    let (question, merged) = shard::merge_matrix(&args.dirs)?;
    let (results, docs): (Vec<_>, Vec<_>) = merged.into_iter().unzip();
    if let Some(doc) = &args.doc {
        check_writable(doc)?;
        check_writable(&args.traces.join("probe"))?;
    }
    print!("{}", crate::report::escape::control(&render(&results)));
    if let Some(doc) = &args.doc {
        // The shards carry each broken cell's paragraph and trace: nothing runs here.
        matrix::write_doc_from(question.seeds, &results, &docs, doc, &args.traces)?;
        println!("wrote {}", doc.display());
    }
    let broken = results.iter().any(matrix::MatrixCell::violated);
    Ok(if broken { Exit::Violated } else { Exit::Clean })
}
