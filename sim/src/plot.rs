//! SVG plots of sweeps.

use crate::error::SimError;
use crate::sweep::SweepReport;
use std::path::Path;

/// Renders a sweep as SVG.
pub fn plot_sweep(_report: &SweepReport, _path: &Path) -> Result<(), SimError> {
    Ok(())
}
