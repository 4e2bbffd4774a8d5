//! The shipped deployment files (deploy/): the Kubernetes manifests and the GitHub Actions
//! workflow parse as YAML, split the work in 4, and the shard and merge commands they run, run
//! here as they are written (with a small workload in MCPSIM_COMMAND), give byte for byte what
//! the unsharded command prints. The Containerfile builds the binary they call.

use serde_yaml::Value;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

mod common;

/// The workload the test gives MCPSIM_COMMAND: small, with broken and clean cells.
const SMALL: &str = "matrix --seeds 1 --clients naive,reference --servers reference --scenarios long-tool,chatty-tool";

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..")
}

fn yaml(file: &str) -> Value {
    let text = std::fs::read_to_string(root().join(file)).unwrap_or_else(|e| panic!("{file}: {e}"));
    serde_yaml::from_str(&text).unwrap_or_else(|e| panic!("{file} is not valid YAML: {e}"))
}

fn str_at<'a>(v: &'a Value, path: &[&str]) -> &'a str {
    let mut at = v;
    for p in path {
        at = match p.parse::<usize>() {
            Ok(i) => &at[i],
            Err(_) => &at[*p],
        };
    }
    at.as_str().unwrap_or_else(|| panic!("{path:?} is not a string: {at:?}"))
}

/// Runs one shell line as a pod or a job step would, with the binary on PATH.
fn sh(line: &str, dir: &Path, env: &[(&str, String)]) -> Output {
    let bin = Path::new(env!("CARGO_BIN_EXE_mcpsim")).parent().expect("the binary's directory").to_path_buf();
    let path = std::env::join_paths(
        std::iter::once(bin).chain(std::env::split_paths(&std::env::var_os("PATH").unwrap_or_default())),
    )
    .expect("a PATH");
    let mut c = Command::new("sh");
    c.arg("-c").arg(line).current_dir(dir).env("PATH", path);
    for (k, v) in env {
        c.env(k, v);
    }
    c.output().expect("sh runs")
}

fn unsharded(dir: &Path) -> Vec<u8> {
    let out = sh(&format!("mcpsim {SMALL}"), dir, &[]);
    assert_eq!(
        out.status.code(),
        Some(1),
        "the small matrix has broken cells: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    out.stdout
}

/// The one workload line of a file: a command `merge` can put together again.
fn check_workload(command: &str, file: &str) {
    let first = command.split_whitespace().next().unwrap_or("");
    assert!(["matrix", "sweep", "check", "explore"].contains(&first), "{file}: MCPSIM_COMMAND {command:?}");
    assert!(!command.contains("--shard"), "{file}: the shard flags are the file's own");
}

#[test]
fn the_kubernetes_indexed_job_and_its_merge_give_the_unsharded_output() {
    let pvc = yaml("deploy/k8s/results-pvc.yaml");
    assert_eq!(str_at(&pvc, &["kind"]), "PersistentVolumeClaim");
    let job = yaml("deploy/k8s/shards-job.yaml");
    let merge = yaml("deploy/k8s/merge-job.yaml");
    assert_eq!(str_at(&job, &["spec", "completionMode"]), "Indexed");
    assert_eq!((job["spec"]["completions"].as_u64(), job["spec"]["parallelism"].as_u64()), (Some(4), Some(4)));
    let claim = str_at(&pvc, &["metadata", "name"]);
    for j in [&job, &merge] {
        assert_eq!(
            str_at(j, &["spec", "template", "spec", "volumes", "0", "persistentVolumeClaim", "claimName"]),
            claim
        );
        assert_eq!(
            str_at(j, &["spec", "template", "spec", "containers", "0", "volumeMounts", "0", "mountPath"]),
            "/results"
        );
        assert!(str_at(j, &["spec", "template", "spec", "containers", "0", "image"]).ends_with("mcpsim:latest"));
    }
    let container = &job["spec"]["template"]["spec"]["containers"][0];
    assert_eq!(str_at(container, &["env", "0", "name"]), "MCPSIM_COMMAND");
    check_workload(str_at(container, &["env", "0", "value"]), "shards-job.yaml");
    let shard_line = str_at(container, &["args", "0"]);
    let merge_line = str_at(&merge["spec"]["template"]["spec"]["containers"][0], &["args", "0"]);

    let tmp = common::scratch("deploy", "k8s");
    let dir = tmp.path();
    let results = dir.join("results");
    std::fs::create_dir_all(&results).unwrap();
    let local = |line: &str| line.replace("/results", results.to_str().expect("a UTF-8 temp path"));
    let pods: Vec<_> = (0..4)
        .map(|index| {
            let (line, dir) = (local(shard_line), dir.to_path_buf());
            std::thread::spawn(move || {
                sh(&line, &dir, &[("JOB_COMPLETION_INDEX", index.to_string()), ("MCPSIM_COMMAND", SMALL.to_string())])
            })
        })
        .collect();
    for (k, pod) in pods.into_iter().enumerate() {
        let out = pod.join().expect("the pod thread");
        assert!(out.status.success(), "pod {k}: {}", String::from_utf8_lossy(&out.stderr));
        assert!(results.join(format!("shard-{}", k + 1)).is_dir(), "pod {k} wrote shard-{}", k + 1);
    }
    let merged = sh(&local(merge_line), dir, &[]);
    assert!(merged.status.success(), "{}", String::from_utf8_lossy(&merged.stderr));
    let whole = unsharded(dir);
    assert_eq!(std::fs::read(results.join("result.txt")).unwrap(), whole, "result.txt is the unsharded output");
    assert_eq!(merged.stdout, whole, "the merge pod's log is the unsharded output");
}

#[test]
fn the_github_workflow_shards_and_merge_give_the_unsharded_output() {
    let flow = yaml("deploy/github/shards.yml");
    check_workload(str_at(&flow, &["env", "MCPSIM_COMMAND"]), "shards.yml");
    let shard = &flow["jobs"]["shard"];
    let ks: Vec<u64> =
        shard["strategy"]["matrix"]["k"].as_sequence().expect("a k list").iter().filter_map(Value::as_u64).collect();
    assert_eq!(ks, [1, 2, 3, 4]);
    assert_eq!(str_at(shard, &["env", "K"]), "${{ matrix.k }}");
    let runs = |job: &Value| -> Vec<String> {
        job["steps"].as_sequence().expect("steps").iter().filter_map(|s| s["run"].as_str()).map(String::from).collect()
    };
    let shard_runs = runs(shard);
    let merge_runs = runs(&flow["jobs"]["merge"]);
    assert!(shard_runs.iter().chain(&merge_runs).any(|r| r.contains("cargo build --release -p mcpsim --locked")));
    let shard_line = shard_runs.iter().find(|r| r.starts_with("mcpsim ")).expect("the shard step");
    let merge_line = merge_runs.iter().find(|r| r.starts_with("mcpsim merge")).expect("the merge step");
    // The artifacts: shard-K uploaded from the shard job, downloaded under shards/.
    let upload = shard["steps"]
        .as_sequence()
        .unwrap()
        .iter()
        .find(|s| s["uses"].as_str().is_some_and(|u| u.starts_with("actions/upload-artifact")))
        .expect("an upload");
    assert_eq!(str_at(upload, &["with", "path"]), "shard-${{ matrix.k }}");

    let tmp = common::scratch("deploy", "github");
    let dir = tmp.path();
    let jobs: Vec<_> = ks
        .iter()
        .map(|k| {
            let (line, dir, k) = (shard_line.clone(), dir.to_path_buf(), *k);
            std::thread::spawn(move || sh(&line, &dir, &[("K", k.to_string()), ("MCPSIM_COMMAND", SMALL.to_string())]))
        })
        .collect();
    for (k, job) in ks.iter().zip(jobs) {
        let out = job.join().expect("the job thread");
        assert!(out.status.success(), "job {k}: {}", String::from_utf8_lossy(&out.stderr));
    }
    // upload-artifact, then download-artifact with pattern shard-* into shards/.
    std::fs::create_dir_all(dir.join("shards")).unwrap();
    for k in &ks {
        std::fs::rename(dir.join(format!("shard-{k}")), dir.join(format!("shards/shard-{k}")))
            .expect("a shard directory");
    }
    let merged = sh(merge_line, dir, &[]);
    assert!(merged.status.success(), "{}", String::from_utf8_lossy(&merged.stderr));
    let whole = unsharded(dir);
    assert_eq!(std::fs::read(dir.join("result.txt")).unwrap(), whole);
}

#[test]
fn the_containerfile_builds_the_binary_the_manifests_call() {
    let text = std::fs::read_to_string(root().join("deploy/Containerfile")).expect("deploy/Containerfile");
    assert!(text.contains("cargo build --release -p mcpsim --locked"), "built as CI builds it");
    assert!(text.contains("/usr/local/bin/mcpsim") && text.contains("ENTRYPOINT [\"mcpsim\"]"), "mcpsim on PATH");
    assert!(text.contains("ARG MCPSIM_COMMIT"), "the commit for --version (no .git in the image)");
    assert!(!root().join(".github/workflows/shards.yml").exists(), "the recipe does not run in this repository");
}

#[test]
fn every_yaml_block_in_the_docs_parses() {
    for entry in std::fs::read_dir(root().join("docs")).expect("docs/") {
        let path = entry.expect("an entry").path();
        if path.extension().is_none_or(|e| e != "md") {
            continue;
        }
        let text = std::fs::read_to_string(&path).expect("a doc");
        for (i, block) in text.split("```").enumerate().filter(|(i, _)| i % 2 == 1) {
            if let Some(body) = block.strip_prefix("yaml\n").or_else(|| block.strip_prefix("yml\n")) {
                serde_yaml::from_str::<Value>(body).unwrap_or_else(|e| panic!("{} block {i}: {e}", path.display()));
            }
        }
    }
}
