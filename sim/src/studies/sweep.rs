//! Retention sweeps: a grid of one or two settable keys, each cell run over seeds `0..N`, every
//! run classified by what the application saw ([`crate::studies::tally`]), the counts written as
//! CSV rows in grid order, and the measured safe boundary printed beside the one `advise`
//! predicts.
//!
//! Everything a user can get wrong (keys, ranges, values a key rejects, paths, a CSV from another
//! sweep) is checked before the first run. Results do not depend on the number of worker
//! threads: each cell always runs the same seeds of the same scenario on one thread
//! ([`crate::studies::pool`]), and rows reach the CSV in grid order, so two identical sweeps
//! write identical bytes.

use crate::error::SimError;
use crate::report::artifacts::check_writable;
use crate::scenario::{setting, settings, Scenario};
use crate::studies::advise::{self, Prediction};
use crate::studies::pool::{run_cells, PoolCell, Progress, RunFn};
use crate::studies::shard::Shard;
use crate::studies::tally::{Outcome, Tally};
use mcpsim_model::time::{format_duration, parse_duration};
use std::collections::BTreeMap;
use std::fs::{self, File, OpenOptions};
use std::path::{Path, PathBuf};
use std::time::Duration;

// ---------------------------------------------------------------------------------------------
// The grid
// ---------------------------------------------------------------------------------------------

/// One varied key and its values, in grid order.
#[derive(Clone, Debug, PartialEq)]
pub struct Vary {
    /// The settable key: a short key (`server.retention`) or any field by its path
    /// (`server.retention.max_events`, `lb.max_lifetime`), as `--set` takes them.
    pub key: String,
    /// Values as the key's `show` writes them once validated (as given before).
    pub values: Vec<String>,
    /// The step of a range, in the key's numeric unit (seconds for durations); `None` for a list.
    pub step: Option<f64>,
}

/// More values than this in one vary is a typo, not a sweep.
const MAX_VALUES: usize = 10_000;

/// Parses `KEY=A..B:STEP` (durations such as `30s..5m:30s`, or numbers such as `50..400:25`;
/// `B` included when the steps land on it) or `KEY=v1,v2,…`.
pub fn parse_vary(spec: &str) -> Result<Vary, SimError> {
    let (key, text) = spec
        .split_once('=')
        .ok_or_else(|| SimError::Usage(format!("--vary {spec:?} is not KEY=A..B:STEP or KEY=v1,v2,…")))?;
    let key = key.trim();
    // The one check of a key is `--set`'s: a short key, or a field by its path.
    settings::targets(key)?;
    let key = key.to_string();
    let text = text.trim();
    let bad = |problem: String| SimError::BadValue { key: key.clone(), value: text.into(), problem };
    let range = text.rsplit_once(':').and_then(|(r, step)| r.split_once("..").map(|(a, b)| (a, b, step)));
    let (values, step) = match range {
        Some((a, b, step)) => {
            let (values, step) =
                if parse_duration(a).is_ok() { duration_range(a, b, step) } else { number_range(a, b, step) }
                    .map_err(bad)?;
            (values, Some(step))
        }
        None => (list(text).map_err(bad)?, None),
    };
    if values.len() > MAX_VALUES {
        return Err(bad(format!("{} values; at most {MAX_VALUES}", values.len())));
    }
    Ok(Vary { key, values, step })
}

fn list(text: &str) -> Result<Vec<String>, String> {
    if text.is_empty() {
        return Err("no values".into());
    }
    let values: Vec<String> = text.split(',').map(|v| v.trim().to_string()).collect();
    if values.iter().any(String::is_empty) {
        return Err("an empty value in the list".into());
    }
    Ok(values)
}

/// How many steps fit in `a..=b`, or why none do.
fn step_count(a: f64, b: f64, step: f64) -> Result<usize, String> {
    if step <= 0.0 {
        return Err(if step == 0.0 { "the step is zero".into() } else { "the step is negative".into() });
    }
    if b < a {
        return Err("reversed range: the end is below the start".into());
    }
    let steps = ((b - a) / step + 1e-9).floor();
    if steps >= MAX_VALUES as f64 {
        return Err(format!("more than {MAX_VALUES} values"));
    }
    Ok(steps as usize + 1)
}

fn duration_range(a: &str, b: &str, step: &str) -> Result<(Vec<String>, f64), String> {
    let (a, b, step) = (parse_duration(a)?, parse_duration(b)?, parse_duration(step)?);
    let us = |d: Duration| d.as_micros() as f64;
    let count = step_count(us(a), us(b), us(step))?;
    let values = (0..count).map(|i| format_duration(a + step * i as u32)).collect();
    Ok((values, step.as_secs_f64()))
}

fn number_range(a: &str, b: &str, step: &str) -> Result<(Vec<String>, f64), String> {
    let number = |t: &str| match t.trim().parse::<f64>() {
        Ok(x) if x.is_finite() => Ok(x),
        _ => Err(format!("{t:?} is neither a number nor a duration")),
    };
    let (x, y, s) = (number(a)?, number(b)?, number(step)?);
    let count = step_count(x, y, s)?;
    // Print every value with as many decimals as the most precise bound: no 0.30000000000000004.
    let decimals = [a, b, step].iter().map(|t| t.trim().split_once('.').map_or(0, |(_, f)| f.len())).max().unwrap_or(0);
    let values = (0..count).map(|i| format!("{:.*}", decimals, x + s * i as f64)).collect();
    Ok((values, s))
}

/// A value's position on a numeric axis: durations in seconds, numbers as they are; `None` for
/// words (`none`, `unbounded`, `410`… is a number, `silent-head` is not).
pub(crate) fn numeric(value: &str) -> Option<f64> {
    parse_duration(value).map(|d| d.as_secs_f64()).ok().or_else(|| value.parse::<f64>().ok().filter(|x| x.is_finite()))
}

/// One cell of the grid: the base scenario with one value of each varied key.
#[derive(Clone, Debug)]
pub(crate) struct Cell {
    pub values: Vec<String>,
    pub scenario: Scenario,
}

/// The validated grid: canonical values and every cell's scenario.
#[derive(Clone, Debug)]
pub(crate) struct Grid {
    pub varies: Vec<Vary>,
    /// The cartesian product, the first key outermost.
    pub cells: Vec<Cell>,
}

/// Checks the varies against `base` (one or two distinct keys, every value accepted by its key's
/// `apply`, no value twice) and builds the cells. Values become what `show` writes.
pub(crate) fn build_grid(base: &Scenario, varies: Vec<Vary>) -> Result<Grid, SimError> {
    if varies.is_empty() || varies.len() > 2 {
        return Err(SimError::Usage(format!("a sweep varies one or two keys, not {}", varies.len())));
    }
    if varies.len() == 2 && varies[0].key == varies[1].key {
        return Err(SimError::Usage(format!("{} is varied twice", varies[0].key)));
    }
    let varies = varies.into_iter().map(|v| canonical(base, v)).collect::<Result<Vec<_>, _>>()?;
    let mut cells = vec![Cell { values: vec![], scenario: base.clone() }];
    for vary in &varies {
        let mut next = Vec::with_capacity(cells.len() * vary.values.len());
        for cell in &cells {
            for value in &vary.values {
                let mut scenario = cell.scenario.clone();
                scenario.apply_overrides(&[(vary.key.clone(), value.clone())])?;
                let mut values = cell.values.clone();
                values.push(value.clone());
                next.push(Cell { values, scenario });
            }
        }
        cells = next;
    }
    Ok(Grid { varies, cells })
}

/// Applies each value to a copy of `base` and keeps what the key's `show` makes of it (a field
/// given by its path keeps its value as written; two values that set the field alike clash).
fn canonical(base: &Scenario, vary: Vary) -> Result<Vary, SimError> {
    let Ok(setting) = setting(&vary.key) else { return canonical_field(base, vary) };
    let mut seen: BTreeMap<String, String> = BTreeMap::new();
    let mut values = Vec::with_capacity(vary.values.len());
    for value in &vary.values {
        let mut scenario = base.clone();
        let bad = |problem: String| SimError::BadValue { key: vary.key.clone(), value: value.clone(), problem };
        (setting.apply)(&mut scenario, value).map_err(bad)?;
        // The rules of the field an alias sets (a factor below 1, a zero duration) hold here too.
        if let Err(SimError::Invalid { problem, .. }) = scenario.validate() {
            return Err(bad(problem));
        }
        let shown = (setting.show)(&scenario);
        if let Some(first) = seen.insert(shown.clone(), value.clone()) {
            return Err(SimError::BadValue {
                key: vary.key.clone(),
                value: value.clone(),
                problem: format!("the same value as {first:?} ({shown}): each cell once"),
            });
        }
        values.push(shown);
    }
    Ok(Vary { values, ..vary })
}

/// [`canonical`] for a field given by its path: each value is applied (and the scenario
/// validated) as `--set` does; values stay as written.
fn canonical_field(base: &Scenario, vary: Vary) -> Result<Vary, SimError> {
    let mut seen: BTreeMap<String, String> = BTreeMap::new();
    for value in &vary.values {
        let mut scenario = base.clone();
        scenario.apply_overrides(&[(vary.key.clone(), value.clone())])?;
        scenario.overrides = vec![];
        let set = serde_json::to_string(&scenario).map_err(|e| SimError::Runtime(e.to_string()))?;
        if let Some(first) = seen.insert(set, value.clone()) {
            return Err(SimError::BadValue {
                key: vary.key.clone(),
                value: value.clone(),
                problem: format!("sets {} as {first:?} does: each cell once", vary.key),
            });
        }
    }
    Ok(vary)
}

// ---------------------------------------------------------------------------------------------
// Cell results
// ---------------------------------------------------------------------------------------------

/// One cell's values (one per varied key, as `show` writes it) and its tally.
#[derive(Clone, Debug, PartialEq)]
pub struct SweepCell {
    /// The cell's value of each varied key, in `varies` order.
    pub values: Vec<String>,
    /// What the cell's seeds came to.
    pub tally: Tally,
}

// ---------------------------------------------------------------------------------------------
// CSV
// ---------------------------------------------------------------------------------------------

/// The CSV header of a sweep over `varies`.
pub(crate) fn csv_header(varies: &[Vary]) -> Vec<String> {
    let mut h: Vec<String> = varies.iter().map(|v| v.key.to_string()).collect();
    h.push("n".into());
    for o in Outcome::ALL {
        let c = o.column();
        h.extend([c.clone(), format!("{c}_rate"), format!("{c}_lo"), format!("{c}_hi")]);
    }
    h.extend(["violations".into(), "first_violation_seed".into(), "replay_first_violation".into()]);
    h.extend(Outcome::ALL.iter().filter(|o| o.notable()).map(|o| format!("replay_{}", o.column())));
    h.push("base".into());
    h
}

/// One cell's row; `base` is the base scenario's command-line arguments.
fn csv_row(cell: &SweepCell, base: &str) -> Vec<String> {
    let r = &cell.tally;
    let mut row = cell.values.clone();
    row.push(r.n.to_string());
    for o in Outcome::ALL {
        let (lo, hi) = r.interval(o);
        row.extend([r.count(o).to_string(), format!("{:.4}", r.rate(o)), format!("{lo:.4}"), format!("{hi:.4}")]);
    }
    row.push(r.violations.iter().map(|(k, n)| format!("{k}:{n}")).collect::<Vec<_>>().join(";"));
    let (seed, replay) = r.first_violation.clone().map_or((String::new(), String::new()), |(s, c)| (s.to_string(), c));
    row.extend([seed, replay]);
    row.extend(Outcome::ALL.iter().filter(|o| o.notable()).map(|o| r.replays.get(o).cloned().unwrap_or_default()));
    row.push(base.to_string());
    row
}

/// Reads a row written by [`csv_row`] back into a cell.
fn parse_row(header: &[String], fields: &csv::StringRecord, keys: usize) -> Result<(SweepCell, String), String> {
    if fields.len() != header.len() {
        return Err(format!("{} fields where the header has {}", fields.len(), header.len()));
    }
    let field = |name: &str| header.iter().position(|h| h == name).and_then(|i| fields.get(i)).unwrap_or_default();
    let number = |name: &str| field(name).parse::<u64>().map_err(|_| format!("{name} is not a count"));
    let mut r = Tally::new();
    r.n = number("n")?;
    for o in Outcome::ALL {
        r.set_count(o, number(&o.column())?);
        let replay = field(&format!("replay_{}", o.column()));
        if !replay.is_empty() {
            r.replays.insert(o, replay.to_string());
        }
    }
    for part in field("violations").split(';').filter(|p| !p.is_empty()) {
        let (name, n) = part.rsplit_once(':').ok_or_else(|| format!("violations entry {part:?} is not name:count"))?;
        r.violations.insert(name.into(), n.parse().map_err(|_| format!("violations entry {part:?}"))?);
    }
    if !field("first_violation_seed").is_empty() {
        r.first_violation = Some((number("first_violation_seed")?, field("replay_first_violation").to_string()));
    }
    let values = fields.iter().take(keys).map(str::to_string).collect();
    Ok((SweepCell { values, tally: r }, field("base").to_string()))
}

/// Where rows go as cells finish, in grid order.
struct CsvSink {
    path: PathBuf,
    writer: csv::Writer<File>,
    base: String,
}

fn io_error(path: &Path, e: impl std::fmt::Display) -> SimError {
    SimError::Io { path: path.display().to_string(), problem: e.to_string() }
}

impl CsvSink {
    /// Opens the CSV before any run: a fresh file with its header, or with `resume` an existing
    /// one whose header must match, read back into cells.
    fn open(
        path: &Path,
        header: &[String],
        keys: usize,
        base: &str,
        seeds: u64,
        resume: bool,
    ) -> Result<(CsvSink, Vec<SweepCell>), SimError> {
        check_writable(path)?;
        let existing =
            if resume && path.exists() { Some(fs::read(path).map_err(|e| io_error(path, e))?) } else { None };
        let sink = |writer| CsvSink { path: path.to_path_buf(), writer, base: base.to_string() };
        let Some(bytes) = existing.filter(|t| !t.trim_ascii().is_empty()) else {
            let mut writer = csv::Writer::from_path(path).map_err(|e| io_error(path, e))?;
            writer.write_record(header).and_then(|()| Ok(writer.flush()?)).map_err(|e| io_error(path, e))?;
            return Ok((sink(writer), vec![]));
        };
        let (rows, complete) = read_rows(path, &bytes, header, keys, base, seeds)?;
        let file = OpenOptions::new().append(true).open(path).map_err(|e| io_error(path, e))?;
        // A row cut short by an interrupted write is dropped: its cell runs again.
        if complete < bytes.len() {
            file.set_len(complete as u64).map_err(|e| io_error(path, e))?;
        }
        Ok((sink(csv::WriterBuilder::new().from_writer(file)), rows))
    }

    fn append(&mut self, cell: &SweepCell) -> Result<(), SimError> {
        let row = csv_row(cell, &self.base);
        self.writer.write_record(&row).map_err(|e| io_error(&self.path, e))?;
        self.writer.flush().map_err(|e| io_error(&self.path, e))
    }
}

/// Writes the whole CSV anew (header, then `rows` in order) through a temporary file, so that
/// the file is never half written.
fn rewrite_csv(path: &Path, header: &[String], rows: &[Vec<String>]) -> Result<(), SimError> {
    let name = path.file_name().map_or("sweep.csv".into(), |n| n.to_string_lossy().into_owned());
    let tmp = path.with_file_name(format!(".{name}.tmp"));
    let mut writer = csv::Writer::from_path(&tmp).map_err(|e| io_error(&tmp, e))?;
    for row in std::iter::once(header).chain(rows.iter().map(Vec::as_slice)) {
        writer.write_record(row).map_err(|e| io_error(&tmp, e))?;
    }
    writer.flush().map_err(|e| io_error(&tmp, e))?;
    drop(writer);
    fs::rename(&tmp, path).map_err(|e| io_error(path, e))
}

/// The complete rows of an existing CSV and the length in bytes they take (a last record cut
/// short is not complete), refusing a file from another sweep.
fn read_rows(
    path: &Path,
    bytes: &[u8],
    header: &[String],
    keys: usize,
    base: &str,
    seeds: u64,
) -> Result<(Vec<SweepCell>, usize), SimError> {
    let refuse = |problem: String| SimError::Usage(format!("--resume {}: {problem}", path.display()));
    let mut reader = csv::ReaderBuilder::new().has_headers(false).flexible(true).from_reader(bytes);
    let mut records = Vec::new();
    let mut record = csv::StringRecord::new();
    loop {
        let start = reader.position().byte() as usize;
        let more = reader.read_record(&mut record).map_err(|e| refuse(e.to_string()))?;
        if !more {
            break;
        }
        let end = (reader.position().byte() as usize).min(bytes.len());
        records.push((start, end, record.clone()));
    }
    let line = |record: &csv::StringRecord| record.position().map_or(0, |p| p.line());
    let Some((_, header_end, found)) = records.first() else {
        return Err(refuse("no header".into()));
    };
    if found.iter().ne(header.iter().map(String::as_str)) {
        return Err(refuse(format!(
            "its header does not match this sweep (found {:?}, expected {:?}); sweep the same keys or use another file",
            found.iter().take(keys + 1).collect::<Vec<_>>(),
            header.iter().take(keys + 1).collect::<Vec<_>>()
        )));
    }
    let mut complete = *header_end;
    let mut rows = Vec::new();
    let last = records.len() - 1;
    for (k, (start, end, record)) in records.iter().enumerate().skip(1) {
        // Rows are written whole: only the last can have been cut short by an interrupted write.
        let whole = bytes[..*end].ends_with(b"\n") && record.len() == header.len();
        if k == last && !whole {
            complete = *start;
            break;
        }
        let at = line(record);
        let (row, row_base) = parse_row(header, record, keys).map_err(|p| refuse(format!("line {at}: {p}")))?;
        if row_base != base {
            return Err(refuse(format!("line {at} is from another scenario ({row_base}); this sweep is {base}")));
        }
        if row.tally.n != seeds {
            return Err(refuse(format!("line {at} ran {} seeds; this sweep runs {seeds}", row.tally.n)));
        }
        rows.push(row);
        complete = *end;
    }
    Ok((rows, complete))
}

// ---------------------------------------------------------------------------------------------
// The sweep
// ---------------------------------------------------------------------------------------------

/// How to run a sweep.
#[derive(Clone, Debug)]
pub struct SweepOptions {
    /// Seeds `0..seeds` per cell.
    pub seeds: u64,
    /// Worker threads; 0 for the machine's available parallelism.
    pub jobs: usize,
    /// A CSV file to write one row per cell to (and to resume from).
    pub csv: Option<PathBuf>,
    /// Skip the cells already in `csv` (which must come from the same sweep).
    pub resume: bool,
    /// The loss-free rate a cell needs to count as safe (1.0: every seed).
    pub threshold: f64,
}

impl Default for SweepOptions {
    fn default() -> Self {
        SweepOptions { seeds: 20, jobs: 0, csv: None, resume: false, threshold: 1.0 }
    }
}

/// The measured boundary along one key.
#[derive(Clone, Debug, PartialEq)]
pub struct Measured {
    /// The smallest grid value from which on every cell is safe, as shown.
    pub value: String,
    /// That value as a number (seconds for durations).
    pub x: f64,
    /// Loss-free runs of that cell.
    pub loss_free: u64,
    /// Runs of that cell.
    pub n: u64,
    /// The 95% Wilson interval of the loss-free rate.
    pub interval: (f64, f64),
    /// Every cell of the line is safe: the real boundary is at or below the grid's start.
    pub whole_line: bool,
}

/// Predicted and measured boundary along one key (with the other key fixed, in a 2-key sweep).
#[derive(Clone, Debug, PartialEq)]
pub struct Boundary {
    /// The other key's value, in a 2-key sweep.
    pub fixed: Option<(String, String)>,
    /// The key the boundary runs along.
    pub along: String,
    /// What `advise` predicts for that key, when it predicts anything.
    pub predicted: Option<Prediction>,
    /// Why there is no prediction, when there is none.
    pub unpredicted: Option<String>,
    /// `None` when even the largest value is not safe.
    pub measured: Option<Measured>,
    /// `measured − predicted` in grid steps (positive: the simulator needs more than predicted).
    pub steps_apart: Option<f64>,
}

/// Everything a sweep found.
#[derive(Clone, Debug)]
pub struct SweepReport {
    /// The client profile's name.
    pub client: String,
    /// The server profile's name.
    pub server: String,
    /// The scenario family.
    pub scenario: String,
    /// Seeds per cell.
    pub seeds: u64,
    /// The loss-free rate a cell needed to count as safe.
    pub threshold: f64,
    /// The varied keys, one or two.
    pub varies: Vec<Vary>,
    /// In grid order, resumed cells included.
    pub cells: Vec<SweepCell>,
    /// How many cells were read back from the CSV instead of run.
    pub resumed: usize,
    /// Which vary the boundaries run along (the other is fixed per line).
    pub along: usize,
    /// One boundary per line of the grid along `along`.
    pub boundaries: Vec<Boundary>,
}

impl SweepReport {
    /// Whether any run of any cell violated an invariant (the command then exits 1).
    pub fn violated(&self) -> bool {
        self.cells.iter().any(|c| c.tally.violated())
    }
}

/// Where a sweep's tallies come from.
pub enum SweepCells<'a> {
    /// Run every cell here.
    Run(&'a RunFn<'a>, &'a dyn Progress),
    /// Run by the shards of a `--shard K/N` sweep: every cell's tally, in grid order.
    Given(Vec<Tally>),
}

/// Validates, runs and reports a sweep. Nothing runs until keys, values and the CSV (and its
/// header on `--resume`) have been checked. Rows reach the CSV in grid order as the cells before
/// them finish; when the sweep is done the file is rewritten in grid order, resumed rows
/// included (a resumed row outside this grid, or given twice, is refused before any run).
pub fn sweep(
    base: &Scenario,
    vary_specs: &[String],
    opts: &SweepOptions,
    runner: &RunFn,
    progress: &dyn Progress,
) -> Result<SweepReport, SimError> {
    sweep_from(base, vary_specs, opts, SweepCells::Run(runner, progress))
}

/// Checks a sweep's options and builds its grid, before anything runs.
fn plan(base: &Scenario, vary_specs: &[String], opts: &SweepOptions) -> Result<Grid, SimError> {
    if opts.seeds == 0 {
        return Err(SimError::Usage("a sweep needs at least one seed per cell".into()));
    }
    if !(0.0..=1.0).contains(&opts.threshold) {
        return Err(SimError::Usage(format!("the threshold {} is not a rate in [0, 1]", opts.threshold)));
    }
    if opts.resume && opts.csv.is_none() {
        return Err(SimError::Usage("--resume needs --csv: the file to resume".into()));
    }
    let varies = vary_specs.iter().map(|s| parse_vary(s)).collect::<Result<Vec<_>, _>>()?;
    build_grid(base, varies)
}

/// One shard of a sweep (`--shard K/N`): the cells it owns, by index in grid order, with their
/// tallies, and how many cells the whole grid has. The CSV and the plot are `merge`'s to write.
pub fn sweep_shard(
    base: &Scenario,
    vary_specs: &[String],
    opts: &SweepOptions,
    shard: Shard,
    runner: &RunFn,
    progress: &dyn Progress,
) -> Result<(usize, Vec<(usize, Tally)>), SimError> {
    if opts.csv.is_some() || opts.resume {
        return Err(SimError::Usage("--csv and --resume go with `mcpsim merge`, not with --shard".into()));
    }
    let grid = plan(base, vary_specs, opts)?;
    let owned: Vec<usize> = (0..grid.cells.len()).filter(|i| shard.owns(*i)).collect();
    let cells: Vec<PoolCell> =
        owned.iter().map(|i| PoolCell { scenario: &grid.cells[*i].scenario, seeds: 0..opts.seeds }).collect();
    let tallies = run_cells(&cells, opts.jobs, runner, progress, |_, _| Ok(()))?;
    Ok((grid.cells.len(), owned.into_iter().zip(tallies).collect()))
}

/// [`sweep`], its tallies run here or given by the shards of a sharded sweep.
pub fn sweep_from(
    base: &Scenario,
    vary_specs: &[String],
    opts: &SweepOptions,
    source: SweepCells,
) -> Result<SweepReport, SimError> {
    let grid = plan(base, vary_specs, opts)?;
    if let SweepCells::Given(given) = &source {
        if given.len() != grid.cells.len() {
            return Err(SimError::Usage(format!(
                "merge: {} cells given, the sweep has {}",
                given.len(),
                grid.cells.len()
            )));
        }
    }
    let header = csv_header(&grid.varies);
    let keys = grid.varies.len();
    let base_args = base.cli_args();
    let (mut sink, existing) = match &opts.csv {
        Some(path) => {
            let (sink, rows) = CsvSink::open(path, &header, keys, &base_args, opts.seeds, opts.resume)?;
            (Some(sink), rows)
        }
        None => (None, vec![]),
    };
    let mut results: Vec<Option<SweepCell>> = vec![None; grid.cells.len()];
    // A resumed row must be a cell of this grid, once: a row outside it or given twice is
    // refused (kept, it would be written back as if this sweep had run it).
    let refuse = |problem: String| {
        let path = opts.csv.as_ref().map_or(String::new(), |p| p.display().to_string());
        SimError::Usage(format!("--resume {path}: {problem}"))
    };
    for row in existing {
        match grid.cells.iter().position(|c| c.values == row.values) {
            Some(i) if results[i].is_none() => results[i] = Some(row),
            Some(_) => return Err(refuse(format!("the row of {} is given twice", row.values.join(", ")))),
            None => {
                return Err(refuse(format!(
                    "a row of {} is outside this sweep's grid: sweep a grid that holds it, or use another file",
                    row.values.join(", ")
                )))
            }
        }
    }
    let resumed = results.iter().flatten().count();
    let todo: Vec<usize> = (0..grid.cells.len()).filter(|i| results[*i].is_none()).collect();
    let mut on_done = |k: usize, tally: &Tally| match sink.as_mut() {
        Some(sink) => sink.append(&SweepCell { values: grid.cells[todo[k]].values.clone(), tally: tally.clone() }),
        None => Ok(()),
    };
    let tallies = match source {
        SweepCells::Run(runner, progress) => {
            let cells: Vec<PoolCell> =
                todo.iter().map(|i| PoolCell { scenario: &grid.cells[*i].scenario, seeds: 0..opts.seeds }).collect();
            run_cells(&cells, opts.jobs, runner, progress, on_done)?
        }
        SweepCells::Given(mut given) => {
            let mut tallies = Vec::with_capacity(todo.len());
            for (k, i) in todo.iter().enumerate() {
                let tally = std::mem::take(&mut given[*i]);
                on_done(k, &tally)?;
                tallies.push(tally);
            }
            tallies
        }
    };
    for (i, tally) in todo.iter().zip(tallies) {
        results[*i] = Some(SweepCell { values: grid.cells[*i].values.clone(), tally });
    }
    let cells: Vec<SweepCell> = results.into_iter().map(|r| r.expect("every cell ran or was resumed")).collect();
    if let (Some(path), Some(sink)) = (&opts.csv, sink) {
        drop(sink);
        let rows: Vec<Vec<String>> = cells.iter().map(|c| csv_row(c, &base_args)).collect();
        rewrite_csv(path, &header, &rows)?;
    }
    let mut report = SweepReport {
        client: base.client_label(),
        server: base.server.name.clone(),
        scenario: base.name.clone(),
        seeds: opts.seeds,
        threshold: opts.threshold,
        along: along_axis(&grid.varies),
        varies: grid.varies,
        cells,
        resumed,
        boundaries: vec![],
    };
    report.boundaries = boundaries(base, &report);
    Ok(report)
}

// ---------------------------------------------------------------------------------------------
// Boundaries
// ---------------------------------------------------------------------------------------------

/// The vary boundaries run along: the last one advise predicts, else the last one.
fn along_axis(varies: &[Vary]) -> usize {
    let predicted = |v: &Vary| advise::PREDICTED_KEYS.contains(&v.key.as_str());
    varies.iter().rposition(predicted).unwrap_or(varies.len() - 1)
}

/// One boundary line per value of the fixed key (one line in all for a 1-key sweep).
fn boundaries(base: &Scenario, report: &SweepReport) -> Vec<Boundary> {
    let along = report.along;
    let fixed = (report.varies.len() == 2).then(|| 1 - along);
    let fixed_values: Vec<Option<&String>> = match fixed {
        Some(f) => report.varies[f].values.iter().map(Some).collect(),
        None => vec![None],
    };
    fixed_values
        .into_iter()
        .map(|value| {
            let line: Vec<&SweepCell> =
                report.cells.iter().filter(|c| fixed.zip(value).is_none_or(|(f, v)| &c.values[f] == v)).collect();
            let mut scenario = base.clone();
            let fixed_pair = fixed.zip(value).map(|(f, v)| (report.varies[f].key.clone(), v.clone()));
            if let Some((key, v)) = &fixed_pair {
                // The value was validated with this base when the grid was built.
                let _ = scenario.apply_overrides(&[(key.to_string(), v.clone())]);
            }
            let vary = &report.varies[along];
            let (predicted, unpredicted) = match advise::predict(&scenario, &vary.key) {
                Some(Ok(p)) => (Some(p), None),
                Some(Err(why)) => (None, Some(why)),
                None => (None, Some(format!("advise predicts {} only", advise::PREDICTED_KEYS.join(", ")))),
            };
            let measured = measure(&line, along, report.threshold);
            let steps_apart =
                predicted.as_ref().zip(measured.as_ref()).and_then(|(p, m)| steps_between(vary, p.minimal, m.x));
            Boundary { fixed: fixed_pair, along: vary.key.clone(), predicted, unpredicted, measured, steps_apart }
        })
        .collect()
}

/// Whether a cell's loss-free rate reaches the threshold.
fn safe(cell: &SweepCell, threshold: f64) -> bool {
    cell.tally.n > 0 && cell.tally.rate(Outcome::LossFree) >= threshold - 1e-12
}

/// The smallest value of the line from which on every cell is safe (values must be numeric).
pub(crate) fn measure(line: &[&SweepCell], along: usize, threshold: f64) -> Option<Measured> {
    let mut points: Vec<(f64, &SweepCell)> =
        line.iter().map(|c| numeric(&c.values[along]).map(|x| (x, *c))).collect::<Option<Vec<_>>>()?;
    points.sort_by(|a, b| a.0.total_cmp(&b.0));
    let first_safe = points.iter().rposition(|(_, c)| !safe(c, threshold)).map_or(0, |i| i + 1);
    let (x, cell) = points.get(first_safe)?;
    Some(Measured {
        value: cell.values[along].clone(),
        x: *x,
        loss_free: cell.tally.count(Outcome::LossFree),
        n: cell.tally.n,
        interval: cell.tally.interval(Outcome::LossFree),
        whole_line: first_safe == 0,
    })
}

/// `to − from` in grid steps: by the range's step, or by positions in a list.
fn steps_between(vary: &Vary, from: f64, to: f64) -> Option<f64> {
    if let Some(step) = vary.step.filter(|s| *s > 0.0) {
        return Some((to - from) / step);
    }
    let xs: Vec<f64> = vary.values.iter().map(|v| numeric(v)).collect::<Option<Vec<_>>>()?;
    let position = |x: f64| xs.iter().filter(|v| **v < x - 1e-9).count() as f64;
    Some(position(to) - position(from))
}

/// The report as text: one line per cell, then the boundaries.
pub fn render_report(report: &SweepReport) -> String {
    let mut out = format!(
        "sweep: {} × {} × {}, {} seeds per cell{}\n",
        report.client,
        report.server,
        report.scenario,
        report.seeds,
        if report.resumed > 0 { format!(" ({} cells resumed from the CSV)", report.resumed) } else { String::new() }
    );
    let keys: Vec<&str> = report.varies.iter().map(|v| v.key.as_str()).collect();
    out.push_str(&format!(
        "{:<30} {:>22} {:>7} {:>7} {:>7} {:>7} {:>7}\n",
        keys.join(" × "),
        "loss-free [95% CI]",
        "silent",
        "gap",
        "unres.",
        "dup",
        "failed"
    ));
    for c in &report.cells {
        let (lo, hi) = c.tally.interval(Outcome::LossFree);
        let count = |o| format!("{}", c.tally.count(o));
        out.push_str(&format!(
            "{:<30} {:>22} {:>7} {:>7} {:>7} {:>7} {:>7}\n",
            c.values.join(" × "),
            format!("{:.2} [{lo:.2}, {hi:.2}]", c.tally.rate(Outcome::LossFree)),
            count(Outcome::SilentLoss),
            count(Outcome::GapReported),
            count(Outcome::Unresolved),
            count(Outcome::DuplicateExecution),
            count(Outcome::CallFailed),
        ));
    }
    for b in &report.boundaries {
        out.push_str(&render_boundary(b, report.threshold));
    }
    out
}

fn render_boundary(b: &Boundary, threshold: f64) -> String {
    let at = b.fixed.as_ref().map(|(k, v)| format!(" at {k}={v}")).unwrap_or_default();
    let predicted = match &b.predicted {
        Some(p) => format!(
            "> {} (safe from {})",
            advise::show_value(&b.along, p.exceed),
            advise::show_value(&b.along, p.minimal)
        ),
        None => format!("none ({})", b.unpredicted.as_deref().unwrap_or("no prediction")),
    };
    let measured = match &b.measured {
        Some(m) => format!(
            "{}{} (loss-free {}/{}, 95% CI [{:.3}, {:.3}], threshold {threshold})",
            if m.whole_line { "≤ " } else { "" },
            m.value,
            m.loss_free,
            m.n,
            m.interval.0,
            m.interval.1
        ),
        None => "not reached in this grid".into(),
    };
    let apart = b.steps_apart.map(|s| format!("; measured − predicted = {s:+.2} grid steps")).unwrap_or_default();
    format!("boundary of {}{at}: predicted {predicted}; measured {measured}{apart}\n", b.along)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::studies::pool::{RunOutcome, Silent};
    use crate::studies::stats::wilson;
    use crate::studies::tally::tests::{gap, replayed, trace_of, violation};
    use crate::studies::tally::{RunClass, SILENT_LOSS};
    use std::collections::BTreeSet;
    use std::sync::atomic::{AtomicU64, Ordering};

    fn run_sweep(
        base: &Scenario,
        specs: &[String],
        opts: &SweepOptions,
        runner: &RunFn,
    ) -> Result<SweepReport, SimError> {
        sweep(base, specs, opts, runner, &Silent)
    }

    #[test]
    fn ranges_of_durations_and_numbers_expand_inclusively() {
        let v = parse_vary("server.retention_window=30s..2m:30s").unwrap();
        assert_eq!(
            (v.key.as_str(), v.values.clone(), v.step),
            ("server.retention_window", vec!["30s".into(), "1m".into(), "90s".into(), "2m".into()], Some(30.0))
        );
        let v = parse_vary("server.retention=50..400:25").unwrap();
        assert_eq!((v.values.len(), v.values[1].as_str(), v.values[14].as_str()), (15, "75", "400"));
        let v = parse_vary("tool.jitter=0.1..0.3:0.1").unwrap();
        assert_eq!(v.values, ["0.1", "0.2", "0.3"]);
        let v = parse_vary("server.retention=50..60:25").unwrap();
        assert_eq!(v.values, ["50"], "the end is included only when a step lands on it");
        let v = parse_vary("server.unhonourable=410, silent-head").unwrap();
        assert_eq!((v.values, v.step), (vec!["410".to_string(), "silent-head".into()], None));
    }

    #[test]
    fn a_field_given_by_its_path_is_varied_as_set_takes_it() {
        let base = chatty();
        let v = parse_vary("server.retention.max_events=10..30:10").unwrap();
        assert_eq!(
            (v.key.as_str(), v.values.clone()),
            ("server.retention.max_events", vec!["10".into(), "20".into(), "30".into()])
        );
        let g = build_grid(&base, vec![v, parse_vary("lb.max_lifetime=100s,none").unwrap()]).unwrap();
        assert_eq!(g.cells.len(), 6);
        assert_eq!(g.cells[1].scenario.server.retention.max_events, Some(10));
        assert_eq!(g.cells[1].scenario.lb.max_lifetime, None);
        assert_eq!(g.cells[4].scenario.server.retention.max_events, Some(30));
        // The key is checked as --set checks it, and so is each value, before anything runs.
        assert!(matches!(parse_vary("server.nope=1,2"), Err(SimError::UnknownKey { .. })));
        let bad = build_grid(&base, vec![parse_vary("server.retention.max_events=10,ten").unwrap()]);
        assert!(matches!(bad, Err(SimError::BadValue { .. })), "{bad:?}");
        let twice = build_grid(&base, vec![parse_vary("server.retention.max_events=10, 10").unwrap()]);
        assert!(matches!(twice, Err(SimError::BadValue { .. })), "{twice:?}");
    }

    #[test]
    fn bad_grid_specs_name_the_problem() {
        let problem = |spec: &str| parse_vary(spec).unwrap_err().to_string();
        assert!(matches!(parse_vary("server.retentoin=1,2"), Err(SimError::UnknownKey { .. })));
        assert!(
            problem("server.retention=400..50:25").contains("reversed"),
            "{}",
            problem("server.retention=400..50:25")
        );
        assert!(problem("server.retention=50..400:0").contains("step is zero"));
        assert!(problem("server.retention_window=30s..2m:0s").contains("step is zero"));
        assert!(problem("server.retention=").contains("no values"));
        assert!(problem("server.retention=1,,2").contains("empty value"));
        assert!(problem("server.retention=a..b:1").contains("neither a number nor a duration"));
        assert!(problem("server.retention=0..1000000:1").contains("more than 10000 values"));
        assert!(matches!(parse_vary("server.retention"), Err(SimError::Usage(_))));
    }

    /// The second incident, with a jitter-free client so that advise predicts 242 events.
    fn chatty() -> Scenario {
        let mut s = Scenario::build("chatty-tool", "reference", "reference").unwrap();
        s.apply_overrides(&[("client.reconnect.jitter".into(), "0".into())]).unwrap();
        s
    }

    fn grid(specs: &[&str]) -> Result<Grid, SimError> {
        build_grid(&chatty(), specs.iter().map(|s| parse_vary(s).unwrap()).collect())
    }

    #[test]
    fn every_value_is_checked_by_its_key_before_anything_runs() {
        let err = grid(&["client.backoff_factor=2,0"]).unwrap_err();
        assert!(matches!(&err, SimError::BadValue { value, .. } if value == "0"), "{err}");
        let err = grid(&["server.retention=100,unlimited"]).unwrap_err().to_string();
        assert!(err.contains("unlimited"), "{err}");
        let err = grid(&["lb.idle_timeout=60s,1m"]).unwrap_err().to_string();
        assert!(err.contains("same value"), "{err}");
        assert!(matches!(grid(&["server.retention=1", "server.retention=2"]), Err(SimError::Usage(_))));
        assert!(matches!(
            grid(&["server.retention=1", "tool.jitter=0", "lb.idle_timeout=1s"]),
            Err(SimError::Usage(_))
        ));
    }

    #[test]
    fn cells_are_the_product_with_values_as_shown_and_recorded_as_overrides() {
        let g = grid(&["lb.idle_timeout=300s,none", "server.retention=10,20"]).unwrap();
        let values: Vec<String> = g.cells.iter().map(|c| c.values.join(" ")).collect();
        assert_eq!(values, ["5m 10", "5m 20", "none 10", "none 20"]);
        let last = &g.cells[3].scenario;
        assert_eq!((last.lb.idle_timeout, last.server.retention.max_events), (None, Some(20)));
        assert!(
            last.cli_args().ends_with("--set lb.idle_timeout=none --set server.retention=20"),
            "{}",
            last.cli_args()
        );
    }

    /// A fake simulator: a retention of at least 242 events resumes cleanly; below, the
    /// reference server reports a gap and the silent-head server loses events silently, except
    /// for odd seeds at 240 and 241, which get lucky.
    fn fake(calls: &AtomicU64) -> impl Fn(&Scenario, u64) -> Result<RunOutcome, SimError> + Sync + '_ {
        move |s: &Scenario, seed: u64| {
            calls.fetch_add(1, Ordering::SeqCst);
            let r = s.server.retention.max_events.unwrap_or(u32::MAX);
            let lucky = (240..242).contains(&r) && seed % 2 == 1;
            let (steps, violations) = if r >= 242 || lucky {
                (vec![replayed()], vec![])
            } else if s.server.name == "silent-head" {
                (vec![replayed()], vec![violation(SILENT_LOSS)])
            } else {
                (vec![gap()], vec![])
            };
            Ok(RunOutcome { trace: trace_of(steps), violations, explained_by: vec![] })
        }
    }

    fn options(dir: &Path, seeds: u64, jobs: usize) -> SweepOptions {
        SweepOptions { seeds, jobs, csv: Some(dir.join("out.csv")), ..SweepOptions::default() }
    }

    /// A fresh directory, removed when dropped (at the end of the test, also when it panics).
    fn temp_dir(name: &str) -> tempfile::TempDir {
        tempfile::Builder::new().prefix(&format!("mcpsim-sweep-{name}-")).tempdir().unwrap()
    }

    /// The fields of every record of a CSV file.
    fn records(path: &Path) -> Vec<Vec<String>> {
        let mut reader = csv::ReaderBuilder::new().has_headers(false).from_path(path).unwrap();
        reader.records().map(|r| r.unwrap().iter().map(str::to_string).collect()).collect()
    }

    #[test]
    fn a_sweep_counts_outcomes_and_finds_the_boundary_advise_predicts() {
        let tmp = temp_dir("boundary");
        let dir = tmp.path();
        let calls = AtomicU64::new(0);
        let specs = vec!["server.retention=200..260:10".to_string()];
        let report = run_sweep(&chatty(), &specs, &options(dir, 10, 3), &fake(&calls)).unwrap();
        assert_eq!(calls.load(Ordering::SeqCst), 70);
        let values: Vec<&str> = report.cells.iter().map(|c| c.values[0].as_str()).collect();
        assert_eq!(values, ["200", "210", "220", "230", "240", "250", "260"]);
        let at240 = &report.cells[4].tally;
        assert_eq!((at240.count(Outcome::LossFree), at240.count(Outcome::GapReported), at240.n), (5, 5, 10));
        assert_eq!(at240.interval(Outcome::LossFree), wilson(5, 10));
        assert!(at240.replays[&Outcome::GapReported].ends_with("--set server.retention=240 --seed 0"));
        assert!(!report.violated(), "gaps are reported, nothing is violated");
        let b = &report.boundaries[0];
        assert_eq!(b.predicted.as_ref().map(|p| p.minimal), Some(242.0));
        let m = b.measured.as_ref().unwrap();
        assert_eq!((m.value.as_str(), m.loss_free, m.n, m.whole_line), ("250", 10, 10, false));
        assert!((b.steps_apart.unwrap() - 0.8).abs() < 1e-9, "{:?}", b.steps_apart);
        let text = render_report(&report);
        assert!(text.contains("predicted > 241.01 (safe from 242); measured 250 (loss-free 10/10"), "{text}");
        assert!(text.contains("+0.80 grid steps"), "{text}");
        // A lower threshold accepts 240, where half the seeds are loss-free.
        let lenient = SweepOptions { threshold: 0.5, csv: None, ..options(dir, 10, 3) };
        let report = run_sweep(&chatty(), &specs, &lenient, &fake(&calls)).unwrap();
        assert_eq!(report.boundaries[0].measured.as_ref().map(|m| m.value.as_str()), Some("240"));
    }

    #[test]
    fn results_do_not_depend_on_the_number_of_workers() {
        let tmp = temp_dir("jobs");
        let dir = tmp.path();
        let calls = AtomicU64::new(0);
        let specs = vec!["server.retention=230..250:5".to_string(), "server.unhonourable=410,silent-head".to_string()];
        let mut base = chatty();
        base.server.name = "silent-head".into();
        let one = run_sweep(&base, &specs, &SweepOptions { csv: None, ..options(dir, 6, 1) }, &fake(&calls)).unwrap();
        let four = run_sweep(&base, &specs, &SweepOptions { csv: None, ..options(dir, 6, 4) }, &fake(&calls)).unwrap();
        assert_eq!(one.cells, four.cells);
        assert_eq!(one.boundaries, four.boundaries);
        assert_eq!(one.cells[0].tally.count(Outcome::SilentLoss), 6);
        assert!(one.violated());
        assert_eq!(one.along, 0, "boundaries run along the predicted key");
        assert_eq!(one.boundaries.len(), 2);
    }

    #[test]
    fn two_identical_sweeps_write_byte_identical_csv_files_in_grid_order() {
        let tmp = temp_dir("bytes");
        let dir = tmp.path();
        let calls = AtomicU64::new(0);
        let specs = vec!["server.retention=230..250:5".to_string(), "server.unhonourable=410,silent-head".to_string()];
        // Lower cells take longer, so with two workers they finish out of grid order.
        let slow_low = |s: &Scenario, seed: u64| {
            let r = u64::from(s.server.retention.max_events.unwrap_or(0));
            let mut x = 0u64;
            for k in 0..(260 - r) * 5_000 {
                x = x.wrapping_mul(31).wrapping_add(k);
            }
            std::hint::black_box(x);
            fake(&calls)(s, seed)
        };
        let a = SweepOptions { csv: Some(dir.join("a.csv")), ..options(dir, 4, 2) };
        let b = SweepOptions { csv: Some(dir.join("b.csv")), ..options(dir, 4, 2) };
        run_sweep(&chatty(), &specs, &a, &slow_low).unwrap();
        run_sweep(&chatty(), &specs, &b, &slow_low).unwrap();
        let (a, b) = (fs::read(dir.join("a.csv")).unwrap(), fs::read(dir.join("b.csv")).unwrap());
        assert_eq!(a, b);
        let rows = records(&dir.join("a.csv"));
        let cells: Vec<String> = rows[1..].iter().map(|r| format!("{} {}", r[0], r[1])).collect();
        assert_eq!(
            cells,
            [
                "230 gone410",
                "230 silent-head",
                "235 gone410",
                "235 silent-head",
                "240 gone410",
                "240 silent-head",
                "245 gone410",
                "245 silent-head",
                "250 gone410",
                "250 silent-head"
            ]
        );
    }

    #[test]
    fn the_csv_holds_a_row_per_cell_and_resume_runs_only_the_missing_cells() {
        let tmp = temp_dir("resume");
        let dir = tmp.path();
        let calls = AtomicU64::new(0);
        let opts = options(dir, 4, 2);
        run_sweep(&chatty(), &["server.retention=200,300".to_string()], &opts, &fake(&calls)).unwrap();
        let text = fs::read_to_string(dir.join("out.csv")).unwrap();
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines.len(), 3);
        assert!(
            lines[0].starts_with("server.retention,n,clean_resume,clean_resume_rate,clean_resume_lo,clean_resume_hi,")
        );
        assert!(lines[0].ends_with(",replay_other_violation,base"));
        let row200 = lines.iter().find(|l| l.starts_with("200,")).unwrap();
        assert!(row200.starts_with("200,4,0,0.0000,0.0000,0.4899,4,1.0000,"), "{row200}");
        calls.store(0, Ordering::SeqCst);
        let resumed = SweepOptions { resume: true, ..opts.clone() };
        let grid = ["server.retention=200,250,300".to_string()];
        let report = run_sweep(&chatty(), &grid, &resumed, &fake(&calls)).unwrap();
        assert_eq!((calls.load(Ordering::SeqCst), report.resumed), (4, 2), "only the new cell runs");
        let rows = records(&dir.join("out.csv"));
        let firsts: Vec<&str> = rows.iter().map(|r| r[0].as_str()).collect();
        assert_eq!(firsts, ["server.retention", "200", "250", "300"], "rewritten in grid order");
        assert_eq!(report.cells[0].tally.count(Outcome::GapReported), 4, "resumed tallies are read back");
        assert!(report.cells[0].tally.replays[&Outcome::GapReported].contains("--seed 0"));
        // Resuming a finished sweep runs nothing and reads back the same tallies.
        calls.store(0, Ordering::SeqCst);
        let again = run_sweep(&chatty(), &grid, &resumed, &fake(&calls)).unwrap();
        assert_eq!((calls.load(Ordering::SeqCst), again.resumed), (0, 3));
        assert_eq!(again.cells, report.cells);
    }

    #[test]
    fn fields_with_a_newline_a_comma_and_quotes_round_trip_through_resume() {
        let tmp = temp_dir("newline");
        let dir = tmp.path();
        let calls = AtomicU64::new(0);
        // An override whose value holds a comma, a quote and a line break: it reaches the base
        // column and every replay command.
        let mut base = chatty();
        base.server.name = "silent-head".into();
        base.overrides.push(("note".into(), "a, \"b\"\nc".into()));
        let opts = options(dir, 3, 2);
        let first = run_sweep(&base, &["server.retention=200,250".to_string()], &opts, &fake(&calls)).unwrap();
        let replay = &first.cells[0].tally.replays[&Outcome::SilentLoss];
        assert!(replay.contains("--set 'note=a, \"b\"\nc'"), "{replay}");
        assert_eq!(first.cells[0].tally.first_violation.as_ref().map(|(s, r)| (*s, r)), Some((0, replay)));
        calls.store(0, Ordering::SeqCst);
        let resumed = SweepOptions { resume: true, ..opts };
        let again = run_sweep(&base, &["server.retention=200,250".to_string()], &resumed, &fake(&calls)).unwrap();
        assert_eq!((calls.load(Ordering::SeqCst), again.resumed), (0, 2), "both rows read back");
        assert_eq!(again.cells, first.cells);
    }

    #[test]
    fn resume_refuses_a_csv_from_another_sweep_before_running_anything() {
        let tmp = temp_dir("refuse");
        let dir = tmp.path();
        let calls = AtomicU64::new(0);
        let opts = options(dir, 4, 2);
        run_sweep(&chatty(), &["server.retention=200".to_string()], &opts, &fake(&calls)).unwrap();
        calls.store(0, Ordering::SeqCst);
        let resumed = SweepOptions { resume: true, ..opts.clone() };
        let err =
            run_sweep(&chatty(), &["server.retention_window=1m".to_string()], &resumed, &fake(&calls)).unwrap_err();
        assert!(err.to_string().contains("header does not match"), "{err}");
        let err = run_sweep(
            &chatty(),
            &["server.retention=300".to_string()],
            &SweepOptions { seeds: 5, ..resumed.clone() },
            &fake(&calls),
        )
        .unwrap_err();
        assert!(err.to_string().contains("line 2 ran 4 seeds; this sweep runs 5"), "{err}");
        let other = Scenario::build("chatty-tool", "rmcp", "reference").unwrap();
        let err = run_sweep(&other, &["server.retention=300".to_string()], &resumed, &fake(&calls)).unwrap_err();
        assert!(err.to_string().contains("another scenario"), "{err}");
        assert_eq!(calls.load(Ordering::SeqCst), 0);
    }

    #[test]
    fn resume_refuses_a_row_outside_the_grid_or_given_twice() {
        let tmp = temp_dir("outside");
        let dir = tmp.path();
        let calls = AtomicU64::new(0);
        let opts = options(dir, 2, 1);
        run_sweep(&chatty(), &["server.retention=200,250".to_string()], &opts, &fake(&calls)).unwrap();
        let resumed = SweepOptions { resume: true, ..opts };
        let err = run_sweep(&chatty(), &["server.retention=250,300".to_string()], &resumed, &fake(&calls)).unwrap_err();
        assert!(err.to_string().contains("a row of 200 is outside this sweep's grid"), "{err}");
        let path = dir.join("out.csv");
        let text = fs::read_to_string(&path).unwrap();
        let row = text.lines().nth(1).unwrap().to_string();
        fs::write(&path, format!("{text}{row}\n")).unwrap();
        let err = run_sweep(&chatty(), &["server.retention=200,250".to_string()], &resumed, &fake(&calls)).unwrap_err();
        assert!(err.to_string().contains("given twice"), "{err}");
    }

    #[test]
    fn a_row_cut_short_is_dropped_and_its_cell_runs_again() {
        let tmp = temp_dir("cut");
        let dir = tmp.path();
        let calls = AtomicU64::new(0);
        let opts = options(dir, 2, 1);
        run_sweep(&chatty(), &["server.retention=200,250".to_string()], &opts, &fake(&calls)).unwrap();
        let path = dir.join("out.csv");
        let text = fs::read_to_string(&path).unwrap();
        fs::write(&path, &text[..text.len() - 10]).unwrap();
        calls.store(0, Ordering::SeqCst);
        let report = run_sweep(
            &chatty(),
            &["server.retention=200,250".to_string()],
            &SweepOptions { resume: true, ..opts },
            &fake(&calls),
        )
        .unwrap();
        assert_eq!((calls.load(Ordering::SeqCst), report.resumed), (2, 1));
        assert_eq!(fs::read_to_string(&path).unwrap(), text, "the same file as before the cut");
    }

    #[test]
    fn bad_options_and_unwritable_paths_fail_before_any_run() {
        let calls = AtomicU64::new(0);
        let tmp = temp_dir("paths");
        let dir = tmp.path();
        let blocker = dir.join("file");
        fs::write(&blocker, "x").unwrap();
        let specs = vec!["server.retention=200".to_string()];
        let under_file = SweepOptions { csv: Some(blocker.join("out.csv")), ..options(dir, 2, 1) };
        assert!(matches!(run_sweep(&chatty(), &specs, &under_file, &fake(&calls)), Err(SimError::Io { .. })));
        assert!(matches!(
            run_sweep(&chatty(), &specs, &SweepOptions { seeds: 0, ..options(dir, 2, 1) }, &fake(&calls)),
            Err(SimError::Usage(_))
        ));
        let no_csv = SweepOptions { csv: None, resume: true, ..options(dir, 2, 1) };
        assert!(matches!(run_sweep(&chatty(), &specs, &no_csv, &fake(&calls)), Err(SimError::Usage(_))));
        assert_eq!(calls.load(Ordering::SeqCst), 0);
    }

    #[test]
    fn a_failing_run_stops_the_sweep_with_its_replay_command_and_keeps_finished_rows() {
        let tmp = temp_dir("fail");
        let dir = tmp.path();
        let runner = |s: &Scenario, seed: u64| {
            if s.server.retention.max_events == Some(250) && seed == 1 {
                Err(SimError::Runtime("boom".into()))
            } else {
                Ok(RunOutcome { trace: trace_of(vec![]), violations: vec![], explained_by: vec![] })
            }
        };
        let err =
            run_sweep(&chatty(), &["server.retention=200,250".to_string()], &options(dir, 3, 1), &runner).unwrap_err();
        let text = err.to_string();
        assert!(text.contains("boom") && text.contains("--set server.retention=250 --seed 1"), "{text}");
        let csv = fs::read_to_string(dir.join("out.csv")).unwrap();
        assert!(csv.lines().nth(1).is_some_and(|l| l.starts_with("200,3,")), "{csv}");
    }

    /// Real runs: the boundary advise predicts for rmcp against the reference server (events
    /// every second, a 4-minute partition, rmcp back 15 s after it heals) is where the simulator
    /// puts it: 255 events keep the stream whole in every seed, 254 do not. The prediction is the
    /// worst case (a tick just before the resume arrives): at 254 a seed whose resume reaches the
    /// server before the next tick evicts the first missed event keeps it whole (seed 0 since
    /// the project's own transport, whose connects take no extra millisecond).
    #[test]
    fn the_simulator_agrees_with_the_predicted_boundary() {
        let base = Scenario::build("chatty-tool", "rmcp", "reference").unwrap();
        let opts = SweepOptions { seeds: 2, jobs: 2, ..SweepOptions::default() };
        let report =
            run_sweep(&base, &["server.retention=254,255".to_string()], &opts, &crate::engine::runner::run).unwrap();
        let b = &report.boundaries[0];
        assert_eq!(b.predicted.as_ref().map(|p| p.minimal), Some(255.0));
        assert!(report.cells[0].tally.count(Outcome::LossFree) < 2, "{}", render_report(&report));
        assert_eq!(b.measured.as_ref().map(|m| (m.value.as_str(), m.loss_free)), Some(("255", 2)));
    }

    #[test]
    fn the_measured_boundary_needs_every_larger_value_safe() {
        let cell = |v: &str, free: u64| {
            let mut tally = Tally::new();
            for i in 0..4 {
                let outcomes = if i < free { [Outcome::LossFree].into() } else { [Outcome::GapReported].into() };
                tally.add(i, &RunClass { outcomes, violations: BTreeSet::new() }, || "r".into());
            }
            SweepCell { values: vec![v.to_string()], tally }
        };
        let cells = [cell("30s", 4), cell("1m", 2), cell("90s", 4), cell("2m", 4)];
        let line: Vec<&SweepCell> = cells.iter().collect();
        assert_eq!(measure(&line, 0, 1.0).map(|m| m.value), Some("90s".to_string()));
        assert_eq!(measure(&line, 0, 0.5).map(|m| (m.value, m.whole_line)), Some(("30s".to_string(), true)));
        let unsafe_end = [cell("1m", 4), cell("2m", 3)];
        assert_eq!(measure(&unsafe_end.iter().collect::<Vec<_>>(), 0, 1.0), None);
        let words = [cell("none", 4)];
        assert_eq!(measure(&words.iter().collect::<Vec<_>>(), 0, 1.0), None);
    }
}
