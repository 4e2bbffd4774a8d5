//! Mutation fuzzing of the trace reader and of the scenario a trace header carries: every
//! corpus trace (`traces/*.jsonl`) is cut, reordered, retyped and given huge numbers, some edits
//! re-sealed (the footer's step count and digest recomputed, so they pass the integrity check
//! and reach the scenario and the run), and each mutant goes the library's way of `replay`:
//! read → recorded scenario → run, under a small step budget. Every mutant must end in a trace,
//! or in a typed error that blames the input: a panic, or the simulator failing
//! (`SimError::Runtime`), fails the test with the mutation that caused it.
//!
//! 200 mutants by default (seconds in a debug build); `MCPSIM_FUZZ_CASES=N` runs N,
//! `MCPSIM_FUZZ_SEED=S` draws other mutations.

use mcpsim::engine::runner::{run_with_budget, Budget};
use mcpsim::report::artifacts::{parse_trace, recorded_scenario};
use mcpsim::SimError;
use mcpsim_model::trace::{fnv1a, step_line, Step, FNV_OFFSET};
use serde_json::Value;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::{Path, PathBuf};

/// Small enough that a mutant asking for a busy run ends fast; every corpus run fits.
const BUDGET: Budget = Budget { max_steps: 20_000 };

fn env_u64(name: &str, default: u64) -> u64 {
    std::env::var(name).ok().and_then(|v| v.trim().parse().ok()).unwrap_or(default)
}

/// splitmix64: the mutations' random source, seeded per case.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// Uniform in `0..n` (`n` > 0).
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
}

fn corpus() -> Vec<(PathBuf, String)> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("traces");
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .expect("traces/ is readable")
        .map(|e| e.expect("a directory entry").path())
        .filter(|p| p.extension().is_some_and(|x| x == "jsonl"))
        .collect();
    files.sort();
    assert!(!files.is_empty(), "no traces in {}", dir.display());
    files.into_iter().map(|p| (p.clone(), std::fs::read_to_string(&p).expect("a readable trace"))).collect()
}

/// Values a number or any node may become.
fn strange_value(rng: &mut Rng) -> Value {
    let choices = [
        serde_json::json!(u64::MAX),
        serde_json::json!(4_294_967_295u64),
        serde_json::json!(i64::MIN),
        serde_json::json!(-1),
        serde_json::json!(-2.0),
        serde_json::json!(0),
        serde_json::json!(1e308),
        serde_json::json!(1e-300),
        serde_json::json!(""),
        serde_json::json!("0s"),
        serde_json::json!("1us"),
        serde_json::json!("18446744073709551615s"),
        serde_json::json!("9999999999999h"),
        serde_json::json!("-5s"),
        serde_json::json!("\n\u{1b}"),
        serde_json::json!(null),
        serde_json::json!(true),
        serde_json::json!([]),
        serde_json::json!({}),
        serde_json::json!([1, "x", null]),
    ];
    choices[rng.below(choices.len())].clone()
}

/// Every node of a JSON value, as JSON pointers.
fn pointers(v: &Value, at: String, out: &mut Vec<String>) {
    match v {
        Value::Object(m) => {
            for (k, child) in m {
                pointers(child, format!("{at}/{}", k.replace('~', "~0").replace('/', "~1")), out);
            }
        }
        Value::Array(a) => {
            for (i, child) in a.iter().enumerate() {
                pointers(child, format!("{at}/{i}"), out);
            }
        }
        _ => {}
    }
    out.push(at);
}

/// Replaces one node of the line's JSON (a number scaled or made huge, any node retyped);
/// `None` when the line is not JSON.
fn mutate_json(line: &str, rng: &mut Rng, keep_type: bool) -> Option<(String, String)> {
    let mut v: Value = serde_json::from_str(line).ok()?;
    let mut all = Vec::new();
    pointers(&v, String::new(), &mut all);
    all.retain(|p| !p.is_empty());
    // Mostly leaves, so that many mutants keep their shape and reach the run.
    if rng.below(4) != 0 {
        all.retain(|p| v.pointer(p).is_some_and(|n| !n.is_object() && !n.is_array()));
    }
    if all.is_empty() {
        return None;
    }
    let at = all[rng.below(all.len())].clone();
    let node = v.pointer_mut(&at)?;
    let durations = ["0s", "1us", "1ms", "3s", "10m", "99999h", "1000000000s", "5s..1s", "1ms..1ms"];
    let numbers =
        [serde_json::json!(u64::MAX), serde_json::json!(u32::MAX), serde_json::json!(0), serde_json::json!(-1)];
    let pick = if keep_type { rng.below(3) } else { rng.below(5) };
    let new = match (&*node, pick) {
        (Value::Number(n), 0) => serde_json::json!(n.as_f64().unwrap_or(0.0) * 1e12),
        (Value::Number(n), 1) => serde_json::json!(n.as_u64().map_or(0, |n| n.wrapping_add(1 + rng.next() % 3))),
        (Value::Number(_), 2) => numbers[rng.below(numbers.len())].clone(),
        (Value::String(s), 0..=2) if s.ends_with('s') || s.ends_with('m') || s.ends_with('h') => {
            serde_json::json!(durations[rng.below(durations.len())])
        }
        (Value::Bool(b), 0..=2) => serde_json::json!(!b),
        (Value::Null, 0..=2) => serde_json::json!(durations[rng.below(durations.len())]),
        _ => strange_value(rng),
    };
    let what = format!("{at}: {node} → {new}");
    *node = new;
    Some((serde_json::to_string(&v).ok()?, what))
}

/// Recomputes the footer's step count and digest over the step lines as the reader will see
/// them, so that an edit passes the integrity check. Leaves the text as it is when a step line
/// or the footer does not parse (the reader rejects it anyway).
fn reseal(lines: &mut [String]) {
    let Some((footer, body)) = lines.split_last_mut() else { return };
    if body.is_empty() {
        return;
    }
    let mut digest = FNV_OFFSET;
    for line in &body[1..] {
        let Ok(step) = serde_json::from_str::<Step>(line) else { return };
        digest = fnv1a(digest, step_line(&step).as_bytes());
        digest = fnv1a(digest, b"\n");
    }
    let Ok(mut f) = serde_json::from_str::<Value>(footer) else { return };
    if let Some(obj) = f.as_object_mut() {
        obj.insert("steps".into(), serde_json::json!(body.len() - 1));
        obj.insert("digest".into(), serde_json::json!(format!("{digest:016x}")));
        *footer = f.to_string();
    }
}

/// One mutant of `text` and what was done to it.
fn mutate(text: &str, rng: &mut Rng) -> (String, Vec<String>) {
    let mut lines: Vec<String> = text.lines().map(str::to_string).collect();
    let mut done = Vec::new();
    let mut reseal_after = false;
    // Half the mutants only edit the header (not covered by the digest): they reach the run.
    let header_only = rng.below(2) == 0;
    for _ in 0..1 + rng.below(3) {
        let n = lines.len();
        if n == 0 {
            break;
        }
        match if header_only { 4 } else { rng.below(9) } {
            0 => {
                let i = rng.below(n);
                lines.remove(i);
                done.push(format!("deleted line {}", i + 1));
            }
            1 => {
                let (a, b) = (rng.below(n), rng.below(n));
                lines.swap(a, b);
                done.push(format!("swapped lines {} and {}", a + 1, b + 1));
            }
            2 => {
                let i = rng.below(n);
                lines.insert(i, lines[i].clone());
                done.push(format!("duplicated line {}", i + 1));
            }
            3 => {
                let i = rng.below(n);
                let cut = rng.below(lines[i].len() + 1);
                let cut = (0..=cut).rev().find(|c| lines[i].is_char_boundary(*c)).unwrap_or(0);
                lines[i].truncate(cut);
                lines.truncate(i + 1);
                done.push(format!("truncated at line {}, byte {cut}", i + 1));
            }
            // The header is not covered by the digest: most mutations go there.
            4..=6 => {
                if let Some((line, what)) = mutate_json(&lines[0], rng, header_only) {
                    lines[0] = line;
                    done.push(format!("header {what}"));
                }
            }
            7 => {
                let i = 1 + rng.below(n.saturating_sub(1).max(1));
                if let Some((line, what)) = lines.get(i).and_then(|l| mutate_json(l, rng, false)) {
                    lines[i] = line;
                    done.push(format!("line {} {what}", i + 1));
                    reseal_after = true;
                }
            }
            _ => {
                let i = rng.below(n);
                if !lines[i].is_empty() {
                    let at = rng.below(lines[i].len());
                    let at = (0..=at).rev().find(|c| lines[i].is_char_boundary(*c)).unwrap_or(0);
                    let c = char::from(b' ' + (rng.next() % 95) as u8);
                    lines[i].insert(at, c);
                    done.push(format!("inserted {c:?} in line {} at byte {at}", i + 1));
                }
            }
        }
    }
    if reseal_after || rng.below(2) == 0 {
        reseal(&mut lines);
        done.push("re-sealed".into());
    }
    let mut out = lines.join("\n");
    out.push('\n');
    (out, done)
}

/// The library's `replay` path for one mutant: read, recorded scenario, run. Ok: it ended in a
/// trace or in an error that blames the input; `true` when its scenario was accepted and run.
fn replay_path(path: &Path, text: &str) -> Result<bool, String> {
    let mut reached_run = false;
    let outcome = (|| {
        let trace = parse_trace(path, text)?;
        let scenario = recorded_scenario(path, &trace)?;
        reached_run = true;
        run_with_budget(&scenario, trace.header.seed, BUDGET)
    })();
    match outcome {
        Err(SimError::Runtime(e)) => Err(format!("the simulator failed: {e}")),
        Err(e) if e.to_string().contains('\n') => Err(format!("an error of more than one line: {e:?}")),
        Ok(_) | Err(_) => Ok(reached_run),
    }
}

/// Runs `case`; a panic or an `Err` is the failure it describes.
fn check<T>(case: impl FnOnce() -> Result<T, String>) -> Result<T, String> {
    match catch_unwind(AssertUnwindSafe(case)) {
        Ok(r) => r,
        Err(panic) => {
            let message = panic
                .downcast_ref::<&str>()
                .map(|s| s.to_string())
                .or_else(|| panic.downcast_ref::<String>().cloned())
                .unwrap_or_default();
            Err(format!("panicked: {message}"))
        }
    }
}

#[test]
fn mutated_traces_end_in_a_trace_or_a_typed_error() {
    let corpus = corpus();
    let cases = env_u64("MCPSIM_FUZZ_CASES", 200);
    let seed = env_u64("MCPSIM_FUZZ_SEED", 0);
    let mut failures = Vec::new();
    let mut ran_a_scenario = 0;
    for case in 0..cases {
        let mut rng = Rng(seed ^ case.wrapping_mul(0x2545_f491_4f6c_dd1d));
        let (path, text) = &corpus[rng.below(corpus.len())];
        let (mutant, done) = mutate(text, &mut rng);
        match check(|| replay_path(path, &mutant)) {
            Ok(reached_run) => ran_a_scenario += usize::from(reached_run),
            Err(e) => {
                let name = path.file_name().unwrap_or_default().to_string_lossy();
                failures.push(format!("case {case} ({name}: {}): {e}", done.join("; ")));
            }
        }
    }
    assert!(failures.is_empty(), "{} of {cases} mutant(s) failed:\n{}", failures.len(), failures.join("\n"));
    // The mutants reach the run, not only the reader (about a fifth do: the scenario validation
    // stops many header edits before a run, as it should).
    assert!(ran_a_scenario as u64 * 8 >= cases, "only {ran_a_scenario} of {cases} mutants reached a run");
}

#[test]
fn the_harness_fails_on_a_panic_a_simulator_failure_and_a_multi_line_error() {
    assert!(check(|| Ok(())).is_ok());
    let planted = check(|| -> Result<(), String> { panic!("planted") });
    assert_eq!(planted, Err("panicked: planted".to_string()));
    let (path, text) = &corpus()[0];
    assert_eq!(check(|| replay_path(path, text)), Ok(true));
    // A header the reader accepts but the run refuses is the input's fault: fine.
    let bad_jitter = text.replacen("\"tool_jitter\":0.1", "\"tool_jitter\":-2.0", 1);
    assert_ne!(&bad_jitter, text);
    assert_eq!(check(|| replay_path(path, &bad_jitter)), Ok(false));
}

#[test]
fn a_resealed_step_edit_passes_the_integrity_check() {
    let (path, text) = &corpus()[0];
    let mut lines: Vec<String> = text.lines().map(str::to_string).collect();
    lines[1] = lines[1].replacen("\"epoch\":0", "\"epoch\":7", 1);
    let edited = lines.join("\n");
    assert!(parse_trace(path, &edited).is_err(), "the digest catches an edit");
    reseal(&mut lines);
    let trace = parse_trace(path, &lines.join("\n")).expect("re-sealed");
    assert!(step_line(&trace.steps[0]).contains("\"epoch\":7"));
}
