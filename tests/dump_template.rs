//! Every `mcpsim profiles --dump` is a working template: each field is written (a balancer's too,
//! though traces leave most of them out at their default), no `[table]` encloses the end of the
//! file, so a field edited in place or deleted and set again at the end is read as the profile
//! with that field changed; and a deployment's unknown `[lb]` field is named with the fields a
//! balancer has.

use mcpsim::scenario::ScenarioArgs;
use mcpsim::studies::check::Deployment;
use mcpsim_model::profiles::{self, Role};
use tempfile::TempDir;

/// A fresh directory, removed when dropped (at the end of the test, also when it panics).
fn dir() -> TempDir {
    tempfile::Builder::new().prefix("mcpsim-dump-template-").tempdir().expect("a writable temp dir")
}

/// The profile at `path` as JSON (one shape for every role).
fn load(role: Role, path: &str) -> serde_json::Value {
    let (client, server, sets) = match role {
        Role::Client => (path, "reference", vec![]),
        Role::Server => ("reference", path, vec![]),
        Role::Lb => ("reference", "reference", vec![format!("lb={path}")]),
    };
    let args = ScenarioArgs { client: client.into(), server: server.into(), scenario: "long-tool".into(), sets };
    let s = args.build().unwrap_or_else(|e| panic!("{path}: {e}"));
    match role {
        Role::Client => serde_json::to_value(&s.client),
        Role::Server => serde_json::to_value(&s.server),
        Role::Lb => serde_json::to_value(&s.lb),
    }
    .expect("a policy is JSON")
}

/// Every `FIELD = VALUE` line of a dump at the top level (not `name`, `description`, sources).
fn field_lines(text: &str) -> Vec<&str> {
    text.lines()
        .filter(|l| !l.starts_with('#') && l.contains(" = "))
        .filter(|l| !["name ", "description ", "sdk ", "sources."].iter().any(|p| l.starts_with(p)))
        .collect()
}

#[test]
fn every_dump_is_a_template_a_field_moved_to_the_end_or_edited_reads_back() {
    let d = dir();
    for role in Role::ALL {
        // The SDK profiles' earlier releases (`rmcp-1.3`, `py-sdk-1.29`, …) are dumped and read back too.
        let versioned = role.versioned_names();
        for name in role.names().iter().chain(versioned) {
            let text = profiles::dump(role, name).expect("listed").expect("valid");
            let what = format!("{}:{name}", role.as_str());
            assert!(!text.lines().any(|l| l.starts_with('[')), "{what}: no table header\n{text}");
            let path = |file: &str, body: &str| {
                let p = d.path().join(format!("{}-{name}-{file}.toml", role.as_str()));
                std::fs::write(&p, body).unwrap();
                p.display().to_string()
            };
            let as_dumped = load(role, &path("dump", &text));
            // Read back, the dump is the built-in profile itself, every value kept.
            assert_eq!(as_dumped, load(role, name), "{what}: the dump reads back as another profile");
            // Every documented top-level field is written out (a tagged table such as a client's
            // close_handling has the inner fields of its kind only).
            for field in profiles::documented_paths(role).into_iter().filter(|p| *p != "name" && !p.contains('.')) {
                let written =
                    text.lines().any(|l| l.starts_with(&format!("{field} = ")) || l.starts_with(&format!("{field}.")));
                assert!(written, "{what}: {field} is not written\n{text}");
            }
            // Each field deleted where it is and set again at the end of the file: the same profile.
            for line in field_lines(&text) {
                let moved = text.replacen(&format!("\n{line}\n"), "\n", 1) + line + "\n";
                assert_eq!(load(role, &path("moved", &moved)), as_dumped, "{what}: {line} at the end");
            }
        }
    }
    // An edit is read: the default balancer with three replicas, and a server's retention.
    let lb = profiles::dump(Role::Lb, "default").unwrap().unwrap();
    let p = d.path().join("lb-edited.toml");
    std::fs::write(&p, lb.replacen("\nreplicas = 1\n", "\n", 1) + "replicas = 3\n").unwrap();
    assert_eq!(load(Role::Lb, &p.display().to_string())["replicas"], 3);
    let server = profiles::dump(Role::Server, "reference").unwrap().unwrap();
    let p = d.path().join("server-edited.toml");
    std::fs::write(&p, server.replacen("retention.max_events = 100", "retention.max_events = 7", 1)).unwrap();
    assert_eq!(load(Role::Server, &p.display().to_string())["retention"]["max_events"], 7);
}

#[test]
fn an_unknown_lb_field_in_a_deployment_lists_the_balancers_fields() {
    let e =
        Deployment::parse("server = \"reference\"\n[lb]\nidle_timout = \"30s\"\n", "d.toml").unwrap_err().to_string();
    assert!(e.starts_with("d.toml:3:"), "{e}");
    assert!(e.contains("unknown field `idle_timout` in [lb]") && e.contains("idle_timeout, max_lifetime"), "{e}");
    assert!(!e.contains("fault.partition"), "not the --set shortcuts: {e}");
    let e = Deployment::parse("[server]\nextends = \"reference\"\nkeep_alive = \"15s\"\n", "d.toml")
        .unwrap_err()
        .to_string();
    assert!(e.contains("unknown field `keep_alive` in [server]") && e.contains("keepalive"), "{e}");
}
