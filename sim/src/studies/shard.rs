//! Scale-out: a deterministic partition of a study's cells over N processes (`--shard K/N`),
//! each writing its share to a directory, and the merge of those shares into exactly what the
//! unsharded command prints (`mcpsim merge DIR...`).
//!
//! Cell `i` (in the unsharded command's order) belongs to shard `i mod N + 1`, so the shards
//! are balanced whatever the order, and the merge puts every cell back at its index.

use crate::error::SimError;
use crate::studies::matrix::MatrixCell;
use crate::studies::tally::{Outcome, Tally};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::fmt;
use std::path::{Path, PathBuf};
use std::str::FromStr;

/// The most shards a run may be split into.
pub const MAX_SHARDS: u64 = 100_000;

/// The file a matrix shard writes in its directory.
pub const MATRIX_FILE: &str = "matrix-shard.json";

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
struct TallyRecord {
    n: u64,
    counts: BTreeMap<String, u64>,
    violations: BTreeMap<String, u64>,
    replays: BTreeMap<String, String>,
    first_violation: Option<(u64, String)>,
}

impl TallyRecord {
    fn of(t: &Tally) -> TallyRecord {
        TallyRecord {
            n: t.n,
            counts: Outcome::ALL.iter().map(|o| (o.name().to_string(), t.count(*o))).collect(),
            violations: t.violations.clone(),
            replays: t.replays.iter().map(|(o, r)| (o.name().to_string(), r.clone())).collect(),
            first_violation: t.first_violation.clone(),
        }
    }

    fn tally(&self) -> Result<Tally, String> {
        let outcome = |name: &str| {
            Outcome::ALL.iter().copied().find(|o| o.name() == name).ok_or_else(|| format!("unknown outcome {name:?}"))
        };
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

/// One cell of a matrix shard, at its index in the whole matrix.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
struct CellRecord {
    index: usize,
    client: String,
    server: String,
    scenario: String,
    tally: TallyRecord,
}

/// What one matrix shard wrote.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
struct MatrixShardFile {
    command: String,
    shard: Shard,
    question: MatrixQuestion,
    cells: Vec<CellRecord>,
}

/// Writes a matrix shard's cells (each with its index in the whole matrix) to `dir`.
pub fn write_matrix_shard(
    dir: &Path,
    shard: Shard,
    question: &MatrixQuestion,
    cells: &[(usize, MatrixCell)],
) -> Result<PathBuf, SimError> {
    let file = MatrixShardFile {
        command: "matrix".into(),
        shard,
        question: question.clone(),
        cells: cells
            .iter()
            .map(|(index, c)| CellRecord {
                index: *index,
                client: c.client.clone(),
                server: c.server.clone(),
                scenario: c.scenario.clone(),
                tally: TallyRecord::of(&c.tally),
            })
            .collect(),
    };
    let path = dir.join(MATRIX_FILE);
    let text = serde_json::to_string_pretty(&file).expect("a shard file is plain data");
    crate::report::artifacts::write_file(&path, &(text + "\n"))?;
    Ok(path)
}

/// Reads the matrix shards in `dirs` and puts their cells back in the whole matrix's order.
/// Refuses shards of different questions, a shard given twice, and a set with a shard missing.
pub fn merge_matrix(dirs: &[PathBuf]) -> Result<(MatrixQuestion, Vec<MatrixCell>), SimError> {
    let bad = |path: &Path, problem: String| SimError::Io { path: path.display().to_string(), problem };
    let mut question: Option<MatrixQuestion> = None;
    let mut n: Option<u64> = None;
    let mut seen = BTreeMap::new();
    let mut cells: BTreeMap<usize, MatrixCell> = BTreeMap::new();
    if dirs.is_empty() {
        return Err(SimError::Usage("merge needs the shard directories".into()));
    }
    for dir in dirs {
        let path = dir.join(MATRIX_FILE);
        let text = std::fs::read_to_string(&path).map_err(|e| bad(&path, e.to_string()))?;
        let file: MatrixShardFile =
            serde_json::from_str(&text).map_err(|e| bad(&path, format!("not a matrix shard: {e}")))?;
        if file.command != "matrix" {
            return Err(bad(&path, format!("a shard of {:?}, not of matrix", file.command)));
        }
        match &question {
            None => question = Some(file.question.clone()),
            Some(q) if *q != file.question => {
                return Err(bad(
                    &path,
                    "a shard of another matrix (profiles, scenarios, seeds or mitigation differ)".into(),
                ))
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
        if let Some(other) = seen.insert(file.shard.k, dir.clone()) {
            return Err(bad(&path, format!("shard {} given twice (also {})", file.shard, other.display())));
        }
        for c in file.cells {
            if !file.shard.owns(c.index) {
                return Err(bad(&path, format!("cell {} does not belong to shard {}", c.index, file.shard)));
            }
            let tally = c.tally.tally().map_err(|e| bad(&path, e))?;
            cells.insert(c.index, MatrixCell { client: c.client, server: c.server, scenario: c.scenario, tally });
        }
    }
    let (question, n) = (question.expect("one shard at least was read"), n.expect("one shard at least was read"));
    let missing: Vec<String> = (1..=n).filter(|k| !seen.contains_key(k)).map(|k| format!("{k}/{n}")).collect();
    if !missing.is_empty() {
        return Err(SimError::Usage(format!("merge: shard(s) {} missing", missing.join(", "))));
    }
    if cells.len() != question.cells || cells.keys().copied().ne(0..question.cells) {
        return Err(SimError::Usage(format!(
            "merge: {} of the matrix's {} cells present",
            cells.len(),
            question.cells
        )));
    }
    Ok((question, cells.into_values().collect()))
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
    fn a_tally_round_trips_through_its_record() {
        let mut t = Tally::new();
        t.n = 3;
        t.set_count(Outcome::ALL[0], 2);
        t.violations.insert("no-duplicate-execution".into(), 1);
        t.replays.insert(Outcome::ALL[1], "mcpsim run --seed 1".into());
        t.first_violation = Some((1, "mcpsim run --seed 1".into()));
        assert_eq!(TallyRecord::of(&t).tally().unwrap(), t);
    }
}
