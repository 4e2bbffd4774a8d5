//! `mcpsim matrix`.

use super::progress::Bar;
use super::Exit;
use crate::error::SimError;
use crate::report::artifacts::check_writable;
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
    if let Some(doc) = &args.doc {
        check_writable(doc)?;
        check_writable(&args.traces.join("probe"))?;
    }
    let results = matrix::run_matrix(&spec, &Bar::new("matrix"))?;
    print!("{}", render(&results));
    if let Some(doc) = &args.doc {
        matrix::write_doc(&spec, &results, doc, &args.traces)?;
        println!("wrote {}", doc.display());
    }
    let broken = results.iter().any(matrix::MatrixCell::violated);
    Ok(if broken { Exit::Violated } else { Exit::Clean })
}
