//! `mcpsim matrix`: every client × server × scenario over a few seeds — which invariants break,
//! how often, and the command that replays one — plus the mitigations that fix each broken cell,
//! and the generated `docs/compatibility.md`.

use crate::engine::runner::run;
use crate::error::SimError;
use crate::report::artifacts::{program, replay_command, trace_file_name, write_file};
use crate::report::timeline;
use crate::scenario::{Scenario, SCENARIO_NAMES};
use mcpsim_model::profiles;
use mcpsim_model::trace::StepKind;
use serde::Serialize;
use std::collections::BTreeMap;
use std::path::Path;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant as WallClock};

/// A change that fixes a class of failure, as `--set` overrides.
#[derive(Debug)]
pub struct Mitigation {
    pub name: &'static str,
    pub description: &'static str,
    pub overrides: &'static [(&'static str, &'static str)],
}

/// Every mitigation `--mitigate` knows.
pub const MITIGATIONS: &[Mitigation] = &[
    Mitigation {
        name: "keepalive",
        description: "SSE keep-alive comments every 15 s, shorter than the load balancer's 60 s idle timeout",
        overrides: &[("server.keepalive", "15s")],
    },
    Mitigation {
        name: "durable-last-event-id",
        description: "the client keeps its session id and last event ids durably (condition 1)",
        overrides: &[("client.persistence", "durable")],
    },
    Mitigation {
        name: "explicit-410",
        description: "the server answers an unhonourable Last-Event-ID with 410 naming where to resume (condition 3)",
        overrides: &[("server.unhonourable", "410")],
    },
    Mitigation {
        name: "idempotency-key",
        description: "tool calls carry an idempotency key the server honours across sessions (an extension)",
        overrides: &[("client.idempotency_keys", "true"), ("server.idempotency_keys", "true")],
    },
    Mitigation {
        name: "store-per-session",
        description: "the server keeps one event store per session instead of one keyed by request id",
        overrides: &[("server.store", "per-session")],
    },
];

/// The mitigation of that name.
pub fn mitigation(name: &str) -> Result<&'static Mitigation, SimError> {
    MITIGATIONS.iter().find(|m| m.name == name).ok_or_else(|| {
        SimError::Usage(format!(
            "unknown mitigation {name:?} (known: {})",
            MITIGATIONS.iter().map(|m| m.name).collect::<Vec<_>>().join(", ")
        ))
    })
}

/// What to run.
#[derive(Clone, Debug)]
pub struct MatrixSpec {
    pub clients: Vec<String>,
    pub servers: Vec<String>,
    pub scenarios: Vec<String>,
    pub seeds: u64,
    pub jobs: usize,
    pub mitigation: Option<&'static Mitigation>,
}

impl MatrixSpec {
    /// Every profile and scenario, `seeds` seeds each, on every core.
    pub fn everything(seeds: u64) -> MatrixSpec {
        MatrixSpec {
            clients: profiles::CLIENT_NAMES.iter().map(|s| s.to_string()).collect(),
            servers: profiles::SERVER_NAMES.iter().map(|s| s.to_string()).collect(),
            scenarios: SCENARIO_NAMES.iter().map(|s| s.to_string()).collect(),
            seeds,
            jobs: std::thread::available_parallelism().map(|n| n.get()).unwrap_or(1),
            mitigation: None,
        }
    }

    /// Every cell's scenario, built and validated before anything runs.
    fn cells(&self) -> Result<Vec<Scenario>, SimError> {
        let mut cells = Vec::new();
        for scenario in &self.scenarios {
            for client in &self.clients {
                for server in &self.servers {
                    cells.push(self.cell(client, server, scenario)?);
                }
            }
        }
        Ok(cells)
    }

    fn cell(&self, client: &str, server: &str, scenario: &str) -> Result<Scenario, SimError> {
        let mut s = Scenario::build(scenario, client, server)?;
        if let Some(m) = self.mitigation {
            s.apply_overrides(&m.overrides.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect::<Vec<_>>())?;
        }
        Ok(s)
    }
}

/// One cell's result.
#[derive(Clone, Debug, Serialize)]
pub struct CellResult {
    pub client: String,
    pub server: String,
    pub scenario: String,
    /// Invariants broken, in registry order.
    pub violations: Vec<String>,
    /// For each broken invariant, how many seeds broke it.
    pub counts: BTreeMap<String, u64>,
    pub seeds: u64,
    /// The first seed that broke anything.
    pub failing_seed: Option<u64>,
    /// The command that replays that seed.
    pub replay: Option<String>,
}

/// Runs one cell over its seeds.
fn run_cell(scenario: &Scenario, seeds: u64, runs: &AtomicU64) -> Result<CellResult, SimError> {
    let mut counts: BTreeMap<String, u64> = BTreeMap::new();
    let mut failing_seed = None;
    for seed in 0..seeds {
        let outcome = run(scenario, seed)?;
        runs.fetch_add(1, Ordering::Relaxed);
        let mut names: Vec<&str> = outcome.violations.iter().map(|v| v.invariant.name()).collect();
        names.sort_unstable();
        names.dedup();
        for n in &names {
            *counts.entry(n.to_string()).or_default() += 1;
        }
        if !names.is_empty() && failing_seed.is_none() {
            failing_seed = Some(seed);
        }
    }
    let violations = mcpsim_model::oracle::INVARIANTS
        .iter()
        .map(|i| i.name.to_string())
        .filter(|n| counts.contains_key(n))
        .collect();
    Ok(CellResult {
        client: scenario.client.name.clone(),
        server: scenario.server.name.clone(),
        scenario: scenario.name.clone(),
        violations,
        counts,
        seeds,
        failing_seed,
        replay: failing_seed.map(|s| replay_command(scenario, s)),
    })
}

/// Runs every cell on `spec.jobs` threads; progress on stderr when `progress`.
pub fn run_matrix(spec: &MatrixSpec, progress: bool) -> Result<Vec<CellResult>, SimError> {
    let cells = spec.cells()?;
    let next = AtomicUsize::new(0);
    let done = AtomicUsize::new(0);
    let runs = AtomicU64::new(0);
    let results: Mutex<Vec<Option<Result<CellResult, SimError>>>> =
        Mutex::new(std::iter::repeat_with(|| None).take(cells.len()).collect());
    let started = WallClock::now();
    std::thread::scope(|scope| {
        for _ in 0..spec.jobs.max(1) {
            scope.spawn(|| loop {
                let i = next.fetch_add(1, Ordering::Relaxed);
                let Some(cell) = cells.get(i) else { break };
                let r = run_cell(cell, spec.seeds, &runs);
                if let Ok(mut all) = results.lock() {
                    all[i] = Some(r);
                }
                done.fetch_add(1, Ordering::Relaxed);
            });
        }
        if progress {
            let total = cells.len();
            while done.load(Ordering::Relaxed) < total {
                std::thread::sleep(Duration::from_millis(500));
                let d = done.load(Ordering::Relaxed);
                let rate = runs.load(Ordering::Relaxed) as f64 / started.elapsed().as_secs_f64().max(1e-9);
                eprint!("\r  matrix: {d}/{total} cells, {rate:.0} runs/s   ");
            }
            eprintln!();
        }
    });
    let all = results.into_inner().map_err(|_| SimError::Runtime("matrix results poisoned".into()))?;
    all.into_iter().map(|r| r.unwrap_or_else(|| Err(SimError::Runtime("a matrix cell did not run".into())))).collect()
}

/// The results as a Markdown table: one row per scenario × client, one column per server.
pub fn to_markdown(results: &[CellResult]) -> String {
    let servers: Vec<&str> = unique(results.iter().map(|r| r.server.as_str()));
    let mut out = format!("| scenario | client | {} |\n", servers.join(" | "));
    out.push_str(&format!("|---|---|{}\n", "---|".repeat(servers.len())));
    let mut rows: Vec<(&str, &str)> = unique(results.iter().map(|r| (r.scenario.as_str(), r.client.as_str())));
    rows.dedup();
    for (scenario, client) in rows {
        let cells: Vec<String> = servers
            .iter()
            .map(|server| {
                results
                    .iter()
                    .find(|r| r.scenario == scenario && r.client == client && r.server == *server)
                    .map(cell_text)
                    .unwrap_or_default()
            })
            .collect();
        out.push_str(&format!("| {scenario} | {client} | {} |\n", cells.join(" | ")));
    }
    out
}

fn cell_text(r: &CellResult) -> String {
    if r.violations.is_empty() {
        return "ok".to_string();
    }
    r.violations.iter().map(|v| format!("{v} {}/{}", r.counts[v], r.seeds)).collect::<Vec<_>>().join("<br>")
}

fn unique<T: PartialEq + Copy>(items: impl Iterator<Item = T>) -> Vec<T> {
    let mut out: Vec<T> = Vec::new();
    for i in items {
        if !out.contains(&i) {
            out.push(i);
        }
    }
    out
}

/// The results as CSV, one line per cell.
pub fn to_csv(results: &[CellResult]) -> String {
    let mut out = String::from("client,server,scenario,seeds,violations,failing_seed,replay\n");
    for r in results {
        let violations: Vec<String> = r.violations.iter().map(|v| format!("{v}={}", r.counts[v])).collect();
        out.push_str(&format!(
            "{},{},{},{},{},{},\"{}\"\n",
            r.client,
            r.server,
            r.scenario,
            r.seeds,
            violations.join(";"),
            r.failing_seed.map(|s| s.to_string()).unwrap_or_default(),
            r.replay.clone().unwrap_or_default().replace('"', "\"\"")
        ));
    }
    out
}

/// The results as a JSON array.
pub fn to_json(results: &[CellResult]) -> String {
    serde_json::to_string_pretty(results).expect("cell results are plain data")
}

/// Steps worth telling in a paragraph: faults, cuts, decisions, resumptions, sessions, side
/// effects and what the application was told (not every event).
fn key_steps(kind: &StepKind) -> bool {
    matches!(
        kind,
        StepKind::Fault { .. }
            | StepKind::LbIdleCut { .. }
            | StepKind::Decision { .. }
            | StepKind::Resume { .. }
            | StepKind::SessionCreated { .. }
            | StepKind::SessionEnded { .. }
            | StepKind::SideEffect { .. }
            | StepKind::ToolEnded { .. }
            | StepKind::AppGap { .. }
            | StepKind::AppResult { .. }
            | StepKind::AppError { .. }
            | StepKind::AppUnknownOutcome { .. }
            | StepKind::AppSessionLost { .. }
    )
}

/// The mitigations that make a broken cell clean over the same seeds.
fn fixing_mitigations(spec: &MatrixSpec, r: &CellResult) -> Result<Vec<&'static str>, SimError> {
    let mut fixes = Vec::new();
    let counter = AtomicU64::new(0);
    for m in MITIGATIONS {
        let mitigated = MatrixSpec { mitigation: Some(m), ..spec.clone() };
        let scenario = mitigated.cell(&r.client, &r.server, &r.scenario)?;
        if run_cell(&scenario, r.seeds, &counter)?.violations.is_empty() {
            fixes.push(m.name);
        }
    }
    Ok(fixes)
}

/// Writes `docs/compatibility.md`: the table, then a paragraph per broken cell with the key steps
/// of its first failing seed, the link to its trace (saved under `traces_dir`), and the
/// mitigations that fix it.
pub fn write_doc(spec: &MatrixSpec, results: &[CellResult], doc: &Path, traces_dir: &Path) -> Result<(), SimError> {
    let mut out = String::new();
    out.push_str("# Compatibility matrix\n\n");
    out.push_str(&format!(
        "Generated by `{} matrix --seeds {} --doc {}` — do not edit by hand; `cargo test` fails when \
         this table no longer matches what the code produces.\n\n",
        program(),
        spec.seeds,
        doc.display()
    ));
    out.push_str(
        "Each cell runs its scenario with that client and server profile over the seeds; it names the \
         invariants broken and in how many seeds. Rows: scenario × client; columns: server.\n\n",
    );
    out.push_str(TABLE_BEGIN);
    out.push('\n');
    out.push_str(&to_markdown(results));
    out.push_str(TABLE_END);
    out.push_str("\n\n## Broken cells\n\n");
    let doc_dir = doc.parent().unwrap_or(Path::new("."));
    for r in results.iter().filter(|r| !r.violations.is_empty()) {
        let seed = r.failing_seed.expect("a broken cell has a failing seed");
        let scenario = spec.cell(&r.client, &r.server, &r.scenario)?;
        let outcome = run(&scenario, seed)?;
        let first = outcome.violations.first().map(|v| v.invariant.name()).unwrap_or("violation");
        let file = traces_dir.join(trace_file_name(&scenario, first, seed, &outcome.trace));
        write_file(&file, &outcome.trace.to_jsonl())?;
        let link = relative(doc_dir, &file);
        out.push_str(&format!("### {} × {} × {}\n\n", r.client, r.server, r.scenario));
        out.push_str(&format!("Breaks {} (seed {seed}; [trace]({link})).\n\n", cell_text(r).replace("<br>", ", ")));
        for v in &outcome.violations {
            out.push_str(&format!("- **{}** at {}: {}\n", v.invariant, v.at, v.detail));
        }
        out.push_str("\nWhat happened:\n\n```\n");
        let steps: Vec<String> =
            outcome.trace.steps.iter().filter(|s| key_steps(&s.kind)).map(timeline::line).collect();
        for line in steps.iter().take(14) {
            out.push_str(line.trim_end());
            out.push('\n');
        }
        if steps.len() > 14 {
            out.push_str(&format!("… {} more key steps\n", steps.len() - 14));
        }
        out.push_str("```\n\n");
        let fixes = fixing_mitigations(spec, r)?;
        if fixes.is_empty() {
            out.push_str("No single mitigation makes it safe.\n\n");
        } else {
            out.push_str(&format!(
                "Made safe by: {}.\n\n",
                fixes.iter().map(|f| format!("`--mitigate {f}`")).collect::<Vec<_>>().join(", ")
            ));
        }
        out.push_str(&format!("Replay: `{}`\n\n", r.replay.clone().unwrap_or_default()));
    }
    out.push_str("## Mitigations\n\n");
    for m in MITIGATIONS {
        let sets: Vec<String> = m.overrides.iter().map(|(k, v)| format!("`--set {k}={v}`")).collect();
        out.push_str(&format!("- `{}`: {} ({}).\n", m.name, m.description, sets.join(" ")));
    }
    write_file(doc, &out)
}

/// Markers around the generated table, so a test can compare just the table.
pub const TABLE_BEGIN: &str = "<!-- matrix:begin -->";
pub const TABLE_END: &str = "<!-- matrix:end -->";

/// The table between the markers of a generated document.
pub fn table_in(doc: &str) -> Option<&str> {
    let start = doc.find(TABLE_BEGIN)? + TABLE_BEGIN.len();
    let end = doc.find(TABLE_END)?;
    doc.get(start..end).map(str::trim)
}

/// The seeds a generated document was made with (from its first paragraph).
pub fn seeds_in(doc: &str) -> Option<u64> {
    let at = doc.find("--seeds ")? + "--seeds ".len();
    doc[at..].split_whitespace().next()?.parse().ok()
}

fn relative(from_dir: &Path, file: &Path) -> String {
    let depth = from_dir.components().filter(|c| matches!(c, std::path::Component::Normal(_))).count();
    format!("{}{}", "../".repeat(depth), file.display())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn result(client: &str, server: &str, scenario: &str, broken: &[(&str, u64)]) -> CellResult {
        CellResult {
            client: client.into(),
            server: server.into(),
            scenario: scenario.into(),
            violations: broken.iter().map(|(n, _)| n.to_string()).collect(),
            counts: broken.iter().map(|(n, c)| (n.to_string(), *c)).collect(),
            seeds: 5,
            failing_seed: (!broken.is_empty()).then_some(0),
            replay: None,
        }
    }

    #[test]
    fn tables_have_a_row_per_scenario_and_client_and_a_column_per_server() {
        let rs = vec![
            result("naive", "reference", "long-tool", &[("no-duplicate-execution", 5)]),
            result("naive", "silent-head", "long-tool", &[]),
            result("reference", "reference", "long-tool", &[]),
            result("reference", "silent-head", "long-tool", &[]),
        ];
        let md = to_markdown(&rs);
        let lines: Vec<&str> = md.lines().collect();
        assert_eq!(lines[0], "| scenario | client | reference | silent-head |");
        assert_eq!(lines[2], "| long-tool | naive | no-duplicate-execution 5/5 | ok |");
        assert_eq!(lines[3], "| long-tool | reference | ok | ok |");
        let doc = format!("intro --seeds 5 x\n{TABLE_BEGIN}\n{md}{TABLE_END}\nrest");
        assert_eq!(table_in(&doc), Some(md.trim()));
        assert_eq!(seeds_in(&doc), Some(5));
    }

    #[test]
    fn csv_and_json_carry_every_cell() {
        let rs = vec![result("naive", "reference", "long-tool", &[("no-duplicate-execution", 3)])];
        assert!(to_csv(&rs)
            .lines()
            .nth(1)
            .unwrap()
            .starts_with("naive,reference,long-tool,5,no-duplicate-execution=3,0,"));
        let json: serde_json::Value = serde_json::from_str(&to_json(&rs)).unwrap();
        assert_eq!(json[0]["violations"][0], "no-duplicate-execution");
        assert_eq!(json[0]["seeds"], 5);
    }

    #[test]
    fn unknown_mitigations_are_refused_with_the_known_ones() {
        let e = mitigation("magic").unwrap_err().to_string();
        assert!(e.contains("keepalive") && e.contains("idempotency-key"), "{e}");
        for m in MITIGATIONS {
            let spec = MatrixSpec { mitigation: Some(m), ..MatrixSpec::everything(1) };
            assert!(spec.cell("reference", "reference", "long-tool").is_ok(), "{}", m.name);
        }
    }
}
