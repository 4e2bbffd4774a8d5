//! `mcpsim matrix`: every client × server × scenario over a few seeds — which invariants break,
//! how often, and the command that replays one — plus the mitigations that fix each broken cell,
//! and the generated `docs/compatibility.md`.

use crate::engine::runner::run;
use crate::error::SimError;
use crate::report::artifacts::{program, trace_file_name, write_file};
use crate::report::timeline;
use crate::scenario::{Scenario, SCENARIO_NAMES};
use crate::studies::pool::{run_cells, PoolCell, Progress, RunFn, Silent};
use crate::studies::tally::Tally;
use mcpsim_model::era;
use mcpsim_model::profiles;
use mcpsim_model::trace::StepKind;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::path::Path;

/// A change that fixes a class of failure, as `--set` overrides.
#[derive(Debug)]
pub struct Mitigation {
    /// The name `--mitigate` takes.
    pub name: &'static str,
    /// What it changes and why that helps, in words.
    pub description: &'static str,
    /// The `key=value` overrides it applies to every cell.
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
    Mitigation {
        name: "timeout-resets-on-progress",
        description:
            "the client's request timeout restarts on every progress notification (TS: resetTimeoutOnProgress)",
        overrides: &[("client.timeout_resets_on_progress", "true")],
    },
    Mitigation {
        name: "no-blind-resend",
        description: "neither the client's HTTP library nor the balancer sends a written POST again when a connection fails under it",
        overrides: &[("client.http.retry", "unsent"), ("lb.retry_upstream", "idempotent")],
    },
    Mitigation {
        name: "no-request-timeout",
        description: "the client waits for a tool's outcome instead of failing it after a fixed request timeout",
        overrides: &[("client.request_timeout", "none")],
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
    /// Client profiles (names or TOML files).
    pub clients: Vec<String>,
    /// Server profiles (names or TOML files).
    pub servers: Vec<String>,
    /// Scenario families.
    pub scenarios: Vec<String>,
    /// Seeds `0..seeds` per cell.
    pub seeds: u64,
    /// Worker threads; 0 for the machine's available parallelism.
    pub jobs: usize,
    /// A mitigation applied to every cell, if any.
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
            jobs: 0,
            mitigation: None,
        }
    }

    /// Every cell's scenario, built and validated before anything runs: scenarios outermost,
    /// then clients, then servers, each list in its order with repeats dropped (a cell runs once).
    fn cells(&self) -> Result<Vec<Scenario>, SimError> {
        let mut cells = Vec::new();
        for scenario in unique(self.scenarios.iter()) {
            for client in unique(self.clients.iter()) {
                for server in unique(self.servers.iter()) {
                    cells.push(self.cell(client, server, scenario)?);
                }
            }
        }
        Ok(cells)
    }

    fn cell(&self, client: &str, server: &str, scenario: &str) -> Result<Scenario, SimError> {
        let mut s = Scenario::build(scenario, client, server)?;
        // A cell is one client profile against one server: a family with a fleet of its own
        // would put other clients in the column.
        s.require_one_client_profile("matrix")?;
        if let Some(m) = self.mitigation {
            s.apply_overrides(&m.overrides.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect::<Vec<_>>())?;
        }
        Ok(s)
    }
}

/// One cell's result: which profiles and scenario, and the tally of its seeds.
#[derive(Clone, Debug, PartialEq)]
pub struct MatrixCell {
    /// The client profile.
    pub client: String,
    /// The server profile.
    pub server: String,
    /// The scenario family.
    pub scenario: String,
    /// What the cell's seeds came to (none were run for an incompatible cell).
    pub tally: Tally,
    /// Set when the pair cannot talk at all (`mcpsim_model::era::compatibility`): what the cell
    /// says instead of a verdict, e.g. "incompatible: 400 before any call". Such a cell is not run.
    pub incompatible: Option<String>,
}

impl MatrixCell {
    /// Whether any seed broke an invariant (never for an incompatible cell: nothing ran).
    pub fn violated(&self) -> bool {
        self.incompatible.is_none() && self.tally.violated()
    }

    /// The seeds run.
    pub fn seeds(&self) -> u64 {
        self.tally.n
    }

    /// The first seed that broke anything.
    pub fn failing_seed(&self) -> Option<u64> {
        self.tally.first_violation.as_ref().map(|(seed, _)| *seed)
    }

    /// The command that replays that seed.
    pub fn replay(&self) -> Option<&str> {
        self.tally.first_violation.as_ref().map(|(_, replay)| replay.as_str())
    }
}

/// Runs every cell on `spec.jobs` threads (0: one per core).
pub fn run_matrix(spec: &MatrixSpec, progress: &dyn Progress) -> Result<Vec<MatrixCell>, SimError> {
    run_matrix_with(spec, &run, progress)
}

/// [`run_matrix`] with another runner (a fake, in tests).
pub(crate) fn run_matrix_with(
    spec: &MatrixSpec,
    runner: &RunFn,
    progress: &dyn Progress,
) -> Result<Vec<MatrixCell>, SimError> {
    let scenarios = spec.cells()?;
    let indexed: Vec<(usize, &Scenario)> = scenarios.iter().enumerate().collect();
    Ok(run_some(&indexed, spec, runner, progress)?.into_iter().map(|(_, cell)| cell).collect())
}

/// Whether a cell's pair cannot talk: the spec's compatibility of the client's era rule with the
/// eras the server serves (`mcpsim_model::era`), in words, or `None` when they talk.
///
/// A fleet of several client profiles cannot talk only when none of its clients can (one that
/// can't is part of what the run shows).
pub fn incompatibility(scenario: &Scenario) -> Option<String> {
    let server = era::served_eras(scenario.server.eras.as_deref(), scenario.server.sessions);
    let mut notes = scenario.client_policies().map(|c| {
        let client = era::client_era(c.era.as_ref(), c.sessions);
        era::compatibility(&client, server).matrix_text()
    });
    let first = notes.next().flatten()?;
    notes.all(|n| n.is_some()).then_some(first)
}

/// Runs the compatible cells of `cells` (each with its index in the whole matrix) and marks the
/// others incompatible without running them, keeping their order.
fn run_some(
    cells: &[(usize, &Scenario)],
    spec: &MatrixSpec,
    runner: &RunFn,
    progress: &dyn Progress,
) -> Result<Vec<(usize, MatrixCell)>, SimError> {
    let notes: Vec<Option<String>> = cells.iter().map(|(_, s)| incompatibility(s)).collect();
    let runnable: Vec<PoolCell> = cells
        .iter()
        .zip(&notes)
        .filter(|(_, note)| note.is_none())
        .map(|((_, scenario), _)| PoolCell { scenario, seeds: 0..spec.seeds })
        .collect();
    let mut tallies = run_cells(&runnable, spec.jobs, runner, progress, |_, _| Ok(()))?.into_iter();
    let mut out = Vec::with_capacity(cells.len());
    for ((i, s), incompatible) in cells.iter().zip(notes) {
        let tally = match incompatible {
            Some(_) => Tally::new(),
            None => tallies.next().expect("one tally per runnable cell"),
        };
        let cell = MatrixCell {
            client: s.client.name.clone(),
            server: s.server.name.clone(),
            scenario: s.name.clone(),
            tally,
            incompatible,
        };
        out.push((*i, cell));
    }
    Ok(out)
}

/// The cells of one shard of the matrix (`--shard K/N`: the cells whose index `owns` accepts),
/// each with its index in the whole matrix, and how many cells the whole matrix has.
pub fn run_matrix_part(
    spec: &MatrixSpec,
    owns: impl Fn(usize) -> bool,
    progress: &dyn Progress,
) -> Result<(usize, Vec<(usize, MatrixCell)>), SimError> {
    let scenarios = spec.cells()?;
    let mine: Vec<(usize, &Scenario)> = scenarios.iter().enumerate().filter(|(i, _)| owns(*i)).collect();
    let results = run_some(&mine, spec, &run, progress)?;
    Ok((scenarios.len(), results))
}

/// The results as a Markdown table: one row per scenario × client, one column per server.
pub fn to_markdown(results: &[MatrixCell]) -> String {
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

fn cell_text(r: &MatrixCell) -> String {
    if let Some(note) = &r.incompatible {
        return note.clone();
    }
    if !r.violated() {
        return "ok".to_string();
    }
    let t = &r.tally;
    t.broken().iter().map(|v| format!("{v} {}/{}", t.violations[*v], t.n)).collect::<Vec<_>>().join("<br>")
}

/// The items in their first order, each once.
pub fn unique<T: PartialEq + Copy>(items: impl Iterator<Item = T>) -> Vec<T> {
    let mut out: Vec<T> = Vec::new();
    for i in items {
        if !out.contains(&i) {
            out.push(i);
        }
    }
    out
}

/// The columns of [`to_csv`].
pub(crate) const CSV_HEADER: [&str; 8] =
    ["client", "server", "scenario", "seeds", "violations", "failing_seed", "replay", "incompatible"];

/// The results as CSV (RFC 4180: fields quoted when they hold a comma, a quote or a line
/// break), one record per cell; `violations` is `name=count` entries joined by `;`.
pub fn to_csv(results: &[MatrixCell]) -> String {
    let mut writer = csv::Writer::from_writer(Vec::new());
    let records = std::iter::once(CSV_HEADER.map(String::from)).chain(results.iter().map(|r| {
        let violations: Vec<String> =
            r.tally.broken().iter().map(|v| format!("{v}={}", r.tally.violations[*v])).collect();
        [
            r.client.clone(),
            r.server.clone(),
            r.scenario.clone(),
            r.seeds().to_string(),
            violations.join(";"),
            r.failing_seed().map(|s| s.to_string()).unwrap_or_default(),
            r.replay().unwrap_or_default().to_string(),
            r.incompatible.clone().unwrap_or_default(),
        ]
    }));
    for record in records {
        writer.write_record(&record).expect("writing CSV into memory cannot fail");
    }
    let bytes = writer.into_inner().expect("flushing CSV into memory cannot fail");
    String::from_utf8(bytes).expect("CSV of UTF-8 fields is UTF-8")
}

/// One cell as JSON.
#[derive(Serialize)]
struct CellJson<'a> {
    client: &'a str,
    server: &'a str,
    scenario: &'a str,
    /// Invariants broken, in registry order.
    violations: Vec<&'a str>,
    /// For each broken invariant, how many seeds broke it.
    counts: &'a BTreeMap<String, u64>,
    seeds: u64,
    failing_seed: Option<u64>,
    replay: Option<&'a str>,
    /// What an incompatible cell says instead of a verdict.
    #[serde(skip_serializing_if = "Option::is_none")]
    incompatible: Option<&'a str>,
}

/// The results as a JSON array.
pub fn to_json(results: &[MatrixCell]) -> String {
    let cells: Vec<CellJson> = results
        .iter()
        .map(|r| CellJson {
            client: &r.client,
            server: &r.server,
            scenario: &r.scenario,
            violations: r.tally.broken(),
            counts: &r.tally.violations,
            seeds: r.seeds(),
            failing_seed: r.failing_seed(),
            replay: r.replay(),
            incompatible: r.incompatible.as_deref(),
        })
        .collect();
    serde_json::to_string_pretty(&cells).expect("cell results are plain data")
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
            | StepKind::AppStreamLost { .. }
    )
}

/// The mitigations that make a broken cell clean over the same seeds.
fn fixing_mitigations(spec: &MatrixSpec, r: &MatrixCell) -> Result<Vec<&'static str>, SimError> {
    let scenarios = MITIGATIONS
        .iter()
        .map(|m| MatrixSpec { mitigation: Some(m), ..spec.clone() }.cell(&r.client, &r.server, &r.scenario))
        .collect::<Result<Vec<_>, _>>()?;
    let cells: Vec<PoolCell> = scenarios.iter().map(|scenario| PoolCell { scenario, seeds: 0..r.seeds() }).collect();
    let tallies = run_cells(&cells, spec.jobs, &run, &Silent, |_, _| Ok(()))?;
    Ok(MITIGATIONS.iter().zip(tallies).filter(|(_, t)| !t.violated()).map(|(m, _)| m.name).collect())
}

/// What `docs/compatibility.md` says about one broken cell beyond the table, found by running
/// it: its first failing seed's trace (and the file name it is saved under), its violations and
/// key steps, and the mitigations that fix it. A matrix shard computes it for its own broken
/// cells and carries it, so `merge --doc` runs nothing.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct CellDoc {
    /// The failing seed.
    pub seed: u64,
    /// The trace's file name (in the traces directory).
    pub trace_file: String,
    /// The trace, as JSON lines.
    pub trace: String,
    /// One line per violation: invariant, time, detail.
    pub violations: Vec<String>,
    /// The first `KEY_STEPS` key steps, as timeline lines.
    pub steps: Vec<String>,
    /// How many key steps there were in all.
    pub key_steps: usize,
    /// The mitigations that make the cell clean over the same seeds.
    pub fixes: Vec<String>,
}

/// The most key steps a broken cell's paragraph shows.
const KEY_STEPS: usize = 14;

/// Runs a broken cell's first failing seed and its mitigations for the document; `None` for a
/// clean cell.
pub fn cell_doc(spec: &MatrixSpec, r: &MatrixCell) -> Result<Option<CellDoc>, SimError> {
    let Some(seed) = r.failing_seed().filter(|_| r.violated()) else { return Ok(None) };
    let scenario = spec.cell(&r.client, &r.server, &r.scenario)?;
    let outcome = run(&scenario, seed)?;
    let first = outcome.violations.first().map(|v| v.invariant.name()).unwrap_or("violation");
    let steps: Vec<String> = outcome
        .trace
        .steps
        .iter()
        .filter(|s| key_steps(&s.kind))
        .map(|s| timeline::line(s).trim_end().to_string())
        .collect();
    Ok(Some(CellDoc {
        seed,
        trace_file: trace_file_name(&scenario, first, seed, &outcome.trace),
        trace: outcome.trace.to_jsonl(),
        violations: outcome
            .violations
            .iter()
            .map(|v| format!("**{}** at {}: {}", v.invariant, v.at, v.detail))
            .collect(),
        key_steps: steps.len(),
        steps: steps.into_iter().take(KEY_STEPS).collect(),
        fixes: fixing_mitigations(spec, r)?.into_iter().map(str::to_string).collect(),
    }))
}

/// Writes `docs/compatibility.md`: the table, then a paragraph per broken cell with the key steps
/// of its first failing seed, the link to its trace (saved under `traces_dir`), and the
/// mitigations that fix it.
pub fn write_doc(spec: &MatrixSpec, results: &[MatrixCell], doc: &Path, traces_dir: &Path) -> Result<(), SimError> {
    let docs = results.iter().map(|r| cell_doc(spec, r)).collect::<Result<Vec<_>, _>>()?;
    write_doc_from(spec.seeds, results, &docs, doc, traces_dir)
}

/// [`write_doc`] from each cell's [`CellDoc`] found already (`docs[i]` of `results[i]`).
pub fn write_doc_from(
    seeds: u64,
    results: &[MatrixCell],
    docs: &[Option<CellDoc>],
    doc: &Path,
    traces_dir: &Path,
) -> Result<(), SimError> {
    let mut out = String::new();
    out.push_str("# Compatibility matrix\n\n");
    out.push_str(&format!(
        "Generated by `{} matrix --seeds {} --doc {}` — do not edit by hand; `cargo test` fails when \
         this table no longer matches what the code produces.\n\n",
        program(),
        seeds,
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
    for (r, d) in results.iter().zip(docs) {
        let Some(d) = d.as_ref().filter(|_| r.violated()) else { continue };
        let file = traces_dir.join(&d.trace_file);
        write_file(&file, &d.trace)?;
        let link = relative(doc_dir, &file);
        out.push_str(&format!("### {} × {} × {}\n\n", r.client, r.server, r.scenario));
        out.push_str(&format!("Breaks {} (seed {}; [trace]({link})).\n\n", cell_text(r).replace("<br>", ", "), d.seed));
        for v in &d.violations {
            out.push_str(&format!("- {v}\n"));
        }
        out.push_str("\nWhat happened:\n\n```\n");
        for line in &d.steps {
            out.push_str(line);
            out.push('\n');
        }
        if d.key_steps > KEY_STEPS {
            out.push_str(&format!("… {} more key steps\n", d.key_steps - KEY_STEPS));
        }
        out.push_str("```\n\n");
        if d.fixes.is_empty() {
            out.push_str("No single mitigation makes it safe.\n\n");
        } else {
            out.push_str(&format!(
                "Made safe by: {}.\n\n",
                d.fixes.iter().map(|f| format!("`--mitigate {f}`")).collect::<Vec<_>>().join(", ")
            ));
        }
        out.push_str(&format!("Replay: `{}`\n\n", r.replay().unwrap_or_default()));
    }
    out.push_str("## Mitigations\n\n");
    for m in MITIGATIONS {
        let sets: Vec<String> = m.overrides.iter().map(|(k, v)| format!("`--set {k}={v}`")).collect();
        out.push_str(&format!("- `{}`: {} ({}).\n", m.name, m.description, sets.join(" ")));
    }
    write_file(doc, &out)
}

/// Markers around the generated table, so a test can compare just the table.
pub(crate) const TABLE_BEGIN: &str = "<!-- matrix:begin -->";
pub(crate) const TABLE_END: &str = "<!-- matrix:end -->";

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
    use crate::studies::pool::RunOutcome;
    use crate::studies::tally::tests::{trace_of, violation};
    use std::sync::atomic::{AtomicU64, Ordering};

    fn result(client: &str, server: &str, scenario: &str, broken: &[(&str, u64)]) -> MatrixCell {
        let mut tally = Tally::new();
        tally.n = 5;
        tally.violations = broken.iter().map(|(n, c)| (n.to_string(), *c)).collect();
        tally.first_violation = (!broken.is_empty()).then(|| (0, "mcpsim run --seed 0".to_string()));
        MatrixCell {
            client: client.into(),
            server: server.into(),
            scenario: scenario.into(),
            tally,
            incompatible: None,
        }
    }

    #[test]
    fn pairs_that_cannot_talk_say_so_instead_of_a_verdict_and_are_not_run() {
        let runs = AtomicU64::new(0);
        let runner = |_: &Scenario, seed: u64| {
            runs.fetch_add(1, Ordering::Relaxed);
            let _ = seed;
            Ok(RunOutcome {
                trace: trace_of(vec![]),
                violations: vec![violation("no-duplicate-execution")],
                explained_by: vec![],
            })
        };
        let spec = MatrixSpec {
            clients: vec!["reference".into(), "stateless-2026".into()],
            servers: vec!["reference".into(), "stateless-2026".into(), "rmcp".into()],
            scenarios: vec!["long-tool".into()],
            seeds: 2,
            jobs: 1,
            mitigation: None,
        };
        let cells = run_matrix_with(&spec, &runner, &Silent).expect("runs");
        let note = |c: &str, s: &str| {
            cells.iter().find(|r| r.client == c && r.server == s).and_then(|r| r.incompatible.clone())
        };
        // A legacy client and the modern-only server: refused before any call.
        assert_eq!(note("reference", "stateless-2026").as_deref(), Some("incompatible: 400 before any call"));
        // The modern-only client and a legacy-only server: the spec leaves it undefined.
        assert!(note("stateless-2026", "reference").is_some_and(|n| n.contains("undefined by the spec")));
        // Both eras served by rmcp: both clients talk; and matching eras talk.
        for (c, s) in [
            ("reference", "rmcp"),
            ("stateless-2026", "rmcp"),
            ("reference", "reference"),
            ("stateless-2026", "stateless-2026"),
        ] {
            assert_eq!(note(c, s), None, "{c} x {s}");
        }
        assert_eq!(runs.load(Ordering::Relaxed), 4 * 2, "only the four compatible cells ran");
        let table = to_markdown(&cells);
        assert!(
            table
                .contains("| long-tool | reference | no-duplicate-execution 2/2 | incompatible: 400 before any call |"),
            "{table}"
        );
        assert!(!cells
            .iter()
            .find(|r| r.server == "stateless-2026" && r.client == "reference")
            .expect("cell")
            .violated());
        assert!(to_csv(&cells).contains("incompatible: 400 before any call"));
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
        let csv = to_csv(&rs);
        assert!(csv.starts_with("client,server,scenario,seeds,violations,failing_seed,replay,incompatible\n"), "{csv}");
        assert_eq!(
            csv.lines().nth(1),
            Some("naive,reference,long-tool,5,no-duplicate-execution=3,0,mcpsim run --seed 0,")
        );
        let json: serde_json::Value = serde_json::from_str(&to_json(&rs)).unwrap();
        assert_eq!(json[0]["violations"][0], "no-duplicate-execution");
        assert_eq!(json[0]["counts"]["no-duplicate-execution"], 3);
        assert_eq!((json[0]["seeds"].as_u64(), json[0]["failing_seed"].as_u64()), (Some(5), Some(0)));
    }

    #[test]
    fn csv_fields_with_commas_quotes_and_line_breaks_read_back() {
        let mut r =
            result("naive", "reference", "long-tool", &[("no-duplicate-execution", 1), ("no-silent-event-loss", 2)]);
        r.tally.first_violation = Some((4, "run --set note=\"a,\nb\" --seed 4".into()));
        let csv = to_csv(&[r]);
        let mut reader = csv::Reader::from_reader(csv.as_bytes());
        let rows: Vec<csv::StringRecord> = reader.records().map(|r| r.unwrap()).collect();
        assert_eq!(rows.len(), 1);
        assert_eq!(&rows[0][4], "no-duplicate-execution=1;no-silent-event-loss=2");
        assert_eq!(&rows[0][6], "run --set note=\"a,\nb\" --seed 4");
    }

    #[test]
    fn repeated_profiles_run_once_in_the_order_given() {
        let calls = AtomicU64::new(0);
        let runner = |_: &Scenario, _: u64| {
            calls.fetch_add(1, Ordering::SeqCst);
            Ok(RunOutcome {
                trace: trace_of(vec![]),
                violations: vec![violation("no-duplicate-execution")],
                explained_by: vec![],
            })
        };
        let spec = MatrixSpec {
            clients: vec!["reference".into(), "naive".into(), "reference".into()],
            servers: vec!["reference".into(), "reference".into()],
            scenarios: vec!["long-tool".into()],
            seeds: 2,
            jobs: 2,
            mitigation: None,
        };
        let cells = run_matrix_with(&spec, &runner, &Silent).unwrap();
        let names: Vec<(&str, &str)> = cells.iter().map(|c| (c.client.as_str(), c.server.as_str())).collect();
        assert_eq!(names, [("reference", "reference"), ("naive", "reference")]);
        assert_eq!(calls.load(Ordering::SeqCst), 4);
        assert_eq!(cells[1].failing_seed(), Some(0));
        assert!(cells[1]
            .replay()
            .is_some_and(|r| r.ends_with("--client naive --server reference --scenario long-tool --seed 0")));
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
