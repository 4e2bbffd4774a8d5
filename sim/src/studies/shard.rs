//! Scale-out: a deterministic partition of a study's cells over N processes (`--shard K/N`),
//! each writing its share to a directory, and the merge of those shares into exactly what the
//! unsharded command prints (`mcpsim merge DIR...`).
//!
//! Cell `i` (in the unsharded command's order) belongs to shard `i mod N + 1`, so the shards
//! are balanced whatever the order, and the merge puts every cell back at its index.
//!
//! A shard file carries two digests (FNV-1a, 64 bits, hex): `digest`, of every byte of the file
//! after its own line, and `run`, of the command, the mcpsim version and the question (the flags
//! that decide the work). The merge refuses, in one line, a file whose content does not match its
//! digest (a flipped bit, an edited count or name), a file whose `run` is not its question's, and
//! shards of different runs; then every cell must be the one its index names, with a tally that
//! adds up over the question's seeds and names only known invariants.

use crate::error::SimError;
use crate::scenario::files;
use crate::studies::matrix::{CellDoc, MatrixCell};
use crate::studies::tally::{Outcome, Tally};
use mcpsim_model::oracle::InvariantId;
use mcpsim_model::trace::{fnv1a, FNV_OFFSET};
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::fmt;
use std::path::{Path, PathBuf};
use std::str::FromStr;

/// The most shards a run may be split into.
pub const MAX_SHARDS: u64 = 100_000;

/// The largest shard file a merge reads (a matrix shard with its document's traces is a few MiB).
pub const MAX_SHARD_BYTES: u64 = 256 << 20;

/// One shard of N: `k` counts from 1.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Shard {
    /// This shard, 1..=n.
    pub k: u64,
    /// How many shards there are.
    pub n: u64,
}

impl Shard {
    /// Whether cell `index` (0-based, in the unsharded order) is this shard's.
    pub fn owns(&self, index: usize) -> bool {
        index as u64 % self.n == self.k - 1
    }

    /// This shard's block of `count` consecutive items from `first` (seeds in order, for a
    /// study that stops at the first hit): the first item and how many. Blocks of the N shards
    /// tile the range in shard order and differ in length by one at most.
    pub fn block(&self, first: u64, count: u64) -> (u64, u64) {
        let edge = |k: u64| (u128::from(count) * u128::from(k) / u128::from(self.n)) as u64;
        let (from, to) = (edge(self.k - 1), edge(self.k));
        (first + from, to - from)
    }

    /// The directory a shard writes by default: `shard-K-of-N`.
    pub fn default_dir(&self) -> PathBuf {
        PathBuf::from(format!("shard-{}-of-{}", self.k, self.n))
    }
}

impl fmt::Display for Shard {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.k, self.n)
    }
}

impl FromStr for Shard {
    type Err = SimError;
    /// `K/N` with 1 ≤ K ≤ N ≤ [`MAX_SHARDS`].
    fn from_str(text: &str) -> Result<Shard, SimError> {
        let bad = |why: &str| SimError::Usage(format!("--shard {text:?}: {why} (write K/N, e.g. 3/8)"));
        let (k, n) = text.split_once('/').ok_or_else(|| bad("no '/'"))?;
        let k: u64 = k.trim().parse().map_err(|_| bad("K is not a whole number"))?;
        let n: u64 = n.trim().parse().map_err(|_| bad("N is not a whole number"))?;
        if n == 0 || n > MAX_SHARDS {
            return Err(bad(&format!("N must be 1 to {MAX_SHARDS}")));
        }
        if k == 0 || k > n {
            return Err(bad("K must be 1 to N"));
        }
        Ok(Shard { k, n })
    }
}

/// What a matrix command was asked, so shards of different commands are not merged.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct MatrixQuestion {
    /// Client profiles, as given.
    pub clients: Vec<String>,
    /// Server profiles, as given.
    pub servers: Vec<String>,
    /// Scenario families, as given.
    pub scenarios: Vec<String>,
    /// Seeds per cell.
    pub seeds: u64,
    /// The mitigation applied, if any.
    pub mitigation: Option<String>,
    /// How many cells the whole matrix has.
    pub cells: usize,
}

/// A tally as a shard file holds it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct TallyRecord {
    n: u64,
    counts: BTreeMap<String, u64>,
    violations: BTreeMap<String, u64>,
    replays: BTreeMap<String, String>,
    first_violation: Option<(u64, String)>,
}

impl TallyRecord {
    /// The record of `t`.
    pub fn of(t: &Tally) -> TallyRecord {
        TallyRecord {
            n: t.n,
            counts: Outcome::ALL.iter().map(|o| (o.name().to_string(), t.count(*o))).collect(),
            violations: t.violations.clone(),
            replays: t.replays.iter().map(|(o, r)| (o.name().to_string(), r.clone())).collect(),
            first_violation: t.first_violation.clone(),
        }
    }

    /// The tally recorded over `seeds` seeds, or what in the record is not such a tally: its
    /// runs are the seeds, no outcome counts more runs than there were, no invariant is broken in more
    /// runs than there were, and every invariant is one mcpsim has.
    pub fn tally(&self, seeds: u64) -> Result<Tally, String> {
        let outcome = |name: &str| {
            Outcome::ALL.iter().copied().find(|o| o.name() == name).ok_or_else(|| format!("unknown outcome {name:?}"))
        };
        if self.n != seeds {
            return Err(format!("a tally of {} runs, but the run has {seeds} seeds per cell", self.n));
        }
        if let Some((name, count)) = self.counts.iter().find(|(_, c)| **c > self.n) {
            return Err(format!("{name} in {count} of {} runs", self.n));
        }
        for (name, count) in &self.violations {
            name.parse::<InvariantId>().map_err(|_| format!("unknown invariant {name:?}"))?;
            if *count == 0 || *count > self.n {
                return Err(format!("{name} broken in {count} of {} runs", self.n));
            }
        }
        if let Some((seed, _)) = &self.first_violation {
            if *seed >= seeds || self.violations.is_empty() {
                return Err(format!(
                    "first violation at seed {seed}, of seeds 0..{seeds} with {} broken",
                    self.violations.len()
                ));
            }
        }
        let mut t = Tally::new();
        t.n = self.n;
        for (name, count) in &self.counts {
            t.set_count(outcome(name)?, *count);
        }
        t.violations = self.violations.clone();
        for (name, replay) in &self.replays {
            t.replays.insert(outcome(name)?, replay.clone());
        }
        t.first_violation = self.first_violation.clone();
        Ok(t)
    }
}

/// What one shard of any command wrote: its digest, the command, the run's digest, which shard,
/// the question every shard of the run must share (the flags that decide the work), and this
/// shard's part of the answer.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
struct ShardFile<Q, P> {
    digest: String,
    command: String,
    run: String,
    shard: Shard,
    question: Q,
    cells: P,
}

fn hex_digest(bytes: &[u8]) -> String {
    format!("{:016x}", fnv1a(FNV_OFFSET, bytes))
}

/// The digest of the run a shard belongs to: the command, this mcpsim's version and the question,
/// as JSON read back once (so a number reads back to the same text at the merge).
fn run_digest<Q: Serialize + DeserializeOwned>(command: &str, question: &Q) -> String {
    let once = serde_json::to_string(question).expect("a question is plain data");
    let again: Q = serde_json::from_str(&once).expect("a question reads back");
    let text = serde_json::to_string(&again).expect("a question is plain data");
    hex_digest(format!("{command}\n{}\n{text}", env!("CARGO_PKG_VERSION")).as_bytes())
}

/// The first line of a shard file, before the digest's value.
const DIGEST_LINE: &str = "{\n  \"digest\": \"";

/// The digest a shard file's text states, and the digest of the text it covers (every byte after
/// the digest's line, behind an opening brace); `None` when the file does not start with one.
fn digests_of(text: &str) -> Option<(&str, String)> {
    let rest = text.strip_prefix(DIGEST_LINE)?;
    let (stated, body) = rest.split_once("\",\n")?;
    Some((stated, hex_digest(format!("{{\n{body}").as_bytes())))
}

/// The file `command`'s shard writes in its directory.
pub fn file_name(command: &str) -> String {
    format!("{command}-shard.json")
}

/// Which command's shard `dir` holds (the first of matrix, sweep, check, explore whose file is
/// there), so `mcpsim merge` needs no flag to tell.
pub fn command_in(dir: &Path) -> Result<&'static str, SimError> {
    ["matrix", "sweep", "check", "explore"].into_iter().find(|c| dir.join(file_name(c)).is_file()).ok_or_else(|| {
        SimError::Io {
            path: dir.display().to_string(),
            problem: "no shard file here (matrix-, sweep-, check- or explore-shard.json)".into(),
        }
    })
}

/// Writes one shard's part of `command`'s answer to `dir`.
pub fn write_shard<Q: Serialize + DeserializeOwned, P: Serialize>(
    dir: &Path,
    command: &str,
    shard: Shard,
    question: &Q,
    part: &P,
) -> Result<PathBuf, SimError> {
    #[derive(Serialize)]
    struct Out<'a, Q, P> {
        command: &'a str,
        run: &'a str,
        shard: Shard,
        question: &'a Q,
        cells: &'a P,
    }
    let path = dir.join(file_name(command));
    let run = run_digest(command, question);
    let file = Out { command, run: &run, shard, question, cells: part };
    let body = serde_json::to_string_pretty(&file).expect("a shard file is plain data") + "\n";
    let inner = body.strip_prefix("{\n").expect("a JSON object starts with a brace");
    let text = format!("{DIGEST_LINE}{}\",\n{inner}", hex_digest(body.as_bytes()));
    crate::report::artifacts::write_file(&path, &text)?;
    Ok(path)
}

/// One shard's part of the answer, with the directory it was read from.
pub type Part<P> = (Shard, PathBuf, P);

/// Reads the shards of one `command` run from `dirs`, in shard order. Refuses shards of another
/// command or question (`what` names the command's question in the message), a shard given
/// twice, and a set with a shard missing. Each part comes with the directory it was read from.
pub fn read_shards<Q, P>(dirs: &[PathBuf], command: &str, what: &str) -> Result<(Q, Vec<Part<P>>), SimError>
where
    Q: Serialize + DeserializeOwned + PartialEq,
    P: DeserializeOwned,
{
    let bad = |path: &Path, problem: String| SimError::Io { path: path.display().to_string(), problem };
    if dirs.is_empty() {
        return Err(SimError::Usage("merge needs the shard directories".into()));
    }
    let mut question: Option<Q> = None;
    let mut n: Option<u64> = None;
    let mut parts: BTreeMap<u64, (PathBuf, P)> = BTreeMap::new();
    for dir in dirs {
        let path = dir.join(file_name(command));
        let text = files::read_capped(&path, MAX_SHARD_BYTES).map_err(|e| bad(&path, e))?;
        let Some((stated, actual)) = digests_of(&text) else {
            return Err(bad(&path, format!("not a {command} shard of this mcpsim: it has no digest line")));
        };
        if stated != actual {
            return Err(bad(
                &path,
                format!("damaged: its content's digest is {actual}, the file says {stated} (run the shard again)"),
            ));
        }
        let file: ShardFile<Q, P> =
            serde_json::from_str(&text).map_err(|e| bad(&path, format!("not a {command} shard: {e}")))?;
        if file.command != command {
            return Err(bad(&path, format!("a shard of {:?}, not of {command}", file.command)));
        }
        let run = run_digest(command, &file.question);
        if file.run != run {
            return Err(bad(
                &path,
                format!(
                    "its run digest {} is not its question's, {run} (another mcpsim version, or an edited file)",
                    file.run
                ),
            ));
        }
        match &question {
            None => question = Some(file.question),
            Some(q) if *q != file.question => {
                return Err(bad(&path, format!("a shard of another {command} ({what} differ)")))
            }
            Some(_) => {}
        }
        match n {
            None => n = Some(file.shard.n),
            Some(n) if n != file.shard.n => {
                return Err(bad(&path, format!("shard {} of {}, the others are of {n}", file.shard.k, file.shard.n)))
            }
            Some(_) => {}
        }
        if let Some((other, _)) = parts.get(&file.shard.k) {
            return Err(bad(&path, format!("shard {} given twice (also {})", file.shard, other.display())));
        }
        parts.insert(file.shard.k, (dir.clone(), file.cells));
    }
    let (question, n) = (question.expect("one shard at least was read"), n.expect("one shard at least was read"));
    let missing: Vec<String> = (1..=n).filter(|k| !parts.contains_key(k)).map(|k| format!("{k}/{n}")).collect();
    if !missing.is_empty() {
        return Err(SimError::Usage(format!("merge: shard(s) {} missing", missing.join(", "))));
    }
    Ok((question, parts.into_iter().map(|(k, (dir, p))| (Shard { k, n }, dir, p)).collect()))
}

/// Puts the indexed cells of every shard back in the whole run's order, checking each cell
/// belongs to the shard that wrote it and that all `total` are there.
pub fn collect_cells<C>(parts: Vec<(Shard, Vec<(usize, C)>)>, total: usize) -> Result<Vec<C>, SimError> {
    let mut cells: BTreeMap<usize, C> = BTreeMap::new();
    for (shard, part) in parts {
        for (index, cell) in part {
            if !shard.owns(index) || cells.insert(index, cell).is_some() {
                return Err(SimError::Usage(format!("merge: cell {index} does not belong to shard {shard}")));
            }
        }
    }
    if cells.len() != total || cells.keys().copied().ne(0..total) {
        return Err(SimError::Usage(format!("merge: {} of the run's {total} cells present", cells.len())));
    }
    Ok(cells.into_values().collect())
}

/// One cell of a matrix shard, at its index in the whole matrix.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
struct CellRecord {
    index: usize,
    client: String,
    server: String,
    scenario: String,
    tally: TallyRecord,
    /// What an incompatible cell says instead of a verdict (absent for a cell that ran).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    incompatible: Option<String>,
    /// What the compatibility document says of the cell, when it is broken.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    doc: Option<CellDoc>,
}

/// Writes a matrix shard's cells (each with its index in the whole matrix) to `dir`.
pub fn write_matrix_shard(
    dir: &Path,
    shard: Shard,
    question: &MatrixQuestion,
    cells: &[(usize, MatrixCell, Option<CellDoc>)],
) -> Result<PathBuf, SimError> {
    let records: Vec<CellRecord> = cells
        .iter()
        .map(|(index, c, doc)| CellRecord {
            index: *index,
            client: c.client.clone(),
            server: c.server.clone(),
            scenario: c.scenario.clone(),
            tally: TallyRecord::of(&c.tally),
            incompatible: c.incompatible.clone(),
            doc: doc.clone(),
        })
        .collect();
    write_shard(dir, "matrix", shard, question, &records)
}

/// The cells of a merged matrix, each with what the document says of it (broken cells only).
pub type MergedMatrix = (MatrixQuestion, Vec<(MatrixCell, Option<CellDoc>)>);

/// Reads the matrix shards in `dirs` and puts their cells back in the whole matrix's order.
/// Refuses shards of different questions, a shard given twice, a set with a shard missing, and a
/// cell that is not the one its index names (a profile named by its built-in name must be that
/// name) or whose tally does not add up.
pub fn merge_matrix(dirs: &[PathBuf]) -> Result<MergedMatrix, SimError> {
    let what = "profiles, scenarios, seeds or mitigation";
    let (question, parts) = read_shards::<MatrixQuestion, Vec<CellRecord>>(dirs, "matrix", what)?;
    let expected = expected_cells(&question);
    let mut indexed = Vec::new();
    for (shard, _, records) in parts {
        let bad = |e: String| SimError::Usage(format!("merge: shard {shard}: {e}"));
        let mut cells = Vec::new();
        for c in records {
            let tally = c.tally.tally(question.seeds).map_err(|e| bad(format!("cell {}: {e}", c.index)))?;
            if let Some(want) = expected.get(c.index) {
                let got = [&c.scenario, &c.client, &c.server];
                for (arg, name) in want.iter().zip(got) {
                    if !files::is_path(arg) && arg != name {
                        return Err(bad(format!("cell {} names {name:?} where the run has {arg:?}", c.index)));
                    }
                }
            }
            if tally.violated() && c.doc.is_none() {
                return Err(bad(format!("cell {} is broken but carries no document part", c.index)));
            }
            let cell = MatrixCell {
                client: c.client,
                server: c.server,
                scenario: c.scenario,
                tally,
                incompatible: c.incompatible,
            };
            cells.push((c.index, (cell, c.doc)));
        }
        indexed.push((shard, cells));
    }
    let cells = collect_cells(indexed, question.cells)?;
    Ok((question, cells))
}

/// The (scenario, client, server) arguments of every cell, in the matrix's order (repeats run
/// once, as `MatrixSpec` builds them).
fn expected_cells(q: &MatrixQuestion) -> Vec<[String; 3]> {
    fn unique(list: &[String]) -> Vec<&String> {
        let mut out: Vec<&String> = Vec::new();
        for item in list {
            if !out.contains(&item) {
                out.push(item);
            }
        }
        out
    }
    let mut out = Vec::new();
    for scenario in unique(&q.scenarios) {
        for client in unique(&q.clients) {
            for server in unique(&q.servers) {
                out.push([scenario.clone(), client.clone(), server.clone()]);
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shards_parse_and_partition_every_index_once() {
        let s: Shard = "3/8".parse().unwrap();
        assert_eq!((s.k, s.n), (3, 8));
        for bad in ["0/4", "5/4", "1/0", "x/2", "2", "1/100001", ""] {
            assert!(bad.parse::<Shard>().is_err(), "{bad}");
        }
        let shards: Vec<Shard> = (1..=4).map(|k| Shard { k, n: 4 }).collect();
        for i in 0..100 {
            assert_eq!(shards.iter().filter(|s| s.owns(i)).count(), 1, "cell {i}");
        }
    }

    #[test]
    fn blocks_tile_the_range_in_shard_order() {
        for (first, count, n) in [(0u64, 10u64, 4u64), (7, 3, 5), (u64::MAX - 9, 10, 3), (0, 0, 2)] {
            let mut next = first;
            for k in 1..=n {
                let (from, len) = Shard { k, n }.block(first, count);
                assert_eq!(from, next, "{first} {count} {k}/{n}");
                assert!(len == count / n || len == count / n + 1);
                next = from.wrapping_add(len);
            }
            assert_eq!(next, first.wrapping_add(count));
        }
    }

    #[test]
    fn a_tally_round_trips_through_its_record() {
        let mut t = Tally::new();
        t.n = 3;
        t.set_count(Outcome::ALL[0], 2);
        t.violations.insert("no-duplicate-execution".into(), 1);
        t.replays.insert(Outcome::ALL[1], "mcpsim run --seed 1".into());
        t.first_violation = Some((1, "mcpsim run --seed 1".into()));
        t.set_count(Outcome::ALL[1], 1);
        assert_eq!(TallyRecord::of(&t).tally(3).unwrap(), t);
        assert!(TallyRecord::of(&t).tally(2).unwrap_err().contains("3 runs"));
        let mut wrong = TallyRecord::of(&t);
        wrong.violations.insert("made-up".into(), 1);
        assert!(wrong.tally(3).unwrap_err().contains("unknown invariant"));
    }
}
