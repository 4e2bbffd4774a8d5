//! The layering the probe's real I/O must keep (issue 20, "Structure"): the simulator's library
//! never pulls HTTP in. The probe (`sim/src/probe/`, real sockets over hyper) is behind the
//! `probe` feature, which only the CLI turns on; a crate that uses mcpsim as a library
//! (`default-features = false`, as `sim/examples/downstream` does) gets no hyper, and nothing in
//! the simulator reaches into the probe.

mod common;

use std::path::Path;

fn manifest(path: &str) -> toml::Table {
    let text = std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join(path)).expect("the manifest reads");
    text.parse().expect("the manifest parses")
}

const HTTP_CRATES: &[&str] = &["hyper", "hyper-util", "http-body-util", "bytes"];

#[test]
fn http_comes_only_with_the_probe_feature_which_only_the_cli_turns_on() {
    let sim = manifest("sim/Cargo.toml");
    let deps = sim["dependencies"].as_table().expect("[dependencies]");
    for name in HTTP_CRATES {
        let dep = deps.get(*name).unwrap_or_else(|| panic!("sim depends on {name}"));
        assert_eq!(dep.get("optional").and_then(|v| v.as_bool()), Some(true), "{name} must be optional");
    }
    let features = sim["features"].as_table().expect("[features]");
    for (feature, enables) in features {
        let enables: Vec<&str> = enables.as_array().expect("a list").iter().filter_map(|v| v.as_str()).collect();
        let http: Vec<&&str> = HTTP_CRATES.iter().filter(|c| enables.contains(&format!("dep:{c}").as_str())).collect();
        match feature.as_str() {
            "probe" => assert_eq!(http.len(), HTTP_CRATES.len(), "probe turns on {HTTP_CRATES:?}"),
            _ => assert!(http.is_empty(), "feature {feature} turns on HTTP crates directly: {http:?}"),
        }
        if feature != "cli" {
            assert!(!enables.contains(&"probe"), "only the cli feature turns on probe, not {feature}");
        }
    }
    let downstream = manifest("sim/examples/downstream/Cargo.toml");
    let mcpsim = &downstream["dev-dependencies"]["mcpsim"];
    assert_eq!(mcpsim.get("default-features").and_then(|v| v.as_bool()), Some(false));
}

#[test]
fn nothing_outside_the_probe_and_the_cli_reaches_into_the_probe() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("sim/src");
    let outside = |rel: &str| !(rel.starts_with("probe") || rel.starts_with("cli") || rel == "main.rs");
    let offenders: Vec<String> = common::rust_sources("sim/src")
        .into_iter()
        .filter(|(rel, text)| outside(rel) && (text.contains("crate::probe") || text.contains("mcpsim::probe")))
        .map(|(rel, _)| rel)
        .collect();
    let lib = std::fs::read_to_string(src.join("lib.rs")).expect("lib.rs reads");
    assert!(lib.contains("#[cfg(all(madsim, feature = \"probe\"))]\npub mod probe;"), "the probe module is gated");
    assert!(offenders.is_empty(), "the simulator reaches into the probe: {offenders:?}");
}
