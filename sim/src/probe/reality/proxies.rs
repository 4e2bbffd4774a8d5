//! Real proxies as fixtures: Debian's nginx 1.22.1 and HAProxy 2.6.12, started on loopback in
//! front of a fixture server with a configuration generated into a temporary directory
//! (`sim/probe/fixtures/proxies/*.in`), in the foreground, killed when dropped. Their defaults
//! are probed through with the SDK fixtures behind them and mirrored in the simulator through the
//! built-in lb profiles `nginx` and `haproxy` ([`check_proxy`]); the configurations people change
//! (a short read timeout, forced buffering, kept-alive upstream connections) are measured on raw
//! sockets and set beside the lb model's prediction (`proxy_measure`); `proxy_check` runs both.

use crate::probe::error::ProbeError;
use crate::probe::reality::check::{agreement_row, cell, rows_adjusted, Row};
use crate::probe::reality::sdk::{FixtureServer, Sdk};
use crate::probe::server::run::{probe_server, ProbeOptions, ProbeReport};
use crate::scenario::Scenario;
use mcpsim_model::config::LbConfig;
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// The two proxies.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ProxyKind {
    /// nginx 1.22.1 (Debian bookworm, `nginx-light`).
    Nginx,
    /// HAProxy 2.6.12 (Debian bookworm).
    Haproxy,
}

const NGINX_TEMPLATE: &str = include_str!("../../../probe/fixtures/proxies/nginx.conf.in");
const HAPROXY_TEMPLATE: &str = include_str!("../../../probe/fixtures/proxies/haproxy.cfg.in");

impl ProxyKind {
    /// The program, as `install.sh proxies` installs it.
    pub fn program(self) -> &'static str {
        match self {
            ProxyKind::Nginx => "nginx",
            ProxyKind::Haproxy => "haproxy",
        }
    }

    /// The version the profiles were written against.
    pub fn label(self) -> &'static str {
        match self {
            ProxyKind::Nginx => "nginx 1.22.1 (Debian)",
            ProxyKind::Haproxy => "HAProxy 2.6.12 (Debian)",
        }
    }

    /// Whether the program runs here, or why not.
    pub fn installed(self) -> Result<(), String> {
        let flag = if self == ProxyKind::Nginx { "-v" } else { "-vv" };
        match Command::new(self.program()).arg(flag).stdout(Stdio::null()).stderr(Stdio::null()).status() {
            Ok(s) if s.success() => Ok(()),
            Ok(s) => Err(format!("`{} {flag}` exited {s}: run sim/probe/fixtures/install.sh proxies", self.program())),
            Err(e) => {
                Err(format!("{} is not installed ({e}): run sim/probe/fixtures/install.sh proxies", self.program()))
            }
        }
    }
}

/// One proxy configuration: the template's defaults plus a few lines.
#[derive(Clone, Copy, Debug)]
pub struct ProxySetup {
    /// Its name in the tables (`nginx`, `nginx-read-3s`).
    pub name: &'static str,
    /// Which proxy.
    pub kind: ProxyKind,
    /// Lines added where the template says `@EXTRA@` (nginx: inside `location /`; HAProxy: in
    /// `defaults`).
    pub extra: &'static str,
    /// nginx only: lines inside the `upstream` block.
    pub upstream_extra: &'static str,
    /// The built-in lb profile it starts from.
    pub profile: &'static str,
    /// The same change to that profile, for the simulator.
    pub adjust: fn(&mut LbConfig),
    /// What it is, for the doc.
    pub what: &'static str,
}

fn unchanged(_: &mut LbConfig) {}

fn read_3s(lb: &mut LbConfig) {
    lb.idle_timeout = Some(Duration::from_secs(3));
}

/// nginx with buffering forced: the balancer holds the head with the body in one memory page's
/// buffer (`proxy_buffer_size` 4k on x86-64), written as a hop in front of it.
fn buffered(lb: &mut LbConfig) {
    let hop = mcpsim_model::config::HopConfig {
        buffer: Some(4096),
        buffer_head: true,
        ..mcpsim_model::config::HopConfig::default()
    };
    lb.hops = vec![hop];
}

/// Buffering forced and a 3 s read timeout: a silent stream's head is still in the buffer when
/// the timeout cuts it.
fn buffered_read_3s(lb: &mut LbConfig) {
    buffered(lb);
    read_3s(lb);
}

fn upstream_kept(lb: &mut LbConfig) {
    lb.upstream_keep_alive = true;
}

/// The proxies' defaults, probed with each SDK's fixture behind them.
pub const PROXIES: &[ProxySetup] = &[
    ProxySetup {
        name: "nginx",
        kind: ProxyKind::Nginx,
        extra: "",
        upstream_extra: "",
        profile: "nginx",
        adjust: unchanged,
        what: "nginx's defaults (proxy_buffering on, honouring X-Accel-Buffering; proxy_read_timeout 60s; HTTP/1.0 upstream)",
    },
    ProxySetup {
        name: "haproxy",
        kind: ProxyKind::Haproxy,
        extra: "",
        upstream_extra: "",
        profile: "haproxy",
        adjust: unchanged,
        what: "Debian's haproxy.cfg defaults (timeout connect 5s, client 50s, server 50s)",
    },
];

/// The configurations people run beside the defaults, measured on raw sockets
/// (`proxy_measure`).
pub const CONFIGURATIONS: &[ProxySetup] = &[
    PROXIES[0],
    ProxySetup {
        name: "nginx-read-3s",
        kind: ProxyKind::Nginx,
        extra: "proxy_read_timeout 3s;",
        upstream_extra: "",
        profile: "nginx",
        adjust: read_3s,
        what: "proxy_read_timeout 3s",
    },
    ProxySetup {
        name: "nginx-buffered",
        kind: ProxyKind::Nginx,
        extra: "proxy_ignore_headers X-Accel-Buffering;",
        upstream_extra: "",
        profile: "nginx",
        adjust: buffered,
        what: "buffering forced: proxy_ignore_headers X-Accel-Buffering",
    },
    ProxySetup {
        name: "nginx-buffered-read-3s",
        kind: ProxyKind::Nginx,
        extra: "proxy_ignore_headers X-Accel-Buffering; proxy_read_timeout 3s;",
        upstream_extra: "",
        profile: "nginx",
        adjust: buffered_read_3s,
        what: "buffering forced and proxy_read_timeout 3s: a read timeout while the head is buffered",
    },
    ProxySetup {
        name: "nginx-upstream-keepalive",
        kind: ProxyKind::Nginx,
        extra: "proxy_http_version 1.1; proxy_set_header Connection \"\";",
        upstream_extra: "keepalive 16;",
        profile: "nginx",
        adjust: upstream_kept,
        what: "HTTP/1.1 upstream keep-alive: keepalive 16, proxy_http_version 1.1, Connection \"\"",
    },
    PROXIES[1],
    ProxySetup {
        name: "haproxy-server-3s",
        kind: ProxyKind::Haproxy,
        extra: "timeout server 3s",
        upstream_extra: "",
        profile: "haproxy",
        adjust: read_3s,
        what: "timeout server 3s",
    },
];

impl ProxySetup {
    /// The built-in profile changed as this configuration changes the proxy.
    pub fn lb(&self) -> Result<LbConfig, ProbeError> {
        let mut lb = mcpsim_model::profiles::lb(self.profile)
            .ok_or_else(|| ProbeError::Protocol(format!("no built-in lb profile {}", self.profile)))?;
        (self.adjust)(&mut lb);
        Ok(lb)
    }

    /// The configuration file, for a proxy listening on `listen` in front of `upstream`, its
    /// files under `prefix`.
    pub fn config_text(&self, listen: SocketAddr, upstream: SocketAddr, prefix: &Path) -> String {
        let template = match self.kind {
            ProxyKind::Nginx => NGINX_TEMPLATE,
            ProxyKind::Haproxy => HAPROXY_TEMPLATE,
        };
        template
            .replace("@PREFIX@", &prefix.display().to_string())
            .replace("@LISTEN@", &listen.to_string())
            .replace("@UPSTREAM@", &upstream.to_string())
            .replace("@UPSTREAM_EXTRA@", self.upstream_extra)
            .replace("@EXTRA@", self.extra)
    }
}

/// A running proxy; killed (by its own pid) and its directory removed when dropped.
pub struct RunningProxy {
    child: Child,
    /// Removed when dropped, which is after `drop` below has stopped the proxy.
    dir: tempfile::TempDir,
    /// The MCP endpoint through it.
    pub url: String,
}

impl Drop for RunningProxy {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The address and path of an `http://host:port/path` URL of a fixture.
pub fn addr_of(url: &str) -> Result<(SocketAddr, String), ProbeError> {
    let rest = url.strip_prefix("http://").ok_or_else(|| ProbeError::Protocol(format!("not http://: {url}")))?;
    let (host, path) = rest.split_once('/').map_or((rest, "/".to_string()), |(h, p)| (h, format!("/{p}")));
    let addr = host.parse().map_err(|_| ProbeError::Protocol(format!("not host:port: {host}")))?;
    Ok((addr, path))
}

/// Starts `setup` on 127.0.0.1 in front of the fixture at `upstream_url`, and waits (at most
/// 10 s) until it accepts connections.
pub fn start_proxy(setup: &ProxySetup, upstream_url: &str) -> Result<RunningProxy, ProbeError> {
    setup.kind.installed().map_err(|problem| ProbeError::Io { path: setup.kind.program().into(), problem })?;
    let (upstream, path) = addr_of(upstream_url)?;
    let io = |what: &str, e: std::io::Error| ProbeError::Io { path: what.to_string(), problem: e.to_string() };
    // A free port: bound, read and released; the proxy binds it a moment later.
    let listen = TcpListener::bind("127.0.0.1:0").and_then(|l| l.local_addr()).map_err(|e| io("127.0.0.1:0", e))?;
    // Removed when dropped: by the proxy below once it is stopped, or here on an early return.
    let dir = tempfile::Builder::new()
        .prefix(&format!("mcpsim-proxy-{}-", setup.name))
        .tempdir()
        .map_err(|e| io(&std::env::temp_dir().display().to_string(), e))?;
    let conf = dir.path().join(if setup.kind == ProxyKind::Nginx { "nginx.conf" } else { "haproxy.cfg" });
    std::fs::write(&conf, setup.config_text(listen, upstream, dir.path()))
        .map_err(|e| io(&conf.display().to_string(), e))?;
    let mut cmd = Command::new(setup.kind.program());
    match setup.kind {
        ProxyKind::Nginx => cmd.arg("-p").arg(dir.path()).arg("-c").arg(&conf).arg("-g").arg("daemon off;"),
        ProxyKind::Haproxy => cmd.arg("-f").arg(&conf).arg("-db"),
    };
    let log = std::fs::File::create(dir.path().join("stderr.log")).map_err(|e| io("stderr.log", e))?;
    let child =
        cmd.stdin(Stdio::null()).stdout(Stdio::null()).stderr(log).spawn().map_err(|e| io(setup.kind.program(), e))?;
    let mut proxy = RunningProxy { child, dir, url: format!("http://{listen}{path}") };
    let start = Instant::now();
    while TcpStream::connect_timeout(&listen, Duration::from_millis(200)).is_err() {
        if let Ok(Some(status)) = proxy.child.try_wait() {
            let log = std::fs::read_to_string(proxy.dir.path().join("stderr.log")).unwrap_or_default();
            let last = log.lines().last().unwrap_or("").to_string();
            return Err(ProbeError::Protocol(format!("{} exited {status}: {last}", setup.name)));
        }
        if start.elapsed() > Duration::from_secs(10) {
            return Err(ProbeError::Timeout(format!("{} accepted no connection in 10 s", setup.name)));
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    Ok(proxy)
}

/// The probe scenarios run through a proxy: those whose exchanges a proxy carries differently
/// (a stream through it, cut at the probe's side and resumed, a standalone GET, a DELETE). The
/// others test the server alone and run in the SDK rows; the set keeps the CI run short.
pub const PROXY_SCENARIOS: &[&str] =
    &["basics", "cut-and-resume", "standalone", "standalone-cut", "delete-during-tool"];

/// One proxy × fixture server probed and mirrored.
#[derive(Debug)]
pub struct ProxyReality {
    /// `nginx/ts`.
    pub system: String,
    /// The probe through the proxy.
    pub report: ProbeReport,
    /// Each scenario's real verdict beside its mirror's through the proxy's lb profile.
    pub rows: Vec<Row>,
    /// Fields decided through the proxy that differ from the SDK's server profile: (field,
    /// probed, built-in); the proxy's doing unless the SDK rows differ too.
    pub differing: Vec<(String, String, String)>,
}

/// Starts `sdk`'s fixture server and `setup` in front of it, probes through the proxy
/// ([`PROXY_SCENARIOS`], the keep-alive measured) and mirrors each scenario with the SDK's
/// profile behind the setup's lb profile.
pub fn check_proxy(setup: &ProxySetup, sdk: Sdk, fixtures: &Path) -> Result<ProxyReality, ProbeError> {
    let server = FixtureServer::start(sdk, fixtures)?;
    let proxy = start_proxy(setup, &server.url)?;
    let opts =
        ProbeOptions { only: PROXY_SCENARIOS.iter().map(|s| s.to_string()).collect(), ..ProbeOptions::new(&proxy.url) };
    let report = probe_server(&opts)?;
    let lb = setup.lb()?;
    let rows = rows_adjusted(sdk, &report, &|s: &mut Scenario| s.lb = lb.clone());
    let profile = mcpsim_model::profiles::server(sdk.profile())
        .ok_or_else(|| ProbeError::Protocol(format!("no built-in profile {}", sdk.profile())))?;
    let differing = report
        .fingerprint
        .compare(&profile)
        .into_iter()
        .filter(|(f, probed, builtin)| !crate::probe::reality::check::close_enough(f, probed, builtin))
        .collect();
    drop(proxy);
    Ok(ProxyReality { system: format!("{}/{}", setup.name, sdk.name()), report, rows, differing })
}

/// Marks the generated proxy table in `docs/reality.md`.
pub const PROXIES_BEGIN: &str = "<!-- reality proxies: generated by `mcpsim probe reality --doc docs/reality.md` -->";
/// Ends it.
pub const PROXIES_END: &str = "<!-- end of reality proxies -->";

/// The proxies' agreement table (markdown): one row per scenario, and one per system for the
/// fields the probe decided differently from the SDK's profile through the proxy.
pub fn proxies_markdown(all: &[ProxyReality]) -> String {
    let mut out = String::from("| system | probe scenario | real verdict | simulated verdict | agree | note |\n");
    out.push_str("|---|---|---|---|---|---|\n");
    for p in all {
        for row in &p.rows {
            out.push_str(&agreement_row(&p.system, row));
        }
        let diffs: Vec<String> =
            p.differing.iter().map(|(f, probed, b)| format!("{f}: probed {probed}, server profile {b}")).collect();
        let note = if diffs.is_empty() {
            "every decided field equals the SDK's server profile".to_string()
        } else {
            format!("seen through the proxy, not the server's: {}", diffs.join("; "))
        };
        out.push_str(&format!(
            "| {} | (fields) | {} differ | server profile | n/a | {} |\n",
            p.system,
            diffs.len(),
            cell(&note)
        ));
    }
    out
}

/// Replaces (or appends) a generated part of `doc` between `begin` and `end`.
pub fn splice_between(doc: &str, begin: &str, end: &str, body: &str) -> String {
    match (doc.find(begin), doc.find(end)) {
        (Some(b), Some(e)) if e > b => format!("{}{begin}\n{body}{}", &doc[..b], &doc[e..]),
        _ => format!("{doc}\n{begin}\n{body}{end}\n"),
    }
}
