//! `mcpsim probe server --url URL`: probe a real server through a fault proxy.

use super::Exit;
use crate::error::SimError;
use crate::probe::{probe_server, verdict_table, ProbeOptions};
use std::path::PathBuf;
use std::time::Duration;

/// `probe server`'s optional arguments: the user's own tool for the long call (`--tool`,
/// `--args`, `--tool-duration`) and a proxy description to mirror the scenarios through (`--lb`).
#[derive(Clone, Debug, Default)]
pub struct ServerExtras {
    /// `--tool NAME`.
    pub tool: Option<String>,
    /// `--args JSON`.
    pub args: String,
    /// `--tool-duration`.
    pub tool_duration: Option<String>,
    /// `--lb NAME|FILE`.
    pub lb: Option<String>,
    /// `--direct URL`: the same server without the proxy, probed beside `--url`.
    pub direct: Option<String>,
}

/// Runs the probe, prints the table of verdicts, the fingerprint and where the files went.
/// Exit 0 no invariant violated, 1 one was, 2 bad input or the probe could not run.
pub fn cmd_probe_server(
    url: &str,
    allow_remote: bool,
    out: Option<PathBuf>,
    only: Vec<String>,
    scenario_timeout_s: u64,
    idle_bound: Option<String>,
    ServerExtras { tool, args, tool_duration, lb, direct }: ServerExtras,
) -> Result<Exit, SimError> {
    let lb = match lb.as_deref().map(|v| (v, crate::probe::reality::lb_mirror::lb_from_arg(v))) {
        None => None,
        Some((v, Ok(config))) => Some((v.to_string(), config)),
        Some((v, Err(e))) => {
            eprintln!("mcpsim probe: --lb {}: {}", crate::error::escape(v), crate::error::escape(&e));
            return Ok(Exit::BadInput);
        }
    };
    let tool = match tool {
        None => None,
        Some(name) => {
            let args: serde_json::Value = match serde_json::from_str(&args) {
                Ok(v @ serde_json::Value::Object(_)) => v,
                Ok(_) => {
                    eprintln!("mcpsim probe: --args must be a JSON object");
                    return Ok(Exit::BadInput);
                }
                Err(e) => {
                    eprintln!("mcpsim probe: --args: {}", crate::error::escape(&e.to_string()));
                    return Ok(Exit::BadInput);
                }
            };
            let duration = match tool_duration.as_deref().map(mcpsim_model::time::parse_duration) {
                None => None,
                Some(Ok(d)) => Some(d),
                Some(Err(e)) => {
                    eprintln!("mcpsim probe: --tool-duration: {e}");
                    return Ok(Exit::BadInput);
                }
            };
            Some(crate::probe::server::scenarios::UserTool { name, args, duration })
        }
    };
    let idle_bound = match idle_bound.as_deref().map(mcpsim_model::time::parse_duration) {
        None => None,
        Some(Ok(d)) if d >= Duration::from_secs(2) && d <= Duration::from_secs(3600) => Some(d),
        Some(Ok(d)) => {
            eprintln!("mcpsim probe: --idle-bound {d:?} is outside 2s..1h");
            return Ok(Exit::BadInput);
        }
        Some(Err(e)) => {
            eprintln!("mcpsim probe: --idle-bound: {e}");
            return Ok(Exit::BadInput);
        }
    };
    // idle-expiry runs for its bound and a few seconds more.
    let scenario_timeout = Duration::from_secs(scenario_timeout_s.clamp(5, 600))
        .max(idle_bound.map(|b| b + Duration::from_secs(30)).unwrap_or_default());
    let opts = ProbeOptions {
        url: url.to_string(),
        allow_remote,
        out_dir: Some(out.unwrap_or_else(|| PathBuf::from("probe-out"))),
        only,
        scenario_timeout,
        idle_bound,
        keep_alive_bound: Some(crate::probe::server::keepalive::KEEP_ALIVE_BOUND),
        tool,
        eras: true,
    };
    // --direct: the server alone, probed at the same time (its files under OUT/direct).
    let direct_probe = direct.map(|d| {
        let mut o = opts.clone();
        o.url = d.clone();
        o.out_dir = o.out_dir.map(|p| p.join("direct"));
        (d, std::thread::spawn(move || probe_server(&o)))
    });
    let report = match probe_server(&opts) {
        Ok(r) => r,
        Err(e) => {
            eprintln!("mcpsim probe: {}", crate::error::escape(&e.to_string()));
            return Ok(Exit::BadInput);
        }
    };
    let direct_report = match direct_probe.map(|(d, h)| (d, h.join())) {
        None => None,
        Some((d, Ok(Ok(r)))) => Some((d, r)),
        Some((d, Ok(Err(e)))) => {
            eprintln!("mcpsim probe: --direct {}: {}", crate::error::escape(&d), crate::error::escape(&e.to_string()));
            return Ok(Exit::BadInput);
        }
        Some((_, Err(_))) => return Err(SimError::Runtime("the --direct probe thread panicked".into())),
    };
    print!("{}", verdict_table(&report));
    // What sits on the path: a proxy's timeouts read as the server's.
    if let Ok(hints) =
        crate::probe::parse_target(url, allow_remote).and_then(|t| crate::probe::server::path::probe_path(&t))
    {
        if !hints.is_empty() {
            println!(
                "\nwarning: a proxy is on the path ({}): keep_alive_timeout, idle cuts and buffering below may be the proxy's, not the server's (docs/reality.md, 'Proxies'); probe the server directly to tell them apart",
                hints.join(", ")
            );
        }
    }
    println!();
    print!("{}", report.profile_toml);
    // Beside the built-in profile its event ids point at (the reference profile otherwise).
    let builtin = report.fingerprint.value("event_ids").map(|v| v.trim_matches('"').to_string());
    let builtin = builtin.as_deref().filter(|n| mcpsim_model::profiles::server(n).is_some()).unwrap_or("reference");
    if let Some(profile) = mcpsim_model::profiles::server(builtin) {
        println!("\ncompared with the built-in server profile {builtin:?}:");
        for (field, probed, theirs) in report.fingerprint.compare(&profile) {
            // As `probe reality` judges them: measured durations within their tolerance, a
            // keep-alive still open at the bound against any longer one.
            let same = crate::probe::reality::close_enough(&field, &probed, &theirs);
            let mark = if same { "same" } else { "DIFFERS" };
            println!("  {field:<28} probed {probed:<16} built-in {theirs:<16} {mark}");
        }
    }
    if let Some((d, direct)) = &direct_report {
        use crate::probe::server::path::{attribute, hop_entry, Owner};
        let all = attribute(&report.fingerprint, &direct.fingerprint);
        println!("\neach field through {url} and straight from {}:", crate::error::escape(d));
        for a in &all {
            let owner = match a.owner {
                Owner::Server => "the server's",
                Owner::Proxy => "the PROXY's",
                Owner::CannotTell => "cannot tell",
            };
            let show = |v: &Option<String>| v.clone().unwrap_or_else(|| "(undetermined)".into());
            println!("  {:<28} through {:<16} direct {:<16} {owner}", a.field, show(&a.through), show(&a.direct));
        }
        let entry = hop_entry(url, &all);
        println!("\n{entry}");
        if let Some(dir) = &opts.out_dir {
            let path = dir.join("proxy-hop.toml");
            std::fs::write(&path, &entry)
                .map_err(|e| SimError::Io { path: path.display().to_string(), problem: e.to_string() })?;
            println!(
                "the proxy's hop: {}; the server's own profile: {}",
                path.display(),
                dir.join("direct").join("server-profile.toml").display()
            );
        }
    }
    if let Some((name, config)) = &lb {
        let system = crate::probe::parse_target(url, allow_remote).map(|t| t.host).unwrap_or_default();
        println!("\nthe scenarios mirrored with the server profile {builtin:?}, through --lb {name}:");
        let rows = crate::probe::reality::lb_mirror::lb_rows(&system, builtin, &report, config);
        print!("{}", crate::probe::reality::lb_mirror::lb_markdown(&rows, name));
    }
    for s in &report.scenarios {
        if let Some(f) = &s.trace_file {
            println!("trace {}: {}", s.name, f.display());
        }
    }
    if let Some(f) = &report.profile_file {
        println!("profile: {}", f.display());
    }
    if report.scenarios.iter().any(|s| !s.violations.is_empty()) {
        Ok(Exit::Violated)
    } else {
        Ok(Exit::Clean)
    }
}

/// `mcpsim probe reality [--sdk ts,py,rust] [--doc docs/reality.md]`: starts each installed
/// SDK fixture server, probes it, mirrors every probe scenario in the simulator, prints the
/// agreement table and the profile fields found different, and rewrites the generated parts of
/// the doc. Exit 0 everything agrees or is explained, 1 a new unexplained difference, 2 a
/// fixture is missing or the probe could not run.
pub fn cmd_probe_reality(
    sdks: Vec<String>,
    doc: Option<PathBuf>,
    proxies_only: bool,
    lb: Option<String>,
) -> Result<Exit, SimError> {
    use crate::probe::reality::{self, FieldStatus, Sdk};
    let lb = match lb.as_deref().map(|v| (v, reality::lb_mirror::lb_from_arg(v))) {
        None => None,
        Some((v, Ok(config))) => Some((v.to_string(), config)),
        Some((v, Err(e))) => {
            eprintln!("mcpsim probe reality: --lb {}: {}", crate::error::escape(v), crate::error::escape(&e));
            return Ok(Exit::BadInput);
        }
    };
    let mut chosen = Vec::new();
    for name in if sdks.is_empty() { vec!["ts".into(), "py".into(), "rust".into()] } else { sdks } {
        match Sdk::parse(&name) {
            Some(s) => chosen.push(s),
            None => {
                eprintln!("mcpsim probe reality: no SDK {name:?} (known: ts, py, rust)");
                return Ok(Exit::BadInput);
            }
        }
    }
    let fixtures = reality::fixtures_dir();
    for sdk in &chosen {
        if let Err(why) = sdk.installed(&fixtures) {
            eprintln!("mcpsim probe reality: {why}");
            return Ok(Exit::BadInput);
        }
    }
    if proxies_only {
        return probe_reality_proxies(&chosen, doc);
    }
    // The proxies in front of the fixtures, when nginx and HAProxy are installed.
    let proxies_handle = {
        let (fixtures, chosen) = (fixtures.clone(), chosen.clone());
        let missing: Vec<String> = reality::proxies::PROXIES.iter().filter_map(|p| p.kind.installed().err()).collect();
        if !missing.is_empty() {
            eprintln!("mcpsim probe reality: no proxy rows: {}", missing.join("; "));
        }
        missing.is_empty().then(|| {
            std::thread::spawn(move || reality::proxy_check::check_all(&chosen, measured_behind(&chosen), &fixtures))
        })
    };
    // The variants (fixtures in other configurations) beside them, for the SDKs chosen.
    let variant_handle = {
        let (fixtures, chosen) = (fixtures.clone(), chosen.clone());
        std::thread::spawn(move || {
            reality::variants::VARIANTS
                .iter()
                .filter(|v| chosen.contains(&v.sdk))
                .map(|v| reality::variants::check_variant(v, &fixtures))
                .collect::<Result<Vec<_>, _>>()
        })
    };
    // The SDKs in parallel: each has its own server, proxy and runtime.
    let handles: Vec<_> = chosen
        .iter()
        .map(|&sdk| {
            let fixtures = fixtures.clone();
            std::thread::spawn(move || reality::check_sdk(sdk, &fixtures))
        })
        .collect();
    let mut all = Vec::new();
    for (sdk, h) in chosen.iter().zip(handles) {
        match h.join() {
            Ok(Ok(r)) => all.push(r),
            Ok(Err(e)) => {
                eprintln!("mcpsim probe reality: {}: {e}", sdk.name());
                return Ok(Exit::BadInput);
            }
            Err(_) => return Err(SimError::Runtime(format!("the {} probe thread panicked", sdk.name()))),
        }
    }
    print!("{}", reality::table_markdown(&all));
    println!();
    print!("{}", reality::fields_markdown(&all));
    println!();
    print!("{}", reality::keep_alive_markdown(&all));
    println!();
    if let Some((name, config)) = &lb {
        let rows: Vec<_> = all
            .iter()
            .flat_map(|r| reality::lb_mirror::lb_rows_of(r.sdk.name(), r.sdk.profile(), &r.rows, config))
            .collect();
        println!("the SDK scenarios mirrored through --lb {name}:");
        print!("{}", reality::lb_mirror::lb_markdown(&rows, name));
        println!();
    }
    let clients: Vec<_> = all.iter().flat_map(|r| r.clients.iter().cloned()).collect();
    print!("{}", crate::probe::reality::client::client_table_markdown(&clients));
    let variants = match variant_handle.join() {
        Ok(Ok(v)) => v,
        Ok(Err(e)) => {
            eprintln!("mcpsim probe reality: variants: {e}");
            return Ok(Exit::BadInput);
        }
        Err(_) => return Err(SimError::Runtime("the variants' probe thread panicked".into())),
    };
    println!();
    print!("{}", reality::variants::variants_markdown(&variants));
    let proxies = match proxies_handle.map(|h| h.join()) {
        None => None,
        Some(Ok(Ok(p))) => Some(p),
        Some(Ok(Err(e))) => {
            eprintln!("mcpsim probe reality: proxies: {e}");
            return Ok(Exit::BadInput);
        }
        Some(Err(_)) => return Err(SimError::Runtime("the proxies' probe thread panicked".into())),
    };
    if let Some((rows, measured)) = &proxies {
        println!();
        print!("{}", reality::proxy_measure::measured_markdown(measured));
        println!();
        print!("{}", reality::proxies::proxies_markdown(rows));
    }
    let proxies_disagree = proxies.as_ref().is_some_and(|(rows, measured)| proxies_disagree(rows, measured));
    if let Some(path) = doc {
        let old = std::fs::read_to_string(&path).unwrap_or_default();
        let new = reality::splice(&old, &all);
        let new = if variants.is_empty() { new } else { reality::variants::splice_variants(&new, &variants) };
        let new = match &proxies {
            Some((rows, measured)) => splice_proxies(&new, rows, measured),
            None => new,
        };
        std::fs::write(&path, new)
            .map_err(|e| SimError::Io { path: path.display().to_string(), problem: e.to_string() })?;
        println!("wrote {}", path.display());
    }
    let new_field = all
        .iter()
        .flat_map(|r| r.fields.iter().chain(&r.client_keep_alive).chain(r.client_reuse_after.as_ref().ok()))
        .any(|f| f.status == FieldStatus::New);
    let new_verdict =
        all.iter().flat_map(|r| &r.rows).chain(variants.iter().flat_map(|v| &v.rows)).any(|r| r.unexplained())
            || variants.iter().any(|v| !v.differing.is_empty())
            || all.iter().flat_map(|r| &r.clients).any(|r| r.unexplained());
    Ok(if new_field || new_verdict || proxies_disagree { Exit::Violated } else { Exit::Clean })
}

/// The fixture the proxy configurations are measured in front of: Python's when chosen.
fn measured_behind(chosen: &[crate::probe::reality::Sdk]) -> crate::probe::reality::Sdk {
    use crate::probe::reality::Sdk;
    if chosen.contains(&Sdk::Py) {
        Sdk::Py
    } else {
        chosen.first().copied().unwrap_or(Sdk::Py)
    }
}

fn proxies_disagree(
    rows: &[crate::probe::reality::proxies::ProxyReality],
    measured: &[crate::probe::reality::proxy_measure::Measured],
) -> bool {
    rows.iter().flat_map(|p| &p.rows).any(|r| r.unexplained()) || measured.iter().any(|m| m.real != m.model)
}

fn splice_proxies(
    doc: &str,
    rows: &[crate::probe::reality::proxies::ProxyReality],
    measured: &[crate::probe::reality::proxy_measure::Measured],
) -> String {
    use crate::probe::reality::{proxies, proxy_measure};
    let doc = proxies::splice_between(
        doc,
        proxy_measure::MEASURED_BEGIN,
        proxy_measure::MEASURED_END,
        &proxy_measure::measured_markdown(measured),
    );
    proxies::splice_between(&doc, proxies::PROXIES_BEGIN, proxies::PROXIES_END, &proxies::proxies_markdown(rows))
}

/// `probe reality --proxies-only`: the proxy rows and measurements alone.
fn probe_reality_proxies(chosen: &[crate::probe::reality::Sdk], doc: Option<PathBuf>) -> Result<Exit, SimError> {
    use crate::probe::reality;
    let fixtures = reality::fixtures_dir();
    let (rows, measured) = match reality::proxy_check::check_all(chosen, measured_behind(chosen), &fixtures) {
        Ok(r) => r,
        Err(e) => {
            eprintln!("mcpsim probe reality: proxies: {}", crate::error::escape(&e.to_string()));
            return Ok(Exit::BadInput);
        }
    };
    print!("{}", reality::proxy_measure::measured_markdown(&measured));
    println!();
    print!("{}", reality::proxies::proxies_markdown(&rows));
    if let Some(path) = doc {
        let old = std::fs::read_to_string(&path)
            .map_err(|e| SimError::Io { path: path.display().to_string(), problem: e.to_string() })?;
        std::fs::write(&path, splice_proxies(&old, &rows, &measured))
            .map_err(|e| SimError::Io { path: path.display().to_string(), problem: e.to_string() })?;
        println!("wrote {}", path.display());
    }
    Ok(if proxies_disagree(&rows, &measured) { Exit::Violated } else { Exit::Clean })
}

/// `mcpsim probe client -- COMMAND...`: runs the client command against the stand-in behind the
/// fault proxy once per probe run, prints what the server side saw, the verdicts and the client
/// profile, and compares the decided fields with the built-in profile of the same name, if any.
/// Exit 0 no invariant violated, 1 one was, 2 the probe could not run.
pub fn cmd_probe_client(
    command: Vec<String>,
    out: Option<PathBuf>,
    runs: Vec<String>,
    run_limit_s: u64,
    request_timeout_bound: Option<String>,
    name: String,
    compare_with: Option<String>,
) -> Result<Exit, SimError> {
    use crate::probe::client::runs::{
        client_field_agrees, compare, parse_request_timeout_bound, probe_client, run_table, ClientProbeOptions,
    };
    let mut opts = ClientProbeOptions::new(command);
    opts.out_dir = Some(out.unwrap_or_else(|| PathBuf::from("probe-out")));
    opts.only = runs;
    opts.run_limit = Duration::from_secs(run_limit_s.clamp(5, 600));
    opts.name = name;
    if let Some(text) = request_timeout_bound {
        match parse_request_timeout_bound(&text) {
            Ok(d) => opts.request_timeout_bound = Some(d),
            Err(e) => {
                eprintln!("mcpsim probe client: --request-timeout-bound {}", crate::error::escape(&e));
                return Ok(Exit::BadInput);
            }
        }
    }
    let report = match probe_client(&opts) {
        Ok(r) => r,
        Err(e) => {
            eprintln!("mcpsim probe client: {}", crate::error::escape(&e.to_string()));
            return Ok(Exit::BadInput);
        }
    };
    print!("{}", run_table(&report));
    println!();
    print!("{}", report.profile_toml);
    if let Some(builtin) = compare_with {
        match mcpsim_model::profiles::client(&builtin) {
            Some(profile) => {
                println!("\ncompared with the built-in client profile {builtin:?}:");
                for (field, probed, theirs) in compare(&report.fields, &profile) {
                    let known = crate::probe::client::runs::known_client_difference(&builtin, &field, &probed, &theirs);
                    let same = client_field_agrees(&report, &field, &probed, &theirs);
                    let mark = match (same, known) {
                        (true, _) => "same".to_string(),
                        (false, Some(k)) => format!("known difference: {}", k.why_not_changed),
                        (false, None) => "DIFFERS".to_string(),
                    };
                    println!("  {field:<28} probed {probed:<22} built-in {theirs:<22} {mark}");
                }
            }
            None => eprintln!("mcpsim probe client: no built-in client profile {builtin:?} to compare with"),
        }
    }
    for r in &report.runs {
        if let Some(f) = &r.trace_file {
            println!("trace {}: {}", r.name, f.display());
        }
    }
    if let Some(f) = &report.profile_file {
        println!("profile: {}", f.display());
    }
    if report.runs.iter().any(|r| !r.violations.is_empty()) {
        Ok(Exit::Violated)
    } else {
        Ok(Exit::Clean)
    }
}
