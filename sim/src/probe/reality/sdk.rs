//! The SDKs with fixtures under `sim/probe/fixtures`: where they are, how their servers start,
//! and the verdict type both halves of the reality check compare.

use crate::probe::error::ProbeError;
use std::collections::BTreeSet;
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

/// The three SDKs with fixture servers.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Sdk {
    /// TypeScript `@modelcontextprotocol/sdk` 1.32.2.
    Ts,
    /// Python `mcp` 2.3.0.
    Py,
    /// Rust `rmcp` 3.11.0.
    Rust,
}

impl Sdk {
    /// The three, in table order.
    pub const ALL: [Sdk; 3] = [Sdk::Ts, Sdk::Py, Sdk::Rust];

    /// The fixture folder's name (`install.sh ts|py|rust`).
    pub fn name(self) -> &'static str {
        match self {
            Sdk::Ts => "ts",
            Sdk::Py => "py",
            Sdk::Rust => "rust",
        }
    }

    /// The SDK of a fixture folder's name.
    pub fn parse(s: &str) -> Option<Sdk> {
        Sdk::ALL.into_iter().find(|k| k.name() == s)
    }

    /// The SDK and its pinned version.
    pub fn label(self) -> &'static str {
        match self {
            Sdk::Ts => "TypeScript @modelcontextprotocol/sdk 1.32.2",
            Sdk::Py => "Python mcp 2.3.0",
            Sdk::Rust => "rmcp 3.11.0",
        }
    }

    /// The built-in server profile that models it.
    pub fn profile(self) -> &'static str {
        match self {
            Sdk::Ts => "ts-sdk",
            Sdk::Py => "py-sdk",
            Sdk::Rust => "rmcp",
        }
    }

    /// The fixture server's program and arguments (port 0: any free port).
    fn server_command(self, fixtures: &Path) -> (PathBuf, Vec<String>) {
        let p = |rel: &str| fixtures.join(rel);
        match self {
            Sdk::Ts => (PathBuf::from("node"), vec![p("ts/server.mjs").display().to_string(), "0".into()]),
            Sdk::Py => (p("py/.venv/bin/python"), vec![p("py/server.py").display().to_string(), "0".into()]),
            Sdk::Rust => (p("rust/target/debug/probe-server"), vec!["0".into()]),
        }
    }

    /// What `install.sh` leaves behind, or why this SDK's fixture is not installed.
    pub fn installed(self, fixtures: &Path) -> Result<(), String> {
        let need = match self {
            Sdk::Ts => fixtures.join("ts/node_modules/@modelcontextprotocol/sdk/package.json"),
            Sdk::Py => fixtures.join("py/.venv/bin/python"),
            Sdk::Rust => fixtures.join("rust/target/debug/probe-server"),
        };
        if need.exists() {
            Ok(())
        } else {
            Err(format!("{} is missing: run sim/probe/fixtures/install.sh {}", need.display(), self.name()))
        }
    }
}

/// `sim/probe/fixtures` of this source tree.
pub fn fixtures_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("probe").join("fixtures")
}

/// A running fixture server; killed (by its own pid) when dropped.
pub struct FixtureServer {
    child: Child,
    /// Its endpoint, from the `LISTENING` line.
    pub url: String,
}

impl FixtureServer {
    /// Starts the SDK's fixture server and waits (at most 60 s) for its `LISTENING` line.
    pub fn start(sdk: Sdk, fixtures: &Path) -> Result<FixtureServer, ProbeError> {
        FixtureServer::start_with(sdk, fixtures, &[])
    }

    /// [`FixtureServer::start`] with extra environment variables (`MCPSIM_PROBE_IDLE_TTL_MS`).
    pub fn start_with(sdk: Sdk, fixtures: &Path, env: &[(&str, String)]) -> Result<FixtureServer, ProbeError> {
        sdk.installed(fixtures).map_err(|problem| ProbeError::Io { path: sdk.name().into(), problem })?;
        let (program, args) = sdk.server_command(fixtures);
        let io = |e: std::io::Error| ProbeError::Io { path: program.display().to_string(), problem: e.to_string() };
        let mut child = Command::new(&program)
            .args(&args)
            .env("PYTHONUNBUFFERED", "1")
            .envs(env.iter().map(|(k, v)| (*k, v.as_str())))
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .map_err(io)?;
        let stdout = child.stdout.take().ok_or_else(|| ProbeError::Protocol("no stdout".into()))?;
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines().map_while(Result::ok) {
                if let Some(url) = line.strip_prefix("LISTENING ") {
                    let _ = tx.send(url.trim().to_string());
                }
            }
        });
        let mut server = FixtureServer { child, url: String::new() };
        match rx.recv_timeout(Duration::from_secs(60)) {
            Ok(url) => {
                server.url = url;
                Ok(server)
            }
            Err(_) => {
                Err(ProbeError::Timeout(format!("{} fixture server printed no LISTENING line in 60 s", sdk.name())))
            }
        }
    }
}

impl Drop for FixtureServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A verdict: the invariants a run broke (none: `ok`).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Verdict(pub BTreeSet<String>);

impl Verdict {
    /// The verdict naming these invariants.
    pub fn of<'a>(names: impl IntoIterator<Item = &'a str>) -> Verdict {
        Verdict(names.into_iter().map(String::from).collect())
    }
}

impl std::fmt::Display for Verdict {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.0.is_empty() {
            write!(f, "ok")
        } else {
            write!(f, "{}", self.0.iter().cloned().collect::<Vec<_>>().join(", "))
        }
    }
}

/// the SDKs' own defaults are 5 to 30 minutes), and the probe's `--idle-bound`. Checkpoints at
/// 1, 3, 5, … 15 s put a 6 s TTL between 5 and 7 s.
pub const FIXTURE_IDLE_TTL: Duration = Duration::from_secs(6);
/// The `--idle-bound` of the reality check's `idle-expiry`.
pub const IDLE_BOUND: Duration = Duration::from_secs(16);
