//! The whole proxy half of `probe reality`: every proxy's defaults probed with each SDK fixture
//! behind it (`proxies::check_proxy`) and every configuration measured
//! ([`proxy_measure::measure`]), all at once.

use crate::probe::error::ProbeError;
use crate::probe::reality::proxies::{check_proxy, ProxyReality, CONFIGURATIONS, PROXIES};
use crate::probe::reality::proxy_measure::{self, Measured};
use crate::probe::reality::sdk::{FixtureServer, Sdk};
use std::path::Path;

/// Every proxy × `sdks` probed and mirrored, and every configuration measured in front of
/// `measured_behind`'s fixture, all at once (each its own fixture server and proxy): about the
/// time of the longest probe.
pub fn check_all(
    sdks: &[Sdk],
    measured_behind: Sdk,
    fixtures: &Path,
) -> Result<(Vec<ProxyReality>, Vec<Measured>), ProbeError> {
    for p in PROXIES {
        p.kind.installed().map_err(|problem| ProbeError::Io { path: p.kind.program().into(), problem })?;
    }
    let probes: Vec<_> = PROXIES
        .iter()
        .flat_map(|p| sdks.iter().map(move |&sdk| (p, sdk)))
        .map(|(p, sdk)| {
            let fixtures = fixtures.to_path_buf();
            std::thread::spawn(move || check_proxy(p, sdk, &fixtures))
        })
        .collect();
    let server = FixtureServer::start(measured_behind, fixtures)?;
    let measures: Vec<_> = CONFIGURATIONS
        .iter()
        .map(|setup| {
            let url = server.url.clone();
            std::thread::spawn(move || proxy_measure::measure(setup, &url))
        })
        .collect();
    let joined = |what: &str| ProbeError::Protocol(format!("the {what} thread panicked"));
    let mut measured = Vec::new();
    for h in measures {
        measured.extend(h.join().map_err(|_| joined("proxy measurement"))??);
    }
    drop(server);
    let mut all = Vec::new();
    for h in probes {
        all.push(h.join().map_err(|_| joined("proxy probe"))??);
    }
    Ok((all, measured))
}
