//! The studies through the `mcpsim` binary: `sweep`, `matrix` and `advise` keep the exit
//! contract (0 clean, 1 an invariant violated, 2 bad input on one line) and write deterministic
//! files.

use tempfile::TempDir;

mod common;

use common::{assert_bad_input, code, mcpsim, path, stderr, stdout};

fn scratch(test: &str) -> TempDir {
    common::scratch("studies-cli", test)
}

#[test]
fn advise_refuses_rates_without_a_unit_or_out_of_range_on_one_line() {
    // Was a panic (float to Duration) at 1e-20/s, 10 silently taken as 10/s, and "inf events"
    // at 1e308/s.
    assert_bad_input(&mcpsim(&["advise", "--event-rate", "1e-20/s"]), "between 0.001/h and 1000000/s");
    assert_bad_input(&mcpsim(&["advise", "--event-rate", "10"]), "needs a unit");
    assert_bad_input(&mcpsim(&["advise", "--event-rate", "1e308/s"]), "between 0.001/h and 1000000/s");
    assert_bad_input(&mcpsim(&["advise", "--event-rate=-3/s"]), "zero or positive");
    assert_bad_input(&mcpsim(&["advise", "--event-rate", "3/day"]), "/s, /m or /h");
    let ok = mcpsim(&["advise", "--event-rate", "600/m"]);
    assert_eq!(code(&ok), 0, "{}", stderr(&ok));
    assert!(stdout(&ok).contains("inputs: event rate 10/s"), "{}", stdout(&ok));
}

#[test]
fn advise_at_a_zero_rate_asks_for_one_event_not_minus_one() {
    // Was "i.e. R > -1".
    let out = mcpsim(&["advise", "--event-rate", "0/s"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let text = stdout(&out);
    assert!(!text.contains("R > -"), "{text}");
    assert!(!text.contains("inf"), "{text}");
    assert!(text.contains("server.retention         > 0 → at least 1 event per stream"), "{text}");
}

#[test]
fn sweep_exits_1_when_a_cell_broke_an_invariant_and_0_when_none_did() {
    // The silent-head server loses events silently when its buffer is too small.
    let broken = mcpsim(&[
        "sweep",
        "--server",
        "silent-head",
        "--scenario",
        "chatty-tool",
        "--vary",
        "server.retention=10,300",
        "--seeds",
        "1",
    ]);
    assert_eq!(code(&broken), 1, "{}", stderr(&broken));
    assert!(stdout(&broken).contains("boundary of server.retention"), "{}", stdout(&broken));
    // The reference server reports the gap: an outcome, not a violation.
    let clean = mcpsim(&["sweep", "--scenario", "chatty-tool", "--vary", "server.retention=10,300", "--seeds", "1"]);
    assert_eq!(code(&clean), 0, "{}", stderr(&clean));
}

#[test]
fn sweep_refuses_a_plot_that_is_not_svg_before_running() {
    let tmp = scratch("plot");
    let dir = tmp.path();
    let png = dir.join("x.png");
    let out = mcpsim(&["sweep", "--scenario", "chatty-tool", "--vary", "server.retention=10", "--plot", path(&png)]);
    assert_bad_input(&out, ".svg");
    assert!(!png.exists(), "nothing written");
    assert!(stdout(&out).is_empty(), "nothing ran: {}", stdout(&out));
    let svg = dir.join("x.svg");
    let out = mcpsim(&[
        "sweep",
        "--scenario",
        "chatty-tool",
        "--vary",
        "server.retention=10,300",
        "--seeds",
        "1",
        "--plot",
        path(&svg),
    ]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let drawn = std::fs::read_to_string(&svg).expect("the plot is written");
    assert!(drawn.starts_with("<svg"), "{}", &drawn[..drawn.len().min(80)]);
}

#[test]
fn two_identical_sweeps_on_two_threads_write_byte_identical_csv_files() {
    let tmp = scratch("csv");
    let dir = tmp.path();
    let (a, b) = (dir.join("a.csv"), dir.join("b.csv"));
    for file in [&a, &b] {
        let out = mcpsim(&[
            "sweep",
            "--server",
            "silent-head",
            "--scenario",
            "chatty-tool",
            "--vary",
            "server.retention=10..310:100",
            "--vary",
            "server.unhonourable=410,silent-head",
            "--seeds",
            "2",
            "--jobs",
            "2",
            "--csv",
            path(file),
        ]);
        assert_eq!(code(&out), 1, "silent-head at 10 events loses some: {}", stderr(&out));
    }
    let (a, b) = (std::fs::read(&a).expect("a.csv"), std::fs::read(&b).expect("b.csv"));
    assert_eq!(a, b);
    let text = String::from_utf8(a).expect("UTF-8");
    let firsts: Vec<&str> = text.lines().skip(1).map(|l| l.split(',').next().unwrap_or("")).collect();
    assert_eq!(firsts, ["10", "10", "110", "110", "210", "210", "310", "310"], "grid order");
}

#[test]
fn matrix_runs_a_repeated_profile_once() {
    let out = mcpsim(&[
        "matrix",
        "--clients",
        "reference,naive,reference",
        "--servers",
        "reference,reference",
        "--scenarios",
        "long-tool",
        "--seeds",
        "1",
        "--format",
        "csv",
    ]);
    assert_eq!(code(&out), 1, "naive breaks no-duplicate-execution: {}", stderr(&out));
    let text = stdout(&out);
    let rows: Vec<&str> = text.lines().collect();
    assert_eq!(rows.len(), 3, "a header and one row per distinct cell: {text}");
    assert!(rows[1].starts_with("reference,reference,long-tool,1,"), "{text}");
    assert!(rows[2].starts_with("naive,reference,long-tool,1,no-duplicate-execution=1"), "{text}");
    assert!(stderr(&out).is_empty(), "no progress bar when stderr is not a terminal: {}", stderr(&out));
}
