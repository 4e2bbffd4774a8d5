//! SVG plots of sweeps (plotters, SVG backend only).
//!
//! One varied key: a rate line per outcome with its Wilson 95% band, the predicted and the
//! measured boundary as vertical lines, and a legend. Two keys: a heatmap of one rate (the
//! loss-free rate) with a colour scale, and the predicted boundary curve drawn over it.
//!
//! The input is plain data ([`SweepPlot`]): the study that measured it converts into it, so this
//! module knows nothing of studies.

use crate::error::SimError;
use crate::report::artifacts::check_writable;
use plotters::coord::types::RangedCoordf64;
use plotters::coord::Shift;
use plotters::prelude::*;
use std::path::Path;

const WIDTH: u32 = 960;
const HEIGHT: u32 = 600;

/// A rate and its 95% interval, all in `[0, 1]`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Rate {
    pub rate: f64,
    pub lo: f64,
    pub hi: f64,
}

/// One varied key: its name and its values as shown, in grid order.
#[derive(Clone, Debug, PartialEq)]
pub struct PlotKey {
    pub key: String,
    pub values: Vec<String>,
    /// Each value's position on a numeric axis, when every value has one (durations in
    /// seconds); `None` puts the values side by side, labelled.
    pub numeric: Option<Vec<f64>>,
}

/// One line of a one-key plot: its legend and a rate per cell, in grid order.
#[derive(Clone, Debug, PartialEq)]
pub struct RateLine {
    pub name: String,
    pub rates: Vec<Rate>,
}

/// The boundaries of one line of cells.
#[derive(Clone, Debug, PartialEq)]
pub struct BoundaryMarks {
    /// The other key's value, in a two-key plot.
    pub fixed: Option<String>,
    /// The predicted boundary, on the `along` key's numeric axis.
    pub predicted: Option<f64>,
    /// The measured boundary: the value as shown and its position.
    pub measured: Option<(String, f64)>,
}

/// What a sweep plot shows.
#[derive(Clone, Debug, PartialEq)]
pub struct SweepPlot {
    pub title: String,
    /// One or two keys; with two, cells run through the second key fastest.
    pub keys: Vec<PlotKey>,
    /// One key: the lines to draw, in legend order.
    pub lines: Vec<RateLine>,
    /// Two keys: the rate each cell is coloured by, in grid order, and its name.
    pub heat: Vec<f64>,
    pub heat_label: String,
    /// Which key the boundaries run along.
    pub along: usize,
    pub boundaries: Vec<BoundaryMarks>,
}

/// Fails before any run unless `path` names an SVG file that can be written: the plot is only
/// ever SVG, so `x.png` is refused rather than filled with SVG.
pub fn check_path(path: &Path) -> Result<(), SimError> {
    if !path.extension().is_some_and(|e| e.eq_ignore_ascii_case("svg")) {
        return Err(SimError::Usage(format!(
            "--plot {}: plots are written as SVG only; give a file name ending in .svg",
            path.display()
        )));
    }
    check_writable(path)
}

/// Writes the plot to `path` as SVG.
pub fn plot_sweep(plot: &SweepPlot, path: &Path) -> Result<(), SimError> {
    let fail = |e: &dyn std::fmt::Display| SimError::Io { path: path.display().to_string(), problem: e.to_string() };
    if plot.keys.is_empty() || plot.keys.len() > 2 {
        return Err(SimError::Usage(format!("a sweep plot shows one or two keys, not {}", plot.keys.len())));
    }
    let root = SVGBackend::new(path, (WIDTH, HEIGHT)).into_drawing_area();
    root.fill(&WHITE).map_err(|e| fail(&e))?;
    let drawn = if plot.keys.len() == 1 { rate_lines(plot, &root) } else { heatmap(plot, &root) };
    drawn.map_err(|e| fail(&e))?;
    root.present().map_err(|e| fail(&e))
}

type Drawn = Result<(), DrawingAreaErrorKind<std::io::Error>>;
type Area<'a> = DrawingArea<SVGBackend<'a>, Shift>;
type Chart<'c, 'a> = ChartContext<'c, SVGBackend<'a>, Cartesian2d<RangedCoordf64, RangedCoordf64>>;

/// The colour of a line: fixed for the outcome names sweeps report, so a colour means the same
/// in every plot; any other name takes one by its position.
fn colour(name: &str, position: usize) -> RGBColor {
    match name {
        "loss-free" => RGBColor(0x1b, 0x9e, 0x3e),
        "clean-resume" => RGBColor(0x37, 0x7e, 0xb8),
        "gap-reported" => RGBColor(0xff, 0x7f, 0x00),
        "silent-loss" => RGBColor(0xe4, 0x1a, 0x1c),
        "duplicate-execution" => RGBColor(0x98, 0x4e, 0xa3),
        "unresolved" => RGBColor(0x66, 0x66, 0x66),
        "call-failed" => RGBColor(0xa6, 0x56, 0x28),
        "session-lost" => RGBColor(0xf7, 0x81, 0xbf),
        "other-violation" => RGBColor(0x00, 0x00, 0x00),
        _ => [RGBColor(0x1f, 0x77, 0xb4), RGBColor(0x8c, 0x56, 0x4b), RGBColor(0x17, 0xbe, 0xcf)][position % 3],
    }
}

/// An axis for the values of one key: numeric when every value is a number or a duration,
/// otherwise the values' positions, labelled with the values.
struct Axis {
    /// Each value's position on the axis, in grid order.
    xs: Vec<f64>,
    labels: Vec<String>,
    numeric: bool,
}

impl Axis {
    fn new(key: &PlotKey) -> Axis {
        let numbers = key.numeric.clone().filter(|xs| xs.len() == key.values.len());
        let numeric = numbers.is_some();
        let xs = numbers.unwrap_or_else(|| (0..key.values.len()).map(|i| i as f64).collect());
        Axis { xs, labels: key.values.clone(), numeric }
    }

    fn range(&self) -> std::ops::Range<f64> {
        let lo = self.xs.iter().copied().fold(f64::INFINITY, f64::min);
        let hi = self.xs.iter().copied().fold(f64::NEG_INFINITY, f64::max);
        let pad = if hi > lo { (hi - lo) * 0.03 } else { 0.5 };
        (lo - pad)..(hi + pad)
    }

    /// The label of a tick: the number itself, or the value at that position.
    fn label(&self, x: f64) -> String {
        if self.numeric {
            let r = (x * 100.0).round() / 100.0;
            return if r.fract() == 0.0 { format!("{r:.0}") } else { format!("{r}") };
        }
        let i = x.round();
        if (x - i).abs() < 1e-6 && i >= 0.0 {
            self.labels.get(i as usize).cloned().unwrap_or_default()
        } else {
            String::new()
        }
    }
}

fn rate_lines(plot: &SweepPlot, root: &Area<'_>) -> Drawn {
    let key = plot.keys[0].key.as_str();
    let axis = Axis::new(&plot.keys[0]);
    // Cells in axis order: the index of each cell, sorted by its position.
    let mut order: Vec<(f64, usize)> = axis.xs.iter().copied().zip(0..).collect();
    order.sort_by(|a, b| a.0.total_cmp(&b.0));
    let mut chart = ChartBuilder::on(root)
        .caption(&plot.title, ("sans-serif", 22))
        .margin(16)
        .x_label_area_size(48)
        .y_label_area_size(56)
        .build_cartesian_2d(axis.range(), -0.02f64..1.02f64)?;
    let n_labels = if axis.numeric { 10 } else { axis.labels.len() };
    chart
        .configure_mesh()
        .x_desc(key)
        .y_desc("rate of runs (Wilson 95% band)")
        .label_style(("sans-serif", 14))
        .axis_desc_style(("sans-serif", 16))
        .x_labels(n_labels)
        .x_label_formatter(&|x| axis.label(*x))
        .draw()?;
    for (position, series) in plot.lines.iter().enumerate() {
        let c = colour(&series.name, position);
        let points: Vec<(f64, Rate)> =
            order.iter().filter_map(|(x, i)| series.rates.get(*i).map(|r| (*x, *r))).collect();
        let band: Vec<(f64, f64)> =
            points.iter().map(|(x, r)| (*x, r.lo)).chain(points.iter().rev().map(|(x, r)| (*x, r.hi))).collect();
        chart.draw_series(std::iter::once(Polygon::new(band, c.mix(0.15).filled())))?;
        let line: Vec<(f64, f64)> = points.iter().map(|(x, r)| (*x, r.rate)).collect();
        chart
            .draw_series(LineSeries::new(line.clone(), c.stroke_width(2)))?
            .label(series.name.clone())
            .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], c.stroke_width(2)));
        chart.draw_series(line.into_iter().map(|p| Circle::new(p, 3, c.filled())))?;
    }
    if let Some(b) = plot.boundaries.first() {
        draw_boundary_lines(&mut chart, b)?;
    }
    chart
        .configure_series_labels()
        .position(SeriesLabelPosition::UpperLeft)
        .label_font(("sans-serif", 14))
        .background_style(WHITE.mix(0.85))
        .border_style(BLACK)
        .draw()?;
    Ok(())
}

/// The predicted (dashed) and measured (dotted) boundaries as vertical lines.
fn draw_boundary_lines(chart: &mut Chart<'_, '_>, b: &BoundaryMarks) -> Drawn {
    let lines = [
        (b.predicted, "predicted boundary", BLUE, 8u32),
        (b.measured.as_ref().map(|(_, x)| *x), "measured boundary", BLACK, 3u32),
    ];
    for (x, name, c, dash) in lines {
        let Some(x) = x else { continue };
        let style = c.stroke_width(2);
        chart
            .draw_series(DashedLineSeries::new(vec![(x, -0.02), (x, 1.02)], dash, 4, style))?
            .label(format!("{name} ({x})"))
            .legend(move |(lx, ly)| PathElement::new(vec![(lx, ly), (lx + 20, ly)], style));
    }
    Ok(())
}

/// Red at 0, yellow at ½, green at 1.
fn heat(rate: f64) -> RGBColor {
    let r = rate.clamp(0.0, 1.0);
    let mix = |a: f64, b: f64, t: f64| (a + (b - a) * t).round() as u8;
    if r < 0.5 {
        let t = r * 2.0;
        RGBColor(mix(215.0, 254.0, t), mix(48.0, 224.0, t), mix(39.0, 139.0, t))
    } else {
        let t = (r - 0.5) * 2.0;
        RGBColor(mix(254.0, 26.0, t), mix(224.0, 152.0, t), mix(139.0, 80.0, t))
    }
}

/// Where a value lies between the positions of a key's values (interpolated, extrapolated past
/// the ends by the nearest spacing).
fn position(values: &[f64], x: f64) -> Option<f64> {
    let mut sorted: Vec<(f64, usize)> = values.iter().copied().zip(0..).collect();
    sorted.sort_by(|a, b| a.0.total_cmp(&b.0));
    match sorted.as_slice() {
        [] => None,
        [(v, i)] => Some(*i as f64 + if x > *v { 0.5 } else { -0.5 }),
        _ => {
            let seg = sorted.windows(2).position(|w| x <= w[1].0).unwrap_or(sorted.len() - 2);
            let ((a, ia), (b, ib)) = (sorted[seg], sorted[seg + 1]);
            let t = if b > a { (x - a) / (b - a) } else { 0.0 };
            Some(ia as f64 + t * (ib as f64 - ia as f64))
        }
    }
}

fn heatmap(plot: &SweepPlot, root: &Area<'_>) -> Drawn {
    let (main, scale) = root.split_horizontally(WIDTH - 110);
    let (kx, ky) = (&plot.keys[0], &plot.keys[1]);
    let (nx, ny) = (kx.values.len(), ky.values.len().max(1));
    let mut chart = ChartBuilder::on(&main)
        .caption(&plot.title, ("sans-serif", 22))
        .margin(16)
        .x_label_area_size(48)
        .y_label_area_size(80)
        .build_cartesian_2d(-0.5f64..nx as f64 - 0.5, -0.5f64..ny as f64 - 0.5)?;
    let label = |values: &[String], x: f64| {
        let i = x.round();
        if (x - i).abs() < 1e-6 && i >= 0.0 {
            values.get(i as usize).cloned().unwrap_or_default()
        } else {
            String::new()
        }
    };
    chart
        .configure_mesh()
        .disable_mesh()
        .x_desc(kx.key.as_str())
        .y_desc(ky.key.as_str())
        .label_style(("sans-serif", 14))
        .axis_desc_style(("sans-serif", 16))
        .x_labels(nx.min(20))
        .y_labels(ny.min(20))
        .x_label_formatter(&|x| label(&kx.values, *x))
        .y_label_formatter(&|y| label(&ky.values, *y))
        .draw()?;
    chart.draw_series(plot.heat.iter().enumerate().map(|(k, rate)| {
        let (i, j) = ((k / ny) as f64, (k % ny) as f64);
        Rectangle::new([(i - 0.5, j - 0.5), (i + 0.5, j + 0.5)], heat(*rate).filled())
    }))?;
    draw_predicted_curve(plot, &mut chart)?;
    draw_measured_marks(plot, &mut chart)?;
    chart
        .configure_series_labels()
        .position(SeriesLabelPosition::UpperLeft)
        .label_font(("sans-serif", 14))
        .background_style(WHITE.mix(0.85))
        .border_style(BLACK)
        .draw()?;
    colour_scale(&scale, &plot.heat_label)
}

/// The predicted boundary of every line, joined, in the heatmap's cell coordinates.
fn draw_predicted_curve(plot: &SweepPlot, chart: &mut Chart<'_, '_>) -> Drawn {
    let along = plot.along.min(1);
    let Some(along_xs) = &plot.keys[along].numeric else {
        return Ok(());
    };
    let fixed_values = &plot.keys[1 - along].values;
    let mut curve = Vec::new();
    for b in &plot.boundaries {
        let (Some(fixed), Some(p)) = (&b.fixed, b.predicted) else { continue };
        let (Some(f), Some(a)) = (fixed_values.iter().position(|v| v == fixed), position(along_xs, p)) else {
            continue;
        };
        curve.push(if along == 1 { (f as f64, a) } else { (a, f as f64) });
    }
    if curve.is_empty() {
        return Ok(());
    }
    let style = BLUE.stroke_width(3);
    chart
        .draw_series(DashedLineSeries::new(curve.clone(), 10u32, 5u32, style))?
        .label("predicted boundary")
        .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], style));
    chart.draw_series(curve.into_iter().map(|p| Cross::new(p, 5, BLUE.stroke_width(2))))?;
    Ok(())
}

/// The measured boundary of every line: a ring on the first cell from which on all are safe.
fn draw_measured_marks(plot: &SweepPlot, chart: &mut Chart<'_, '_>) -> Drawn {
    let along = plot.along.min(1);
    let (along_values, fixed_values) = (&plot.keys[along].values, &plot.keys[1 - along].values);
    let marks: Vec<(f64, f64)> = plot
        .boundaries
        .iter()
        .filter_map(|b| {
            let f = fixed_values.iter().position(|v| Some(v) == b.fixed.as_ref())? as f64;
            let a = along_values.iter().position(|v| Some(v) == b.measured.as_ref().map(|(m, _)| m))? as f64;
            Some(if along == 1 { (f, a) } else { (a, f) })
        })
        .collect();
    if marks.is_empty() {
        return Ok(());
    }
    let style = BLACK.stroke_width(2);
    chart
        .draw_series(marks.into_iter().map(move |p| Circle::new(p, 7, style)))?
        .label("measured boundary")
        .legend(move |(x, y)| Circle::new((x + 10, y), 5, style));
    Ok(())
}

/// A vertical bar from red (0) to green (1), labelled with the rate's name.
fn colour_scale(area: &Area<'_>, label: &str) -> Drawn {
    let mut bar = ChartBuilder::on(area)
        .margin_top(60)
        .margin_bottom(64)
        .margin_right(8)
        .y_label_area_size(44)
        .build_cartesian_2d(0f64..1f64, 0f64..1f64)?;
    bar.configure_mesh()
        .disable_mesh()
        .disable_x_axis()
        .y_desc(label)
        .label_style(("sans-serif", 14))
        .axis_desc_style(("sans-serif", 16))
        .y_labels(6)
        .draw()?;
    let steps = 50;
    bar.draw_series((0..steps).map(|i| {
        let (lo, hi) = (i as f64 / steps as f64, (i + 1) as f64 / steps as f64);
        Rectangle::new([(0.0, lo), (1.0, hi)], heat((lo + hi) / 2.0).filled())
    }))?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rate(free: u64, n: u64) -> Rate {
        let p = free as f64 / n as f64;
        Rate { rate: p, lo: (p - 0.2).max(0.0), hi: (p + 0.2).min(1.0) }
    }

    fn key(name: &str, values: &[&str], numeric: Option<Vec<f64>>) -> PlotKey {
        PlotKey { key: name.into(), values: values.iter().map(|v| v.to_string()).collect(), numeric }
    }

    fn plot(keys: Vec<PlotKey>, lines: Vec<RateLine>, heat: Vec<f64>, boundaries: Vec<BoundaryMarks>) -> SweepPlot {
        SweepPlot {
            title: "reference × silent-head × chatty-tool: 10 seeds per cell".into(),
            keys,
            lines,
            heat,
            heat_label: "loss-free rate".into(),
            along: 1,
            boundaries,
        }
    }

    /// The text of every `<text>` element.
    fn texts(svg: &str) -> Vec<String> {
        svg.split("<text")
            .skip(1)
            .filter_map(|t| Some(t.split_once('>')?.1.split_once("</text>")?.0.trim().to_string()))
            .collect()
    }

    fn assert_texts(svg: &str, expected: &[&str]) {
        let found = texts(svg);
        for text in expected {
            assert!(found.iter().any(|t| t == text), "no text {text:?} in {found:?}");
        }
    }

    /// A fresh directory, removed when dropped (at the end of the test, also when it panics), and
    /// the path of `NAME.svg` in it.
    fn temp(name: &str) -> (tempfile::TempDir, std::path::PathBuf) {
        let dir = tempfile::Builder::new().prefix(&format!("mcpsim-plot-{name}-")).tempdir().unwrap();
        let path = dir.path().join(format!("{name}.svg"));
        (dir, path)
    }

    #[test]
    fn one_key_gives_rate_lines_with_bands_boundaries_and_a_legend() {
        let values = ["200", "225", "250", "275", "300"];
        let frees = [0, 2, 7, 10, 10];
        let lines = vec![
            RateLine { name: "silent-loss".into(), rates: frees.iter().map(|f| rate(10 - f, 10)).collect() },
            RateLine { name: "loss-free".into(), rates: frees.iter().map(|f| rate(*f, 10)).collect() },
        ];
        let k = key("server.retention", &values, Some(vec![200.0, 225.0, 250.0, 275.0, 300.0]));
        let b = BoundaryMarks { fixed: None, predicted: Some(271.0), measured: Some(("275".into(), 275.0)) };
        let (_dir, path) = temp("lines");
        plot_sweep(&SweepPlot { along: 0, ..plot(vec![k], lines, vec![], vec![b]) }, &path).unwrap();
        let svg = std::fs::read_to_string(&path).unwrap();
        assert!(svg.starts_with("<svg") && svg.trim_end().ends_with("</svg>"), "{}", &svg[..100.min(svg.len())]);
        assert_texts(
            &svg,
            &[
                "reference × silent-head × chatty-tool: 10 seeds per cell",
                "server.retention",
                "rate of runs (Wilson 95% band)",
                "loss-free",
                "silent-loss",
                "predicted boundary (271)",
                "measured boundary (275)",
                "260",
            ],
        );
        assert!(svg.contains("<polygon"), "Wilson bands are filled polygons");
    }

    #[test]
    fn words_as_values_get_a_labelled_axis() {
        let lines = vec![
            RateLine { name: "gap-reported".into(), rates: vec![rate(4, 4), rate(0, 4)] },
            RateLine { name: "silent-loss".into(), rates: vec![rate(0, 4), rate(4, 4)] },
        ];
        let k = key("server.unhonourable", &["410", "silent-head"], None);
        let b = BoundaryMarks { fixed: None, predicted: None, measured: None };
        let (_dir, path) = temp("words");
        plot_sweep(&SweepPlot { along: 0, ..plot(vec![k], lines, vec![], vec![b]) }, &path).unwrap();
        let svg = std::fs::read_to_string(&path).unwrap();
        assert_texts(&svg, &["410", "silent-head", "gap-reported", "silent-loss", "server.unhonourable"]);
    }

    #[test]
    fn two_keys_give_a_heatmap_with_a_colour_scale_and_the_predicted_curve() {
        let rates = ["1s", "500ms"];
        let counts = ["100", "200", "300", "400", "500", "600"];
        let mut heat_rates = Vec::new();
        let mut boundaries = Vec::new();
        for (i, r) in rates.iter().enumerate() {
            for j in 0..counts.len() {
                let safe_from = 3 + i;
                heat_rates.push(if j >= safe_from { 1.0 } else { j as f64 / 5.0 });
            }
            boundaries.push(BoundaryMarks {
                fixed: Some(r.to_string()),
                predicted: Some(271.0 * (i + 1) as f64),
                measured: Some((counts[3 + i].into(), (400 + 100 * i) as f64)),
            });
        }
        let keys = vec![
            key("tool.event_interval", &rates, Some(vec![1.0, 0.5])),
            key("server.retention", &counts, Some(vec![100.0, 200.0, 300.0, 400.0, 500.0, 600.0])),
        ];
        let (_dir, path) = temp("heat");
        plot_sweep(&plot(keys, vec![], heat_rates, boundaries), &path).unwrap();
        let svg = std::fs::read_to_string(&path).unwrap();
        let expected = [
            "tool.event_interval",
            "server.retention",
            "loss-free rate",
            "predicted boundary",
            "measured boundary",
            "500ms",
            "600",
        ];
        assert_texts(&svg, &expected);
        assert!(svg.matches("<rect").count() >= 12 + 50, "cells and colour scale");
    }

    #[test]
    fn only_svg_paths_are_accepted_and_checked_before_anything_runs() {
        let err = check_path(Path::new("/tmp/x.png")).unwrap_err();
        assert!(matches!(&err, SimError::Usage(m) if m.contains("x.png") && m.contains(".svg")), "{err}");
        assert!(matches!(check_path(Path::new("plot")), Err(SimError::Usage(_))));
        let tmp = tempfile::Builder::new().prefix("mcpsim-plot-paths-").tempdir().unwrap();
        let dir = tmp.path();
        let blocker = dir.join("file");
        std::fs::write(&blocker, "x").unwrap();
        assert!(matches!(check_path(&blocker.join("p.svg")), Err(SimError::Io { .. })));
        assert!(check_path(&dir.join("p.SVG")).is_ok());
        let bad = SweepPlot { keys: vec![], ..plot(vec![], vec![], vec![], vec![]) };
        assert!(matches!(plot_sweep(&bad, &dir.join("none.svg")), Err(SimError::Usage(_))));
    }

    #[test]
    fn positions_interpolate_between_grid_values() {
        assert_eq!(position(&[100.0, 200.0, 300.0], 250.0), Some(1.5));
        assert_eq!(position(&[300.0, 200.0, 100.0], 250.0), Some(0.5), "grid order, not value order");
        assert_eq!(position(&[100.0, 200.0], 400.0), Some(3.0));
        assert_eq!(position(&[], 1.0), None);
        assert_eq!(heat(0.0), RGBColor(215, 48, 39));
        assert_eq!(heat(1.0), RGBColor(26, 152, 80));
    }
}
