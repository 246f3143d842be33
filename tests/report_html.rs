//! `bench --html` and `wirebench report`: one self-contained page per result set, its figures
//! the JSON's (checked in the page as Chromium renders it), its charts drawn, nothing fetched.

mod common;
use common::*;
use std::path::{Path, PathBuf};
use std::process::Command;

fn wirebench(args: &[&str]) {
    let out = Command::new(env!("CARGO_BIN_EXE_wirebench")).args(args).output().expect("binary runs");
    assert!(out.status.success(), "{args:?}: {}", String::from_utf8_lossy(&out.stderr));
}

/// Two runs against `serve http`, each with `--json` and `--html`, and the page of both.
fn two_runs(dir: &Path) -> (Vec<serde_json::Value>, PathBuf, PathBuf) {
    std::fs::create_dir_all(dir).unwrap();
    let server = start_builtin("http");
    let url = format!("http://{}/", server.addrs[0]);
    let cpu = client_cpu().to_string();
    let mut results = Vec::new();
    for (name, c) in [("a", "2"), ("b", "4")] {
        let (json, html) = (dir.join(format!("{name}.json")), dir.join(format!("{name}.html")));
        wirebench(&[
            "bench",
            &url,
            "-c",
            c,
            "-d",
            "1s",
            "--report-every",
            "250ms",
            "--label",
            name,
            "--cores",
            &cpu,
            "--json",
            json.to_str().unwrap(),
            "--html",
            html.to_str().unwrap(),
        ]);
        results.push(serde_json::from_slice(&std::fs::read(&json).unwrap()).unwrap());
    }
    server.stop().unwrap();
    let both = dir.join("both.html");
    let (a, b) = (dir.join("a.json"), dir.join("b.json"));
    wirebench(&["report", a.to_str().unwrap(), b.to_str().unwrap(), "--html", both.to_str().unwrap()]);
    (results, dir.join("a.html"), both)
}

/// `<td data-k="KEY" …>TEXT</td>` of the row of run `run` in the summary table.
fn cell(html: &str, run: usize, key: &str) -> String {
    let row = html.split(&format!("<tr data-run=\"{run}\">")).nth(1).expect("the run's row");
    let row = &row[..row.find("</tr>").unwrap()];
    let at = row.find(&format!("data-k=\"{key}\"")).unwrap_or_else(|| panic!("no {key}"));
    let text = &row[at..];
    let text = &text[text.find('>').unwrap() + 1..];
    text[..text.find('<').unwrap()].to_string()
}

/// A field of the JSON by a dotted path.
fn field<'a>(v: &'a serde_json::Value, path: &str) -> &'a serde_json::Value {
    path.split('.').fold(v, |v, k| &v[k])
}

#[test]
fn bench_and_report_write_pages_with_the_jsons_figures() {
    let dir = std::env::temp_dir().join(format!("wirebench-html-{}", free_port()));
    let (results, one, both) = two_runs(&dir);
    for (page, runs) in
        [(std::fs::read_to_string(&one).unwrap(), 1), (std::fs::read_to_string(&both).unwrap(), 2)]
    {
        assert!(page.starts_with("<!DOCTYPE html>") && page.contains("<svg"));
        for (i, r) in results.iter().take(runs).enumerate() {
            assert_eq!(cell(&page, i, "ops"), field(r, "ops").to_string());
            assert_eq!(cell(&page, i, "failed.total"), field(r, "failed.total").to_string());
            let tx = format!("{:.2}", field(r, "bytes.tx_per_op").as_f64().unwrap());
            assert_eq!(cell(&page, i, "bytes.tx_per_op"), tx);
            assert_eq!(cell(&page, i, "audit"), "match");
        }
    }
}

/// `merge` of the two runs, then `report --html` of the merged result: a row per load host
/// (its figures the host's own JSON's) and a line per host in the charts over time, named in
/// their legend — the merged JSON carries each host's intervals.
#[test]
fn a_merged_result_draws_a_line_per_load_host() {
    let dir = std::env::temp_dir().join(format!("wirebench-html-merged-{}", free_port()));
    let (results, _, _) = two_runs(&dir);
    let (a, b, merged, page) =
        (dir.join("a.json"), dir.join("b.json"), dir.join("m.json"), dir.join("m.html"));
    let path = |p: &Path| p.to_str().unwrap().to_string();
    wirebench(&["merge", &path(&a), &path(&b), "--json", &path(&merged), "--force"]);
    let m: serde_json::Value = serde_json::from_slice(&std::fs::read(&merged).unwrap()).unwrap();
    for (i, r) in results.iter().enumerate() {
        let line = &m["runs"][i];
        assert_eq!(line["ops"], r["ops"]);
        let intervals = line["intervals"].as_array().expect("each host's intervals");
        let hosts_ops: f64 = intervals.iter().map(|iv| iv["ops_per_sec"].as_f64().unwrap()).sum();
        assert_eq!(intervals.len(), r["series"]["intervals"].as_array().unwrap().len());
        assert!(hosts_ops > 0.0, "{line}");
    }
    wirebench(&["report", &path(&merged), "--html", &path(&page)]);
    let html = std::fs::read_to_string(&page).unwrap();
    for (i, r) in results.iter().enumerate() {
        let row = html.split(&format!("<tr data-host=\"{i}\">")).nth(1).expect("a row per host");
        assert!(row.contains(&format!("<td data-k=\"ops\">{}</td>", r["ops"])), "{row}");
        let label = r["label"].as_str().unwrap();
        assert!(html.contains(&format!(" · {label}\n</text>")), "host {label}'s line in the legend");
    }
}

/// The page as Chromium renders it from disk with no network (every host unresolvable, a
/// proxy that refuses): the DOM holds the JSON's figures, and the screenshot is not blank.
#[test]
#[ignore = "needs chromium: run by .ci/run"]
fn the_page_renders_from_disk_with_no_network() {
    let dir = std::env::temp_dir().join(format!("wirebench-html-render-{}", free_port()));
    let (results, _, both) = two_runs(&dir);
    let chromium = which("chromium").or_else(|| which("chromium-browser")).expect("chromium");
    let run = |extra: &[String]| {
        let profile = dir.join(format!("profile-{}", extra.len()));
        Command::new(&chromium)
            .args([
                "--headless",
                "--no-sandbox",
                "--disable-gpu",
                "--no-first-run",
                "--disable-background-networking",
            ])
            .args([
                "--proxy-server=127.0.0.1:9",
                "--host-resolver-rules=MAP * ~NOTFOUND",
                "--window-size=1280,2000",
            ])
            .arg(format!("--user-data-dir={}", profile.display()))
            .args(extra)
            .arg(format!("file://{}", both.display()))
            .output()
            .expect("chromium runs")
    };
    let dom = String::from_utf8_lossy(&run(&["--dump-dom".to_string()]).stdout).to_string();
    for (i, r) in results.iter().enumerate() {
        assert_eq!(cell(&dom, i, "ops"), field(r, "ops").to_string(), "{dom}");
        assert_eq!(
            cell(&dom, i, "cpu_us_per_op"),
            format!("{:.2}us", field(r, "cpu_us_per_op").as_f64().unwrap())
        );
    }
    let png = dir.join("page.png");
    assert!(run(&[format!("--screenshot={}", png.display())]).status.success());
    let (pixels, _) = pixels(&png);
    let inked = pixels.iter().filter(|p| !near(p, [255, 255, 255])).count();
    assert!(inked > pixels.len() / 50, "the page is drawn: {inked} of {} pixels", pixels.len());
    keep_screenshot(&png, "report-html.png");
}

/// `report` on a comparison, a sweep and a search: each one's own table (its rows, its steps,
/// its answer) above a summary row for each of its runs.
#[test]
fn compare_sweep_and_search_results_make_pages_too() {
    let dir = std::env::temp_dir().join(format!("wirebench-html-kinds-{}", free_port()));
    std::fs::create_dir_all(&dir).unwrap();
    let at = |f: &str| dir.join(f).display().to_string();
    wirebench(&["compare", "-n", "300", "-d", "1s", "--json", &at("compare.json")]);
    wirebench(&[
        "sweep",
        "--serve",
        "http",
        "--server-cores",
        "1",
        "-d",
        "300ms",
        "-c",
        "4",
        "--json",
        &at("sweep.json"),
    ]);
    let server = start_builtin("http");
    let url = format!("http://{}/", server.addrs[0]);
    wirebench(&[
        "search",
        &url,
        "--p99",
        "100ms",
        "--start",
        "400",
        "--step",
        "500ms",
        "--max-steps",
        "2",
        "--json",
        &at("search.json"),
    ]);
    server.stop().unwrap();
    for kind in ["compare", "sweep", "search"] {
        let html = at(&format!("{kind}.html"));
        wirebench(&["report", &at(&format!("{kind}.json")), "--html", &html]);
        let page = std::fs::read_to_string(&html).unwrap();
        let v: serde_json::Value =
            serde_json::from_slice(&std::fs::read(at(&format!("{kind}.json"))).unwrap()).unwrap();
        let (table, runs) = match kind {
            "compare" => ("<table class=\"compare\">", v["rows"].as_array().unwrap().len()),
            "sweep" => ("<table class=\"sweep\">", v["steps"].as_array().unwrap().len()),
            _ => ("<table class=\"search\">", v["steps"].as_array().unwrap().len()),
        };
        assert!(page.contains(table), "{kind}");
        assert_eq!(page.matches("<tr data-run=").count(), runs, "{kind}: a summary row per run");
        for i in 0..runs {
            let r = match kind {
                "compare" => &v["rows"][i],
                _ => &v["steps"][i]["result"],
            };
            assert_eq!(cell(&page, i, "ops"), r["ops"].to_string(), "{kind} run {i}");
        }
    }
    let page = std::fs::read_to_string(at("compare.html")).unwrap();
    assert!(page.contains("TCP floor") && page.contains("framing (tx + rx − payload)"));
}
