//! The chart: throughput and p99 latency against the number of hot keys, one line per
//! strategy, as SVG (no dependency), converted to PNG by `rsvg-convert` when installed.
//! [`draw_points`] draws the same two panels for any series (the batch benchmark's
//! throughput against the batch size).

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use crate::report::Row;

/// One colour per strategy, so that every line of the main chart has its own.
const COLORS: [&str; 12] = [
    "#d62728", "#1f77b4", "#2ca02c", "#17becf", "#9467bd", "#ff7f0e", "#8c564b", "#7f7f7f",
    "#e377c2", "#bcbd22", "#393b79", "#000000",
];
/// Legend entries per row.
const LEGEND_COLUMNS: usize = 6;
const WIDTH: f64 = 1200.0;
const HEIGHT: f64 = 580.0;
const TOP: f64 = 70.0;
const BOTTOM: f64 = 470.0;

/// One panel: where it sits and how it maps values.
struct Panel {
    left: f64,
    right: f64,
    log: bool,
    max: f64,
    min: f64,
}

impl Panel {
    fn y(&self, value: f64) -> f64 {
        let frac = if self.log {
            (value.max(self.min).log10() - self.min.log10()) / (self.max.log10() - self.min.log10())
        } else {
            value / self.max
        };
        BOTTOM - frac.clamp(0.0, 1.0) * (BOTTOM - TOP)
    }

    /// Grid values: six even steps, or each power of ten on a log scale.
    fn ticks(&self) -> Vec<f64> {
        if self.log {
            let mut t = Vec::new();
            let mut v = self.min;
            while v <= self.max * 1.0001 {
                t.push(v);
                v *= 10.0;
            }
            t
        } else {
            (0..=5).map(|i| self.max * f64::from(i) / 5.0).collect()
        }
    }

    fn x(&self, index: usize, count: usize) -> f64 {
        if count <= 1 {
            return (self.left + self.right) / 2.0;
        }
        self.left + 30.0 + index as f64 * (self.right - self.left - 60.0) / (count - 1) as f64
    }
}

/// A round axis maximum above `value`: 1, 2 or 5 times a power of ten.
fn nice(value: f64) -> f64 {
    let value = value.max(1e-9);
    let power = 10f64.powf(value.log10().floor());
    [1.0, 2.0, 5.0, 10.0]
        .into_iter()
        .map(|m| m * power)
        .find(|v| *v >= value)
        .unwrap_or(10.0 * power)
}

fn label(value: f64) -> String {
    if value >= 1000.0 {
        let thousands = value / 1000.0;
        if thousands.fract() == 0.0 {
            format!("{thousands:.0}k")
        } else {
            format!("{thousands:.1}k")
        }
    } else if value >= 1.0 {
        format!("{value:.0}")
    } else {
        format!("{value}")
    }
}

/// One point of a line: its series (the legend), x, throughput and p99.
#[derive(Debug, Clone)]
pub(crate) struct Point {
    pub(crate) series: String,
    pub(crate) x: i32,
    pub(crate) throughput: f64,
    pub(crate) p99_ms: f64,
}

/// The texts of the two panels and of the x axis.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Labels {
    pub(crate) throughput: &'static str,
    pub(crate) latency: &'static str,
    pub(crate) x: &'static str,
}

/// The main benchmark's labels.
const HOT_KEYS: Labels = Labels {
    throughput: "committed operations per second",
    latency: "p99 latency, ms (log scale)",
    x: "hot keys (more keys = less contention)",
};

/// Writes `<base>.svg` and, when possible, `<base>.png`; returns the PNG's path.
pub(crate) fn draw(rows: &[Row], title: &str, base: &Path) -> Result<Option<PathBuf>, String> {
    let points: Vec<Point> = rows
        .iter()
        .map(|r| Point {
            series: r.strategy.clone(),
            x: r.keys,
            throughput: r.ops_per_sec,
            p99_ms: r.p99_ms,
        })
        .collect();
    draw_points(&points, title, &HOT_KEYS, base)
}

/// [`draw`] for any series of points, with its own labels.
pub(crate) fn draw_points(
    rows: &[Point],
    title: &str,
    labels: &Labels,
    base: &Path,
) -> Result<Option<PathBuf>, String> {
    let svg_path = base.with_extension("svg");
    std::fs::write(&svg_path, svg(rows, title, labels))
        .map_err(|e| format!("{}: {e}", svg_path.display()))?;
    let png_path = base.with_extension("png");
    let converted = std::process::Command::new("rsvg-convert")
        .arg("-o")
        .arg(&png_path)
        .arg(&svg_path)
        .status();
    match converted {
        Ok(status) if status.success() => Ok(Some(png_path)),
        _ => Ok(None),
    }
}

/// The whole chart: the title, the two panels and the legend.
fn svg(rows: &[Point], title: &str, labels: &Labels) -> String {
    let mut keys: Vec<i32> = rows.iter().map(|r| r.x).collect();
    keys.sort_unstable();
    keys.dedup();
    let mut strategies: Vec<&str> = Vec::new();
    for row in rows {
        if !strategies.contains(&row.series.as_str()) {
            strategies.push(&row.series);
        }
    }
    let (throughput, latency) = panels(rows);
    let mut svg = String::new();
    let _ = write!(
        svg,
        r#"<svg xmlns="http://www.w3.org/2000/svg" width="{WIDTH}" height="{HEIGHT}" font-family="DejaVu Sans, Arial, sans-serif" font-size="13">
<rect width="100%" height="100%" fill="white"/>
<text x="{}" y="28" font-size="17" text-anchor="middle">{}</text>
"#,
        WIDTH / 2.0,
        escape(title)
    );
    for (panel, name) in [(&throughput, labels.throughput), (&latency, labels.latency)] {
        frame(&mut svg, panel, name, labels.x, &keys);
        for (s, strategy) in strategies.iter().enumerate() {
            line(
                &mut svg,
                panel,
                COLORS[s % COLORS.len()],
                strategy,
                &keys,
                rows,
            );
        }
    }
    legend(&mut svg, &strategies);
    svg.push_str("</svg>\n");
    svg
}

/// The throughput panel (linear) and the p99 latency panel (log scale).
fn panels(rows: &[Point]) -> (Panel, Panel) {
    let throughput = Panel {
        left: 90.0,
        right: 560.0,
        log: false,
        max: nice(rows.iter().map(|r| r.throughput).fold(0.0, f64::max)),
        min: 0.0,
    };
    let p99_max = nice(rows.iter().map(|r| r.p99_ms).fold(0.0, f64::max));
    let p99_min = 10f64.powf(
        rows.iter()
            .map(|r| r.p99_ms)
            .filter(|v| *v > 0.0)
            .fold(f64::INFINITY, f64::min)
            .max(1e-3)
            .log10()
            .floor(),
    );
    let latency = Panel {
        left: 680.0,
        right: 1150.0,
        log: true,
        max: p99_max.max(p99_min * 10.0),
        min: p99_min,
    };
    (throughput, latency)
}

/// A panel's box, title, axis label, value grid and key ticks.
fn frame(svg: &mut String, panel: &Panel, name: &str, x_label: &str, keys: &[i32]) {
    let _ = writeln!(
        svg,
        r##"<rect x="{l}" y="{TOP}" width="{w}" height="{h}" fill="none" stroke="#333"/>
<text x="{cx}" y="{ty}" font-size="15" text-anchor="middle">{name}</text>
<text x="{cx}" y="{xy}" text-anchor="middle">{x_label}</text>"##,
        l = panel.left,
        w = panel.right - panel.left,
        h = BOTTOM - TOP,
        cx = (panel.left + panel.right) / 2.0,
        ty = TOP - 12.0,
        xy = BOTTOM + 40.0,
    );
    for tick in panel.ticks() {
        let y = panel.y(tick);
        let _ = writeln!(
            svg,
            r##"<line x1="{l}" y1="{y}" x2="{r}" y2="{y}" stroke="#ddd"/><text x="{tx}" y="{ty}" text-anchor="end">{v}</text>"##,
            l = panel.left,
            r = panel.right,
            tx = panel.left - 6.0,
            ty = y + 4.0,
            v = label(tick)
        );
    }
    for (i, key) in keys.iter().enumerate() {
        let x = panel.x(i, keys.len());
        let _ = writeln!(
            svg,
            r##"<line x1="{x}" y1="{BOTTOM}" x2="{x}" y2="{b}" stroke="#333"/><text x="{x}" y="{ty}" text-anchor="middle">{key}</text>"##,
            b = BOTTOM + 5.0,
            ty = BOTTOM + 20.0
        );
    }
}

/// One strategy's line and points in a panel.
fn line(
    svg: &mut String,
    panel: &Panel,
    color: &str,
    strategy: &str,
    keys: &[i32],
    rows: &[Point],
) {
    let points: Vec<(f64, f64)> = keys
        .iter()
        .enumerate()
        .filter_map(|(i, key)| {
            let row = rows.iter().find(|r| r.series == strategy && r.x == *key)?;
            let value = if panel.log {
                row.p99_ms
            } else {
                row.throughput
            };
            Some((panel.x(i, keys.len()), panel.y(value)))
        })
        .collect();
    let path: Vec<String> = points
        .iter()
        .map(|(x, y)| format!("{x:.1},{y:.1}"))
        .collect();
    let _ = writeln!(
        svg,
        r#"<polyline points="{}" fill="none" stroke="{color}" stroke-width="2.5"/>"#,
        path.join(" ")
    );
    for (x, y) in points {
        let _ = writeln!(
            svg,
            r#"<circle cx="{x:.1}" cy="{y:.1}" r="3.5" fill="{color}"/>"#
        );
    }
}

/// The legend under the panels, [`LEGEND_COLUMNS`] entries per row.
fn legend(svg: &mut String, strategies: &[&str]) {
    for (s, strategy) in strategies.iter().enumerate() {
        let x = 90.0 + (s % LEGEND_COLUMNS) as f64 * 180.0;
        let y = HEIGHT - 34.0 + (s / LEGEND_COLUMNS) as f64 * 22.0;
        let _ = writeln!(
            svg,
            r#"<rect x="{x}" y="{ry}" width="16" height="4" fill="{c}"/><text x="{tx}" y="{y}">{name}</text>"#,
            ry = y - 6.0,
            c = COLORS[s % COLORS.len()],
            tx = x + 22.0,
            name = escape(strategy)
        );
    }
}

fn escape(text: &str) -> String {
    text.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
}

/// A grouped bar chart (one group per key count, one bar per series, each labelled with
/// its value and its ratio to the group's first bar), as `<base>.svg` and, when
/// possible, `<base>.png`: the async-against-blocking chart of the paired rounds.
pub(crate) fn bars(
    groups: &[(i32, Vec<(&str, f64)>)],
    title: &str,
    axis: &str,
    base: &Path,
) -> Result<Option<PathBuf>, String> {
    const W: f64 = 900.0;
    const H: f64 = 460.0;
    const LEFT: f64 = 90.0;
    const RIGHT: f64 = 870.0;
    const TOP_: f64 = 60.0;
    const BOTTOM_: f64 = 380.0;
    let max = nice(
        groups
            .iter()
            .flat_map(|(_, bars)| bars.iter().map(|(_, v)| *v))
            .filter(|v| v.is_finite())
            .fold(1.0, f64::max),
    );
    let y = |v: f64| BOTTOM_ - (v / max).clamp(0.0, 1.0) * (BOTTOM_ - TOP_);
    let mut svg = String::new();
    let _ = write!(
        svg,
        r#"<svg xmlns="http://www.w3.org/2000/svg" width="{W}" height="{H}" font-family="DejaVu Sans, Arial, sans-serif" font-size="13">
<rect width="100%" height="100%" fill="white"/>
<text x="{}" y="28" font-size="16" text-anchor="middle">{}</text>
<text x="20" y="{}" transform="rotate(-90 20 {})" text-anchor="middle">{}</text>
"#,
        W / 2.0,
        escape(title),
        (TOP_ + BOTTOM_) / 2.0,
        (TOP_ + BOTTOM_) / 2.0,
        escape(axis)
    );
    for i in 0..=5 {
        let v = max * f64::from(i) / 5.0;
        let _ = writeln!(
            svg,
            r##"<line x1="{LEFT}" x2="{RIGHT}" y1="{y0}" y2="{y0}" stroke="#ddd"/><text x="{tx}" y="{ty}" text-anchor="end">{}</text>"##,
            label(v),
            y0 = y(v),
            tx = LEFT - 6.0,
            ty = y(v) + 4.0
        );
    }
    let width = (RIGHT - LEFT) / groups.len().max(1) as f64;
    let mut series: Vec<&str> = Vec::new();
    for (g, (keys, values)) in groups.iter().enumerate() {
        let x0 = LEFT + g as f64 * width;
        let bar = width * 0.7 / values.len().max(1) as f64;
        let first = values.first().map_or(f64::NAN, |(_, v)| *v);
        for (b, (name, value)) in values.iter().enumerate() {
            let index = series.iter().position(|s| s == name).unwrap_or_else(|| {
                series.push(name);
                series.len() - 1
            });
            let x = x0 + width * 0.15 + b as f64 * bar;
            // The ratio to the group's first bar goes on a line of its own above the
            // value, so that the labels of neighbouring bars do not run into each other.
            let ratio = if b == 0 {
                String::new()
            } else {
                format!(
                    r#"<text x="{tx:.1}" y="{ry:.1}" text-anchor="middle" font-size="11">({:.2}x)</text>"#,
                    value / first,
                    tx = x + bar * 0.45,
                    ry = y(*value) - 18.0
                )
            };
            let _ = writeln!(
                svg,
                r#"<rect x="{x:.1}" y="{top:.1}" width="{w:.1}" height="{h:.1}" fill="{c}"/><text x="{tx:.1}" y="{ly:.1}" text-anchor="middle" font-size="11">{}</text>{ratio}"#,
                label(*value),
                top = y(*value),
                w = bar * 0.9,
                h = BOTTOM_ - y(*value),
                c = COLORS[index % COLORS.len()],
                tx = x + bar * 0.45,
                ly = y(*value) - 5.0
            );
        }
        let _ = writeln!(
            svg,
            r#"<text x="{:.1}" y="{}" text-anchor="middle">{keys} key{}</text>"#,
            x0 + width / 2.0,
            BOTTOM_ + 20.0,
            if *keys == 1 { "" } else { "s" }
        );
    }
    for (s, name) in series.iter().enumerate() {
        let x = LEFT + s as f64 * 220.0;
        let _ = writeln!(
            svg,
            r#"<rect x="{x}" y="{}" width="16" height="10" fill="{}"/><text x="{}" y="{}">{}</text>"#,
            H - 38.0,
            COLORS[s % COLORS.len()],
            x + 22.0,
            H - 29.0,
            escape(name)
        );
    }
    svg.push_str("</svg>\n");
    let svg_path = base.with_extension("svg");
    std::fs::write(&svg_path, svg).map_err(|e| format!("{}: {e}", svg_path.display()))?;
    let png_path = base.with_extension("png");
    let converted = std::process::Command::new("rsvg-convert")
        .arg("-o")
        .arg(&png_path)
        .arg(&svg_path)
        .status();
    match converted {
        Ok(status) if status.success() => Ok(Some(png_path)),
        _ => Ok(None),
    }
}
