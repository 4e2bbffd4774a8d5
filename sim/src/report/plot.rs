//! SVG plots of sweeps (plotters, SVG backend only).
//!
//! One varied key: a rate line per outcome with its Wilson 95% band, the predicted and the
//! measured boundary as vertical lines, and a legend. Two keys: a heatmap of the loss-free rate
//! with a colour scale, and the predicted boundary curve drawn over it.

use crate::error::SimError;
use crate::studies::sweep::{numeric, Boundary, CellResult, Outcome, SweepReport};
use plotters::coord::types::RangedCoordf64;
use plotters::coord::Shift;
use plotters::prelude::*;
use std::path::Path;

const WIDTH: u32 = 960;
const HEIGHT: u32 = 600;

/// Writes the sweep's plot to `path` as SVG.
pub fn plot_sweep(report: &SweepReport, path: &Path) -> Result<(), SimError> {
    let fail = |e: &dyn std::fmt::Display| SimError::Io { path: path.display().to_string(), problem: e.to_string() };
    let root = SVGBackend::new(path, (WIDTH, HEIGHT)).into_drawing_area();
    root.fill(&WHITE).map_err(|e| fail(&e))?;
    let drawn = if report.varies.len() == 1 { rate_lines(report, &root) } else { heatmap(report, &root) };
    drawn.map_err(|e| fail(&e))?;
    root.present().map_err(|e| fail(&e))
}

type Drawn = Result<(), DrawingAreaErrorKind<std::io::Error>>;
type Area<'a> = DrawingArea<SVGBackend<'a>, Shift>;
type Chart<'c, 'a> = ChartContext<'c, SVGBackend<'a>, Cartesian2d<RangedCoordf64, RangedCoordf64>>;

/// `client × server × scenario, N seeds per cell`.
fn title(report: &SweepReport) -> String {
    format!("{} × {} × {}: {} seeds per cell", report.client, report.server, report.scenario, report.seeds)
}

fn colour(o: Outcome) -> RGBColor {
    match o {
        Outcome::LossFree => RGBColor(0x1b, 0x9e, 0x3e),
        Outcome::CleanResume => RGBColor(0x37, 0x7e, 0xb8),
        Outcome::GapReported => RGBColor(0xff, 0x7f, 0x00),
        Outcome::SilentLoss => RGBColor(0xe4, 0x1a, 0x1c),
        Outcome::DuplicateExecution => RGBColor(0x98, 0x4e, 0xa3),
        Outcome::Unresolved => RGBColor(0x66, 0x66, 0x66),
        Outcome::CallFailed => RGBColor(0xa6, 0x56, 0x28),
        Outcome::SessionLost => RGBColor(0xf7, 0x81, 0xbf),
        Outcome::OtherViolation => RGBColor(0x00, 0x00, 0x00),
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
    fn new(values: &[String]) -> Axis {
        let numbers: Option<Vec<f64>> = values.iter().map(|v| numeric(v)).collect();
        let numeric = numbers.is_some();
        let xs = numbers.unwrap_or_else(|| (0..values.len()).map(|i| i as f64).collect());
        Axis { xs, labels: values.to_vec(), numeric }
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

/// The outcomes worth a line: loss-free always, the others where any run had them.
fn plotted_outcomes(cells: &[CellResult]) -> Vec<Outcome> {
    Outcome::ALL.into_iter().filter(|o| *o == Outcome::LossFree || cells.iter().any(|c| c.count(*o) > 0)).collect()
}

fn rate_lines(report: &SweepReport, root: &Area<'_>) -> Drawn {
    let key = report.varies[0].key;
    let axis = Axis::new(&report.varies[0].values);
    let mut points: Vec<(f64, &CellResult)> = axis.xs.iter().copied().zip(&report.cells).collect();
    points.sort_by(|a, b| a.0.total_cmp(&b.0));
    let mut chart = ChartBuilder::on(root)
        .caption(title(report), ("sans-serif", 22))
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
    for o in plotted_outcomes(&report.cells) {
        let c = colour(o);
        let band: Vec<(f64, f64)> = points
            .iter()
            .map(|(x, cell)| (*x, cell.interval(o).0))
            .chain(points.iter().rev().map(|(x, cell)| (*x, cell.interval(o).1)))
            .collect();
        chart.draw_series(std::iter::once(Polygon::new(band, c.mix(0.15).filled())))?;
        let line: Vec<(f64, f64)> = points.iter().map(|(x, cell)| (*x, cell.rate(o))).collect();
        chart
            .draw_series(LineSeries::new(line.clone(), c.stroke_width(2)))?
            .label(o.name())
            .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], c.stroke_width(2)));
        chart.draw_series(line.into_iter().map(|p| Circle::new(p, 3, c.filled())))?;
    }
    if let Some(b) = report.boundaries.first() {
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
fn draw_boundary_lines(chart: &mut Chart<'_, '_>, b: &Boundary) -> Drawn {
    let lines = [
        (b.predicted.as_ref().map(|p| p.minimal), "predicted boundary", BLUE, 8u32),
        (b.measured.as_ref().map(|m| m.x), "measured boundary", BLACK, 3u32),
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

fn heatmap(report: &SweepReport, root: &Area<'_>) -> Drawn {
    let (main, scale) = root.split_horizontally(WIDTH - 110);
    let (kx, ky) = (&report.varies[0], &report.varies[1]);
    let (nx, ny) = (kx.values.len(), ky.values.len());
    let mut chart = ChartBuilder::on(&main)
        .caption(title(report), ("sans-serif", 22))
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
        .x_desc(kx.key)
        .y_desc(ky.key)
        .label_style(("sans-serif", 14))
        .axis_desc_style(("sans-serif", 16))
        .x_labels(nx.min(20))
        .y_labels(ny.min(20))
        .x_label_formatter(&|x| label(&kx.values, *x))
        .y_label_formatter(&|y| label(&ky.values, *y))
        .draw()?;
    chart.draw_series(report.cells.iter().enumerate().map(|(k, cell)| {
        let (i, j) = ((k / ny) as f64, (k % ny) as f64);
        Rectangle::new([(i - 0.5, j - 0.5), (i + 0.5, j + 0.5)], heat(cell.rate(Outcome::LossFree)).filled())
    }))?;
    draw_predicted_curve(report, &mut chart)?;
    draw_measured_marks(report, &mut chart)?;
    chart
        .configure_series_labels()
        .position(SeriesLabelPosition::UpperLeft)
        .label_font(("sans-serif", 14))
        .background_style(WHITE.mix(0.85))
        .border_style(BLACK)
        .draw()?;
    colour_scale(&scale)
}

/// The predicted boundary of every line, joined, in the heatmap's cell coordinates.
fn draw_predicted_curve(report: &SweepReport, chart: &mut Chart<'_, '_>) -> Drawn {
    let along = report.along;
    let Some(along_xs) = report.varies[along].values.iter().map(|v| numeric(v)).collect::<Option<Vec<f64>>>() else {
        return Ok(());
    };
    let fixed_values = &report.varies[1 - along].values;
    let mut curve = Vec::new();
    for b in &report.boundaries {
        let (Some((_, fixed)), Some(p)) = (&b.fixed, &b.predicted) else { continue };
        let (Some(f), Some(a)) = (fixed_values.iter().position(|v| v == fixed), position(&along_xs, p.minimal)) else {
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
fn draw_measured_marks(report: &SweepReport, chart: &mut Chart<'_, '_>) -> Drawn {
    let along = report.along;
    let (along_values, fixed_values) = (&report.varies[along].values, &report.varies[1 - along].values);
    let marks: Vec<(f64, f64)> = report
        .boundaries
        .iter()
        .filter_map(|b| {
            let f = fixed_values.iter().position(|v| Some(v) == b.fixed.as_ref().map(|(_, v)| v))? as f64;
            let a = along_values.iter().position(|v| Some(v) == b.measured.as_ref().map(|m| &m.value))? as f64;
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

/// A vertical bar from red (0) to green (1), labelled "loss-free rate".
fn colour_scale(area: &Area<'_>) -> Drawn {
    let mut bar = ChartBuilder::on(area)
        .margin_top(60)
        .margin_bottom(64)
        .margin_right(8)
        .y_label_area_size(44)
        .build_cartesian_2d(0f64..1f64, 0f64..1f64)?;
    bar.configure_mesh()
        .disable_mesh()
        .disable_x_axis()
        .y_desc("loss-free rate")
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
    use crate::studies::advise::Prediction;
    use crate::studies::sweep::{Measured, RunClass, Vary};
    use std::collections::BTreeSet;

    fn cell(values: &[&str], free: u64, lossy: Outcome, n: u64) -> CellResult {
        let mut c = CellResult::new(values.iter().map(|v| v.to_string()).collect());
        for i in 0..n {
            let outcome = if i < free { Outcome::LossFree } else { lossy };
            c.add(&RunClass { outcomes: BTreeSet::from([outcome]), violations: BTreeSet::new() }, || "r".into());
        }
        c
    }

    fn report(varies: Vec<Vary>, cells: Vec<CellResult>, along: usize, boundaries: Vec<Boundary>) -> SweepReport {
        SweepReport {
            client: "reference".into(),
            server: "silent-head".into(),
            scenario: "chatty-tool".into(),
            seeds: 10,
            threshold: 1.0,
            varies,
            cells,
            resumed: 0,
            along,
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

    fn temp(name: &str) -> std::path::PathBuf {
        std::env::temp_dir().join(format!("mcpsim-plot-{name}-{}.svg", std::process::id()))
    }

    fn prediction(minimal: f64) -> Option<Prediction> {
        Some(Prediction { key: "server.retention", exceed: minimal - 1.0, minimal })
    }

    #[test]
    fn one_key_gives_rate_lines_with_bands_boundaries_and_a_legend() {
        let values = ["200", "225", "250", "275", "300"];
        let cells: Vec<CellResult> =
            values.iter().zip([0, 2, 7, 10, 10]).map(|(v, free)| cell(&[v], free, Outcome::SilentLoss, 10)).collect();
        let vary =
            Vary { key: "server.retention", values: values.iter().map(|v| v.to_string()).collect(), step: Some(25.0) };
        let measured =
            Measured { value: "275".into(), x: 275.0, loss_free: 10, n: 10, interval: (0.72, 1.0), whole_line: false };
        let b = Boundary {
            fixed: None,
            along: "server.retention",
            predicted: prediction(271.0),
            unpredicted: None,
            measured: Some(measured),
            steps_apart: Some(0.16),
        };
        let path = temp("lines");
        plot_sweep(&report(vec![vary], cells, 0, vec![b]), &path).unwrap();
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
        assert!(!texts(&svg).contains(&"gap-reported".to_string()), "outcomes no run had get no line");
        assert!(svg.contains("<polygon"), "Wilson bands are filled polygons");
        let _ = std::fs::remove_file(path);
    }

    #[test]
    fn words_as_values_get_a_labelled_axis() {
        let values = ["410", "silent-head"];
        let cells = vec![cell(&["410"], 0, Outcome::GapReported, 4), cell(&["silent-head"], 0, Outcome::SilentLoss, 4)];
        let vary =
            Vary { key: "server.unhonourable", values: values.iter().map(|v| v.to_string()).collect(), step: None };
        let b = Boundary {
            fixed: None,
            along: "server.unhonourable",
            predicted: None,
            unpredicted: None,
            measured: None,
            steps_apart: None,
        };
        let path = temp("words");
        plot_sweep(&report(vec![vary], cells, 0, vec![b]), &path).unwrap();
        let svg = std::fs::read_to_string(&path).unwrap();
        assert_texts(&svg, &["410", "silent-head", "gap-reported", "silent-loss", "server.unhonourable"]);
        let _ = std::fs::remove_file(path);
    }

    #[test]
    fn two_keys_give_a_heatmap_with_a_colour_scale_and_the_predicted_curve() {
        let rates = ["1s", "500ms"];
        let counts = ["100", "200", "300", "400", "500", "600"];
        let mut cells = Vec::new();
        let mut boundaries = Vec::new();
        for (i, r) in rates.iter().enumerate() {
            for (j, c) in counts.iter().enumerate() {
                let safe_from = 3 + i;
                cells.push(cell(&[r, c], if j >= safe_from { 5 } else { j as u64 }, Outcome::GapReported, 5));
            }
            let b = Boundary {
                fixed: Some(("tool.event_interval", r.to_string())),
                along: "server.retention",
                predicted: prediction(271.0 * (i + 1) as f64),
                unpredicted: None,
                measured: Some(Measured {
                    value: counts[3 + i].into(),
                    x: (400 + 100 * i) as f64,
                    loss_free: 5,
                    n: 5,
                    interval: (0.57, 1.0),
                    whole_line: false,
                }),
                steps_apart: None,
            };
            boundaries.push(b);
        }
        let varies = vec![
            Vary { key: "tool.event_interval", values: rates.iter().map(|v| v.to_string()).collect(), step: None },
            Vary { key: "server.retention", values: counts.iter().map(|v| v.to_string()).collect(), step: Some(100.0) },
        ];
        let path = temp("heat");
        plot_sweep(&report(varies, cells, 1, boundaries), &path).unwrap();
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
        let _ = std::fs::remove_file(path);
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
