//! `mcpsim matrix`.

use super::progress::Bar;
use super::{Exit, ShardArgs};
use crate::error::SimError;
use crate::report::artifacts::{check_writable, program};
use crate::studies::matrix::{self, MatrixCell};
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
    /// `table` (for a terminal), `md` (Markdown), `csv` or `json`.
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
    use crate::studies::matrix::MatrixSpec;
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
    let render = renderer(&args.format)?;
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
        eprintln!("when every shard is done: {} merge DIR... [--format table|md|csv|json] [--doc FILE]", program());
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
    let render = renderer(args.format.as_deref().unwrap_or("table"))?;
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

/// How a matrix is printed: `table` for a terminal, `md` (Markdown, as `--doc` writes it), `csv`
/// or `json`.
fn renderer(format: &str) -> Result<fn(&[MatrixCell]) -> String, SimError> {
    Ok(match format {
        "table" => to_table,
        "md" | "markdown" => matrix::to_markdown,
        "csv" => matrix::to_csv,
        "json" => matrix::to_json,
        other => return Err(SimError::Usage(format!("unknown format {other:?} (use table, md, csv or json)"))),
    })
}

/// The matrix for a terminal: a grid of scenario × client rows and server columns whose cells
/// say `ok` or how many invariants broke with a note number, then one note per broken cell: the
/// invariants with their counts and the command that replays the first failing seed.
pub fn to_table(results: &[MatrixCell]) -> String {
    use std::fmt::Write as _;
    let servers = matrix::unique(results.iter().map(|r| r.server.as_str()));
    let rows = matrix::unique(results.iter().map(|r| (r.scenario.as_str(), r.client.as_str())));
    let broken: Vec<&MatrixCell> = results.iter().filter(|r| r.violated()).collect();
    // The columns after the client's are the servers: the header says so.
    let mut grid: Vec<Vec<String>> = vec![["scenario", "client \\ server"]
        .iter()
        .map(|h| h.to_string())
        .chain(servers.iter().map(|s| s.to_string()))
        .collect()];
    for (scenario, client) in &rows {
        let mut row = vec![scenario.to_string(), client.to_string()];
        for server in &servers {
            let cell = results.iter().find(|r| r.scenario == *scenario && r.client == *client && r.server == *server);
            row.push(match cell {
                None => String::new(),
                Some(c) if !c.violated() => "ok".to_string(),
                Some(c) => {
                    let n = broken.iter().position(|b| std::ptr::eq(*b, c)).map_or(0, |i| i + 1);
                    format!("{} broken [{n}]", c.tally.broken().len())
                }
            });
        }
        grid.push(row);
    }
    let widths: Vec<usize> =
        (0..grid[0].len()).map(|i| grid.iter().map(|r| r[i].chars().count()).max().unwrap_or(0)).collect();
    let mut out = String::new();
    for (n, row) in grid.iter().enumerate() {
        let line: Vec<String> = row.iter().zip(&widths).map(|(t, w)| format!("{t:<w$}")).collect();
        let _ = writeln!(out, "{}", line.join("  ").trim_end());
        if n == 0 {
            let _ = writeln!(out, "{}", widths.iter().map(|w| "-".repeat(*w)).collect::<Vec<_>>().join("  "));
        }
    }
    for (i, c) in broken.iter().enumerate() {
        let t = &c.tally;
        let what: Vec<String> = t.broken().iter().map(|v| format!("{v} {}/{}", t.violations[*v], t.n)).collect();
        let _ = writeln!(out, "\n[{}] {} × {} × {}: {}", i + 1, c.scenario, c.client, c.server, what.join(", "));
        if let Some((seed, replay)) = &t.first_violation {
            let _ = writeln!(out, "  first failing seed {seed}: {replay}");
        }
    }
    out
}
