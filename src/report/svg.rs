//! SVG charts (plotters): what people would rather look at than read. The comparison chart
//! shows bytes per message stacked as payload and framing, and messages per second, one bar
//! per protocol.

use super::compare::{CompareInfo, Row};
use anyhow::{Result, anyhow};
use plotters::coord::Shift;
use plotters::coord::ranged1d::{SegmentValue, SegmentedCoord};
use plotters::coord::types::{RangedCoordf64, RangedCoordusize};
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};

const PAYLOAD: RGBColor = RGBColor(0x4c, 0x78, 0xa8);
const FRAMING: RGBColor = RGBColor(0xe4, 0x57, 0x56);
const SPEED: RGBColor = RGBColor(0x54, 0xa2, 0x4b);

fn err<E: std::fmt::Debug>(e: E) -> anyhow::Error {
    anyhow!("drawing the chart: {e:?}")
}

/// A chart of one bar per row: rows along x (labelled), values up to `max` along y.
type BarChart<'a, 'b> =
    ChartContext<'a, SVGBackend<'b>, Cartesian2d<SegmentedCoord<RangedCoordusize>, RangedCoordf64>>;

fn bar_chart<'a, 'b>(
    area: &'a DrawingArea<SVGBackend<'b>, plotters::coord::Shift>,
    caption: &str,
    labels: &[String],
    max: f64,
    y_desc: &str,
    y_format: &dyn Fn(&f64) -> String,
) -> Result<BarChart<'a, 'b>> {
    let n = labels.len().max(1);
    let mut chart = ChartBuilder::on(area)
        .caption(caption, ("sans-serif", 16))
        .margin(15)
        .x_label_area_size(70)
        .y_label_area_size(70)
        .build_cartesian_2d((0..n - 1).into_segmented(), 0f64..max)
        .map_err(err)?;
    let label = |v: &SegmentValue<usize>| match v {
        SegmentValue::CenterOf(i) | SegmentValue::Exact(i) => labels.get(*i).cloned().unwrap_or_default(),
        SegmentValue::Last => String::new(),
    };
    chart
        .configure_mesh()
        .disable_x_mesh()
        .light_line_style(TRANSPARENT)
        .x_labels(n)
        .x_label_formatter(&label)
        .x_label_style(("sans-serif", 12))
        .y_label_formatter(y_format)
        .y_desc(y_desc)
        .draw()
        .map_err(err)?;
    Ok(chart)
}

pub fn compare(info: &CompareInfo, rows: &[Row]) -> Result<String> {
    let mut svg = String::new();
    {
        let labels: Vec<String> = rows.iter().map(|r| r.label.clone()).collect();
        let root = SVGBackend::with_string(&mut svg, (1200, 560)).into_drawing_area();
        root.fill(&WHITE).map_err(err)?;
        let title = format!(
            "wirebench compare: {}-byte payload, {} connection(s), depth {}",
            info.setup.payload, info.setup.connections, info.setup.depth
        );
        let root = root.titled(&title, ("sans-serif", 22)).map_err(err)?;
        let (left, right) = root.split_horizontally(600);

        let max_bytes = rows.iter().map(|r| r.tx_per_msg() + r.rx_per_msg()).fold(1.0, f64::max) * 1.2;
        let mut chart =
            bar_chart(&left, "bytes per message, written + read", &labels, max_bytes, "bytes", &|v| {
                format!("{v:.0}")
            })?;
        let bar = |i: usize, from: f64, to: f64, color: RGBColor| {
            let mut r = Rectangle::new(
                [(SegmentValue::Exact(i), from), (SegmentValue::Exact(i + 1), to)],
                color.filled(),
            );
            r.set_margin(0, 0, 18, 18);
            r
        };
        chart
            .draw_series(
                rows.iter()
                    .enumerate()
                    .filter(|(_, r)| r.has_result())
                    .map(|(i, r)| bar(i, 0.0, r.payload_bytes(), PAYLOAD)),
            )
            .map_err(err)?
            .label("payload (both ways: an echo carries it twice)")
            .legend(|(x, y)| Rectangle::new([(x, y - 5), (x + 12, y + 5)], PAYLOAD.filled()));
        chart
            .draw_series(
                rows.iter()
                    .enumerate()
                    .filter(|(_, r)| r.has_result())
                    .map(|(i, r)| bar(i, r.payload_bytes(), r.tx_per_msg() + r.rx_per_msg(), FRAMING)),
            )
            .map_err(err)?
            .label("framing (tx + rx − payload)")
            .legend(|(x, y)| Rectangle::new([(x, y - 5), (x + 12, y + 5)], FRAMING.filled()));
        chart
            .draw_series(rows.iter().enumerate().map(|(i, r)| {
                Text::new(
                    if r.has_result() {
                        format!("{:.0}", r.tx_per_msg() + r.rx_per_msg())
                    } else {
                        "no result".into()
                    },
                    (SegmentValue::CenterOf(i), r.tx_per_msg() + r.rx_per_msg() + max_bytes * 0.01),
                    ("sans-serif", 13).into_font().color(&BLACK).pos(Pos::new(HPos::Center, VPos::Bottom)),
                )
            }))
            .map_err(err)?;
        chart
            .configure_series_labels()
            .position(SeriesLabelPosition::UpperRight)
            .background_style(WHITE.mix(0.9))
            .border_style(BLACK)
            .draw()
            .map_err(err)?;

        let max_rate = rows.iter().map(Row::msgs_per_sec).fold(1.0, f64::max) * 1.2;
        let mut chart =
            bar_chart(&right, "messages per second", &labels, max_rate, "msg/s", &|v| super::si(*v))?;
        chart
            .draw_series(rows.iter().enumerate().map(|(i, r)| bar(i, 0.0, r.msgs_per_sec(), SPEED)))
            .map_err(err)?;
        chart
            .draw_series(rows.iter().enumerate().map(|(i, r)| {
                Text::new(
                    super::si(r.msgs_per_sec()),
                    (SegmentValue::CenterOf(i), r.msgs_per_sec() + max_rate * 0.01),
                    ("sans-serif", 13).into_font().color(&BLACK).pos(Pos::new(HPos::Center, VPos::Bottom)),
                )
            }))
            .map_err(err)?;
        root.present().map_err(err)?;
    }
    Ok(svg)
}

/// A core-count axis label: whole numbers only (a one-step sweep's axis ran 0.5 … 1.5).
fn whole(v: &f64) -> String {
    if (v - v.round()).abs() < 1e-9 { format!("{v:.0}") } else { String::new() }
}

/// The sweep chart: ops/s against cores, and efficiency against cores.
pub fn sweep(info: &super::sweep::SweepInfo, steps: &[super::sweep::Step]) -> Result<String> {
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, (1100, 480)).into_drawing_area();
        root.fill(&WHITE).map_err(err)?;
        let root =
            root.titled(&format!("wirebench sweep of {}", info.what), ("sans-serif", 22)).map_err(err)?;
        let (left, right) = root.split_horizontally(550);
        let max_cores = steps.iter().map(|s| s.cores).max().unwrap_or(1) as f64;
        let first = steps.first();
        let points: Vec<(f64, f64, f64)> = steps
            .iter()
            .map(|s| (s.cores as f64, s.report.ops_per_sec(), 100.0 * first.map_or(1.0, |f| s.efficiency(f))))
            .collect();
        let max_rate = points.iter().map(|p| p.1).fold(1.0, f64::max) * 1.2;
        let rates = points.iter().map(|p| (p.0, p.1)).collect::<Vec<_>>();
        let rate_axis = Axis { caption: "ops/s against cores", max: max_rate, unit: "ops/s", width: 70 };
        against_cores(&left, rate_axis, max_cores, &rates, PAYLOAD, &|v| super::si(*v))?;
        let shares = points.iter().map(|p| (p.0, p.2)).collect::<Vec<_>>();
        let share_axis =
            Axis { caption: "efficiency (speedup / core ratio)", max: 120.0, unit: "%", width: 60 };
        against_cores(&right, share_axis, max_cores, &shares, FRAMING, &|v| format!("{v:.0}"))?;
        root.present().map_err(err)?;
    }
    Ok(svg)
}

/// A chart's value axis: its caption, top, unit and label width.
struct Axis {
    caption: &'static str,
    max: f64,
    unit: &'static str,
    width: u32,
}

/// One figure against cores: a line with a dot at each step.
fn against_cores(
    area: &DrawingArea<SVGBackend<'_>, Shift>,
    axis: Axis,
    max_cores: f64,
    points: &[(f64, f64)],
    colour: RGBColor,
    label: &dyn Fn(&f64) -> String,
) -> Result<()> {
    let mut chart = ChartBuilder::on(area)
        .caption(axis.caption, ("sans-serif", 16))
        .margin(15)
        .x_label_area_size(40)
        .y_label_area_size(axis.width)
        .build_cartesian_2d(0.5f64..max_cores + 0.5, 0f64..axis.max)
        .map_err(err)?;
    chart
        .configure_mesh()
        .light_line_style(TRANSPARENT)
        .x_desc("cores")
        .x_label_formatter(&whole)
        .y_desc(axis.unit)
        .y_label_formatter(label)
        .draw()
        .map_err(err)?;
    chart.draw_series(LineSeries::new(points.iter().copied(), colour.stroke_width(3))).map_err(err)?;
    chart.draw_series(points.iter().map(|&p| Circle::new(p, 5, colour.filled()))).map_err(err)?;
    Ok(())
}

/// One run in a [`plot`]: its name, latency histogram and, with `--report-every`, its
/// intervals as (start s, ops/s, p99 ms).
pub struct PlotRun {
    pub label: String,
    pub latency: hdrhistogram::Histogram<u64>,
    pub series: Vec<Point>,
    /// A merged result's load hosts, each with its own intervals: a thinner line each.
    pub hosts: Vec<(String, Vec<Point>)>,
}

/// An interval over time: (its start s, ops/s, p99 ms).
pub type Point = (f64, f64, f64);

impl PlotRun {
    /// A run as `plot` draws it: its latency histogram, and ops/s and p99 (ms) at the start of
    /// each of its `--report-every` intervals.
    pub fn of(label: &str, r: &crate::stats::result::RunResult) -> PlotRun {
        let series = r
            .series
            .as_ref()
            .map(|s| {
                s.intervals
                    .iter()
                    .map(|iv| {
                        let width = (iv.to_s - iv.from_s).max(1e-9);
                        (iv.from_s, iv.ops as f64 / width, iv.p99_us.unwrap_or(0.0) / 1e3)
                    })
                    .collect()
            })
            .unwrap_or_default();
        let hosts = if r.runs.len() > 1 {
            let points = |l: &crate::stats::result::RunLine| {
                l.intervals
                    .iter()
                    .map(|iv| (iv.from_s, iv.ops_per_sec, iv.p99_us.unwrap_or(0.0) / 1e3))
                    .collect()
            };
            r.runs.iter().filter(|l| !l.intervals.is_empty()).map(|l| (l.label.clone(), points(l))).collect()
        } else {
            Vec::new()
        };
        PlotRun { label: label.to_string(), latency: r.histograms.latency.0.clone(), series, hosts }
    }
}

/// A line of a plot: its label, colour and points.
type Line = (String, RGBColor, Vec<(f64, f64)>);

/// Colours of the runs in a plot, in order; the merged total is black.
const RUN_COLOURS: [RGBColor; 6] = [
    PAYLOAD,
    FRAMING,
    SPEED,
    RGBColor(0xb2, 0x79, 0xa2),
    RGBColor(0xf5, 0x85, 0x18),
    RGBColor(0x72, 0xb7, 0xb2),
];

/// Where percentile `p` sits on HdrHistogram's spectrum axis: log10(1 / (1 − p)), so 90 %,
/// 99 %, 99.9 % are equally spaced.
fn spectrum_x(p: f64) -> f64 {
    (1.0 / (1.0 - p).max(1e-9)).log10()
}

/// `wirebench plot`: the latency percentile spectrum of every run (and of their merge, when
/// there are several), and their throughput and p99 over time.
pub fn plot(runs: &[PlotRun], total: Option<&hdrhistogram::Histogram<u64>>) -> Result<String> {
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, (1200, 560)).into_drawing_area();
        root.fill(&WHITE).map_err(err)?;
        let root = root
            .titled("wirebench: latency by percentile, and over time", ("sans-serif", 22))
            .map_err(err)?;
        let (left, right) = root.split_horizontally(640);
        spectrum(&left, runs, total)?;
        over_time(&right, runs)?;
        root.present().map_err(err)?;
    }
    Ok(svg)
}

/// The percentile spectrum, a line per run (and the total), on a log axis.
fn spectrum(
    left: &DrawingArea<SVGBackend<'_>, Shift>,
    runs: &[PlotRun],
    total: Option<&hdrhistogram::Histogram<u64>>,
) -> Result<()> {
    // The spectrum, up to the percentile the largest run can show (1/count).
    let most = runs.iter().map(|r| r.latency.len()).chain(total.map(|t| t.len())).max().unwrap_or(1).max(2);
    let x_max = spectrum_x(1.0 - 1.0 / most as f64).clamp(1.0, 6.0).ceil();
    let lines: Vec<Line> = runs
        .iter()
        .enumerate()
        .map(|(i, r)| (r.label.clone(), RUN_COLOURS[i % RUN_COLOURS.len()], &r.latency))
        .chain(total.map(|t| ("total".to_string(), BLACK, t)))
        .map(|(label, colour, h)| {
            let points = (0..=(x_max * 20.0) as usize)
                .map(|step| {
                    let x = step as f64 / 20.0;
                    let p = 1.0 - 10f64.powf(-x);
                    (x, if h.is_empty() { 0.0 } else { h.value_at_quantile(p) as f64 / 1e6 })
                })
                .collect();
            (label, colour, points)
        })
        .collect();
    // A log axis: a linear one flattens everything below the tail (p50 of 0.1 ms beside a
    // max of 200 ms is a line on the floor).
    let values = || lines.iter().flat_map(|l| l.2.iter().map(|p| p.1)).filter(|v| *v > 0.0);
    let y_max = values().fold(0.001, f64::max) * 1.5;
    let y_min = (values().fold(f64::INFINITY, f64::min).min(y_max) / 1.5).max(1e-4);
    let mut chart = ChartBuilder::on(left)
        .caption("latency by percentile (ms, log scale)", ("sans-serif", 16))
        .margin(15)
        .x_label_area_size(40)
        .y_label_area_size(60)
        .build_cartesian_2d(0f64..x_max, (y_min..y_max).log_scale())
        .map_err(err)?;
    chart
        .configure_mesh()
        .light_line_style(TRANSPARENT)
        .x_desc("percentile")
        .y_desc("ms")
        .x_labels(x_max as usize + 1)
        .x_label_formatter(&|x| {
            let p = format!("{:.6}", 100.0 * (1.0 - 10f64.powf(-x)));
            format!("{}%", p.trim_end_matches('0').trim_end_matches('.'))
        })
        .draw()
        .map_err(err)?;
    for (label, colour, points) in &lines {
        chart
            .draw_series(LineSeries::new(
                points.iter().map(|p| (p.0, p.1.max(y_min))),
                colour.stroke_width(2),
            ))
            .map_err(err)?
            .label(label.clone())
            .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 18, y)], colour.stroke_width(3)));
    }
    chart
        .configure_series_labels()
        .position(SeriesLabelPosition::UpperLeft)
        .border_style(BLACK)
        .background_style(WHITE.mix(0.8))
        .draw()
        .map_err(err)?;
    Ok(())
}

/// Ops/s above, p99 below, over time: a line per run, and a thinner one per load host of a
/// merged run (named in a legend).
fn over_time(right: &DrawingArea<SVGBackend<'_>, Shift>, runs: &[PlotRun]) -> Result<()> {
    let (top, bottom) = right.split_vertically(270);
    // Every line: (label, colour, width, points); the hosts' colours after the runs'.
    let mut lines: Vec<(String, RGBColor, u32, &[Point])> = runs
        .iter()
        .enumerate()
        .map(|(i, r)| (r.label.clone(), RUN_COLOURS[i % RUN_COLOURS.len()], 2, &r.series[..]))
        .collect();
    let hosts =
        runs.iter().flat_map(|r| r.hosts.iter().map(move |(host, s)| (format!("{} · {host}", r.label), s)));
    for (k, (label, s)) in hosts.enumerate() {
        lines.push((label, RUN_COLOURS[(runs.len() + k) % RUN_COLOURS.len()], 1, &s[..]));
    }
    let legend = runs.iter().any(|r| !r.hosts.is_empty());
    let t_max = lines.iter().flat_map(|l| l.3.iter().map(|s| s.0)).fold(1.0, f64::max);
    for (area, caption, pick, unit) in
        [(&top, "ops/s over time", 1usize, "ops/s"), (&bottom, "p99 over time (ms)", 2usize, "ms")]
    {
        let value = |s: &(f64, f64, f64)| if pick == 1 { s.1 } else { s.2 };
        let v_max = lines.iter().flat_map(|l| l.3.iter().map(value)).fold(0.001, f64::max) * 1.2;
        let mut chart = ChartBuilder::on(area)
            .caption(caption, ("sans-serif", 14))
            .margin(10)
            .x_label_area_size(30)
            .y_label_area_size(60)
            .build_cartesian_2d(0f64..t_max, 0f64..v_max)
            .map_err(err)?;
        chart
            .configure_mesh()
            .light_line_style(TRANSPARENT)
            .x_desc("s")
            .y_desc(unit)
            .y_label_formatter(&|v| if pick == 1 { super::si(*v) } else { format!("{v:.2}") })
            .draw()
            .map_err(err)?;
        for (label, colour, width, points) in &lines {
            let (colour, width) = (*colour, *width);
            let drawn = chart
                .draw_series(LineSeries::new(
                    points.iter().map(|s| (s.0, value(s))),
                    colour.stroke_width(width),
                ))
                .map_err(err)?;
            if legend && pick == 1 {
                drawn.label(label.clone()).legend(move |(x, y)| {
                    PathElement::new(vec![(x, y), (x + 18, y)], colour.stroke_width(width + 1))
                });
            }
        }
        if legend && pick == 1 {
            chart
                .configure_series_labels()
                .position(SeriesLabelPosition::LowerRight)
                .border_style(BLACK)
                .background_style(WHITE.mix(0.8))
                .draw()
                .map_err(err)?;
        }
        if runs.iter().all(|r| r.series.is_empty()) {
            area.draw(&Text::new("no intervals: run with --report-every", (80, 120), ("sans-serif", 14)))
                .map_err(err)?;
        }
    }
    Ok(())
}
