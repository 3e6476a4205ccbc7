//! The report through the server: a comparison with runs uploaded over the
//! runner protocol shows the same numbers as HTML, text and JSON; pages
//! escape user text; and the pages, loaded in a real headless Chromium, show
//! what a user should see.

mod browser;
mod calibration;
mod culprit;
mod dashboard;
mod extreme_values;
mod helpers;
mod keyboard;
mod layout;
mod metrics_page;
mod more_runs;
mod plots;
mod run_projections;
mod sentences;
mod stored;
mod verdicts;
mod waiting;
mod worst_first;

use axum::http::StatusCode;
use helpers::{TestApp, squash};
use patchperf_common::report::format::{change_column, mean_column};
use patchperf_common::run::Side;
use patchperf_testkit::TestServer;

/// Base runs at 100000 ops per task and second, patched at 110000, with a
/// little boot-to-boot noise: a clear +10% improvement.
fn ops(side: Side, seq: u32, nr_task: u32) -> f64 {
    let noise = f64::from(seq % 3) * 50.0;
    let per_task = match side {
        Side::Base => 100_000.0,
        Side::Patched => 110_000.0,
    };
    (per_task + noise) / f64::from(nr_task).sqrt()
}

/// Submits a comparison, runs all of its jobs, and lets the report
/// builder store its report and verdict as the server's would.
pub(crate) async fn completed_comparison(app: &TestApp, subject: &str) -> i64 {
    let machine = app.register("lab1").await;
    let id = app.submit(subject, "lab1", &[1, 2], 3).await;
    while let Some(spec) = app.claim(machine).await {
        app.run_job(machine, &spec, &[1, 2], ops, true).await;
    }
    app.build_reports().await;
    id
}

/// The cells of the HTML table row whose metric cell is `name`.
fn html_row(html: &str, name: &str) -> Vec<String> {
    // The report's table lets a name wrap after each dot; the all-metrics
    // page writes it whole.
    let wrapped: String = name
        .split_inclusive('.')
        .map(|p| format!("{p}<wbr>"))
        .collect();
    let start = [
        format!("<td class=\"metric\">{name}</td>"),
        format!("<td class=\"metric\">{wrapped}"),
    ]
    .iter()
    .find_map(|cell| html.find(cell.as_str()))
    .unwrap_or_else(|| panic!("no row {name}"));
    // From the row's start: the all-metrics page leads with %change and
    // the verdict, before the name.
    let start = html[..start].rfind("<tr").unwrap_or(start);
    let row = &html[start..start + html[start..].find("</tr>").unwrap()];
    row.split("</td>")
        .map(|c| {
            let mut text = String::new();
            let mut in_tag = false;
            for ch in c.chars() {
                match ch {
                    '<' => in_tag = true,
                    '>' => in_tag = false,
                    _ if !in_tag => text.push(ch),
                    _ => {}
                }
            }
            squash(&text)
        })
        .collect()
}

#[sqlx::test(migrator = "patchperf_server::MIGRATOR")]
async fn html_text_and_json_show_identical_numbers(pool: sqlx::PgPool) {
    let app = TestApp::new(pool).await;
    let id = completed_comparison(&app, "[PATCH] fs: make dup faster").await;

    let json = app.get_json(&format!("/api/v1/comparisons/{id}")).await;
    let verdict = &json["verdict"];
    assert_eq!(verdict["overall"], "improvement", "{verdict:#}");
    let reports = verdict["reports"].as_array().unwrap();
    assert_eq!(reports.len(), 2, "one report per nr_task");
    let report = &reports[0];
    assert_eq!(report["header"]["nr_task"], 1);
    let metric = report["metrics"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["name"] == "will-it-scale.per_process_ops")
        .unwrap();
    assert_eq!(report["base_runs"], 3);
    let base_mean = metric["base"]["mean"].as_f64().unwrap();
    let patched_mean = metric["patched"]["mean"].as_f64().unwrap();
    let change = metric["change"].as_f64().unwrap();
    // base boots 0..5 hold the seqs of the A boots; the means are 100000 plus
    // the mean noise of those boots, so just check the change by hand:
    assert!((change - 100.0 * (patched_mean - base_mean) / base_mean).abs() < 1e-9);
    assert_eq!(metric["verdict"], "improvement");
    assert!(metric["q"].as_f64().unwrap() < 0.05);
    assert_eq!(metric["interval"]["kind"], "bounded");

    let (status, text) = app
        .get(&format!("/api/v1/comparisons/{id}/report.txt"))
        .await;
    assert_eq!(status, StatusCode::OK);
    assert!(
        text.starts_with(
            "patchperf noticed a 10.0% improvement of will-it-scale.per_process_ops on:"
        ) || text.contains("improvement of will-it-scale.per_process_ops on:"),
        "{text}"
    );
    // The text puts the most important report first: read nr_task 1's,
    // the JSON's first report.
    let report_1 = text
        .split("\n\npatchperf ")
        .find(|r| r.contains("\tnr_task: 1\n"))
        .unwrap();
    let line = report_1
        .lines()
        .find(|l| l.ends_with("  will-it-scale.per_process_ops"))
        .unwrap();
    let tokens: Vec<&str> = line.split_whitespace().collect();
    assert_eq!(tokens.len(), 4, "{line}");
    // the text table prints the JSON's numbers in 0-day's formats
    assert_eq!(tokens[0], mean_column(base_mean).trim());
    assert_eq!(tokens[1], change_column(change, false).trim());
    assert_eq!(tokens[2], mean_column(patched_mean).trim());

    let (status, html) = app.get(&format!("/comparisons/{id}")).await;
    assert_eq!(status, StatusCode::OK);
    // The page's tables go worst first (two improvements of about 10%,
    // the larger first): read nr_task 1's.
    let table_1 = &html[html.find("<h2>dup1 · process · nr_task 1</h2>").unwrap()..];
    let cells = html_row(table_1, "will-it-scale.per_process_ops");
    // metric, base, %change, Δ points, patched, verdict, interval, q, p
    assert_eq!(cells[1], tokens[0]);
    assert_eq!(cells[2], tokens[1]);
    assert_eq!(cells[3], "", "a relative change, not points");
    assert_eq!(cells[4], tokens[2]);
    // The verdict, and behind it (a <details>) why.
    let (verdict, why) = cells[5].split_at("improvement".len());
    assert_eq!(verdict, "improvement");
    assert!(why.starts_with("95% CI "), "{}", cells[5]);
    let interval = &metric["interval"];
    assert_eq!(
        cells[6],
        format!(
            "{:+.2}% … {:+.2}%",
            interval["low"].as_f64().unwrap(),
            interval["high"].as_f64().unwrap()
        )
    );
    // the text's verdict line carries the same interval
    assert!(
        text.contains(&format!(
            "  improvement  will-it-scale.per_process_ops  {}: 95% CI {}",
            tokens[1], cells[6]
        )),
        "{text}"
    );
    // unsupported metrics are shown as such in all three forms: named
    // under the text table, `n/s` on the all-metrics page, marked in JSON
    assert!(
        text.contains("  not countable on this machine (perf's <not supported>; never shown as 0): perf events cycles"),
        "{text}"
    );
    assert!(!text.contains("        perf-stat.ps.cycles\n"), "{text}");
    assert!(html.contains("not countable on this machine"));
    let (_, all) = app.get(&format!("/comparisons/{id}/metrics")).await;
    let all = &all[all.find("dup1 · process · nr_task 1").unwrap()..];
    // All metrics: %change, verdict, metric, base, patched, …
    assert_eq!(html_row(all, "perf-stat.ps.cycles")[3], "n/s");
    let all_cells = html_row(all, "will-it-scale.per_process_ops");
    assert_eq!(
        [&all_cells[3], &all_cells[0], &all_cells[4]],
        [&cells[1], &cells[2], &cells[4]],
        "the same numbers on both pages"
    );
    assert!(html.contains(&format!("href=\"/comparisons/{id}/metrics\"")));
    assert!(json.to_string().contains("\"presence\":\"unsupported\""));
}

#[sqlx::test(migrator = "patchperf_server::MIGRATOR")]
async fn a_patch_subject_with_markup_is_shown_as_text(pool: sqlx::PgPool) {
    let app = TestApp::new(pool).await;
    let subject = "[PATCH] fs: <script>alert(\"x\")</script> & <b>bold</b>";
    let id = completed_comparison(&app, subject).await;
    for uri in [format!("/comparisons/{id}"), "/".to_string()] {
        let (status, html) = app.get(&uri).await;
        assert_eq!(status, StatusCode::OK, "{uri}");
        assert!(
            !html.contains("<script>alert"),
            "{uri} carries the subject as markup"
        );
        assert!(!html.contains("<b>bold"), "{uri}");
        // askama escapes to numeric entities; decoded, the subject reads as typed
        assert!(
            html.contains(
                "&#60;script&#62;alert(&#34;x&#34;)&#60;/script&#62; &#38; &#60;b&#62;bold"
            ),
            "{uri}: {html}"
        );
        assert!(browser::visible_text(&html).contains(subject), "{uri}");
    }
    // the text report is plain text: the subject appears verbatim
    let (_, text) = app
        .get(&format!("/api/v1/comparisons/{id}/report.txt"))
        .await;
    assert!(text.contains(&format!("patch subject: {subject}")));
}

#[sqlx::test(migrator = "patchperf_server::MIGRATOR")]
async fn before_any_run_the_verdict_says_so(pool: sqlx::PgPool) {
    let app = TestApp::new(pool).await;
    app.register("lab1").await;
    let id = app.submit("[PATCH] fs: nothing yet", "lab1", &[1], 3).await;
    let json = app.get_json(&format!("/api/v1/comparisons/{id}")).await;
    assert_eq!(json["verdict"]["overall"], "no results");
    assert_eq!(json["verdict"]["reports"], serde_json::json!([]));
    let (status, text) = app
        .get(&format!("/api/v1/comparisons/{id}/report.txt"))
        .await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(text, "patchperf has no results for this comparison yet.\n");
    let (status, html) = app.get(&format!("/comparisons/{id}")).await;
    assert_eq!(status, StatusCode::OK);
    assert!(html.contains("No runs are stored yet."));
    assert!(
        html.contains("id=\"live\""),
        "a queued comparison's page is live"
    );
}

#[sqlx::test(migrator = "patchperf_server::MIGRATOR")]
async fn a_half_done_comparison_is_undecided_and_live(pool: sqlx::PgPool) {
    let app = TestApp::new(pool).await;
    let machine = app.register("lab1").await;
    let id = app.submit("[PATCH] fs: in progress", "lab1", &[1], 3).await;
    let spec = app.claim(machine).await.unwrap();
    app.run_job(machine, &spec, &[1], ops, false).await;
    let json = app.get_json(&format!("/api/v1/comparisons/{id}")).await;
    assert_eq!(json["status"], "running");
    assert_eq!(json["verdict"]["overall"], "undecided");
    let m = &json["verdict"]["reports"][0]["metrics"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["name"] == "will-it-scale.per_process_ops")
        .unwrap()
        .clone();
    assert_eq!(
        m["reason"],
        "too few runs (1 base, 1 patched; 3 a side needed)"
    );
}

#[sqlx::test(migrator = "patchperf_server::MIGRATOR")]
async fn unknown_pages_and_reports_are_404(pool: sqlx::PgPool) {
    let app = TestApp::new(pool).await;
    for uri in [
        "/comparisons/99",
        "/comparisons/99/plots/series.svg?workload=dup1&mode=process&nr_task=1",
        "/api/v1/comparisons/99/report.txt",
        "/machines/nope",
        "/jobs/5/log",
        "/static/nope.css",
    ] {
        let (status, _) = app.get(uri).await;
        assert_eq!(status, StatusCode::NOT_FOUND, "{uri}");
    }
    // A person following a stale link gets a page, the API a JSON error.
    let (_, page) = app.get("/comparisons/99").await;
    assert!(page.contains("<h1>404 Not Found</h1>"), "{page}");
    assert!(page.contains("no comparison 99"), "{page}");
    let (_, json) = app.get("/api/v1/comparisons/99").await;
    assert!(json.starts_with("{\"error\":"), "{json}");
    let (status, css) = app.get("/static/style.css").await;
    assert_eq!(status, StatusCode::OK);
    assert!(css.contains("table"));
    let (status, _) = app.get("/?status=bogus").await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
}

#[sqlx::test(migrator = "patchperf_server::MIGRATOR")]
async fn plot_urls_work_with_defaults_and_name_the_valid_values(pool: sqlx::PgPool) {
    let app = TestApp::new(pool).await;
    let id = completed_comparison(&app, "[PATCH] fs: dup without the sanity check").await;
    // Without parameters: the first report and its headline metric.
    let (status, svg) = app.get(&format!("/comparisons/{id}/plots/runs.svg")).await;
    assert_eq!(status, StatusCode::OK, "{svg}");
    assert!(svg.contains("will-it-scale.per_process_ops"), "{svg}");
    let (status, svg) = app
        .get(&format!("/comparisons/{id}/plots/series.svg?nr_task=2"))
        .await;
    assert_eq!(status, StatusCode::OK, "{svg}");
    // A value that matches nothing is answered with the ones that would.
    let (status, page) = app
        .get(&format!("/comparisons/{id}/plots/runs.svg?workload=open9"))
        .await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    assert!(
        page.contains("it has: workload=dup1&#38;mode=process&#38;nr_task=1, workload=dup1&#38;mode=process&#38;nr_task=2"),
        "{page}"
    );
    let (status, page) = app
        .get(&format!("/comparisons/{id}/plots/runs.svg?nr_task=two"))
        .await;
    assert_eq!(status, StatusCode::NOT_FOUND, "{page}");
    let (status, page) = app
        .get(&format!(
            "/comparisons/{id}/plots/runs.svg?metric=perf-stat.nope"
        ))
        .await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    assert!(
        page.contains("has no metric `perf-stat.nope`; it has: "),
        "{page}"
    );
    assert!(page.contains("will-it-scale.per_process_ops"), "{page}");
}

#[sqlx::test(migrator = "patchperf_server::MIGRATOR")]
async fn pages_in_headless_chromium_show_the_report(pool: sqlx::PgPool) {
    let Some(chromium) = browser::Chromium::find() else {
        eprintln!("skipping: /usr/bin/chromium is not installed (apt-get install chromium)");
        return;
    };
    let app = TestApp::new(pool).await;
    let id = completed_comparison(&app, "[PATCH] fs: <i>dup</i> without the sanity check").await;
    let server = TestServer::serve(app.state.clone(), "127.0.0.1:0".parse().unwrap()).await;
    let base = server.url();

    // The report page, as the browser built it.
    let dom = chromium.dump_dom(&format!("{base}/comparisons/{id}")).await;
    let text = squash(&browser::visible_text(&dom));
    assert!(
        text.contains("[PATCH] fs: <i>dup</i> without the sanity check"),
        "{text}"
    );
    assert!(text.contains("verdict: improvement"), "{text}");
    // The answer first: each report's sentence and the patch, identified,
    // before the facts and the boot order.
    let answer = text
        .find(" ops/s per task) of will-it-scale.per_process_ops on dup1 · process · nr_task 1 (95% interval")
        .unwrap_or_else(|| panic!("{text}"));
    assert!(answer < text.find("Boot order").unwrap(), "{text}");
    // Under icount a change counts from 0.5% until an A/A says otherwise.
    assert!(
        text.contains(
            "3 and 3 runs, tcg-icount; changes under 0.50% count as none: tcg-icount's default)"
        ),
        "{text}"
    );
    assert!(
        text.contains(
            "patch: [PATCH] fs: <i>dup</i> without the sanity check · Kernel Hacker <kh@example.org> \
             · 2026-01-05 10:00 UTC · <20260105100000.1-kh@example.org> · 1 file changed, 1 insertion(+), \
             1 deletion(-) · mbox"
        ),
        "{text}"
    );
    assert!(
        dom.contains("href=\"https://lore.kernel.org/r/20260105100000.1-kh@example.org\""),
        "{dom}"
    );
    assert!(
        dom.contains(&format!("href=\"/comparisons/{id}/series.mbox\"")),
        "{dom}"
    );
    assert!(text.contains("patchperf noticed a"), "{text}");
    // The page's sentence does not dangle on 0-day's "on:".
    assert!(
        text.contains("improvement of will-it-scale.per_process_ops. measurement"),
        "{text}"
    );
    assert!(!text.contains("per_process_ops on:"), "{text}");
    assert!(text.contains("dup1 · process · nr_task 1"), "{text}");
    assert!(text.contains("dup1 · process · nr_task 2"), "{text}");
    // table rows: the headline metric with its verdict
    // (its name wraps only after a dot, the same change of the other
    // will-it-scale forms folded into it, the tooltip saying why)
    assert!(dom.contains(
        "<td class=\"metric\">will-it-scale.<wbr>per_process_ops<wbr><span class=\"same\"> (as do will-it-scale.1.processes"
    ), "{dom}");
    assert!(dom.contains("<summary title=\"95% CI"), "{dom}");
    assert!(dom.contains("Mann–Whitney p"), "{dom}");
    assert!(text.contains("q: Welch's p adjusted for the"), "{text}");
    // plots: per-metric dots, per-second series, the scaling curve
    // A plot says what it shows: a <title>, its unit on the value axis,
    // and the change it draws written out.
    assert!(
        dom.contains("<title>will-it-scale.per_process_ops</title>"),
        "{dom}"
    );
    assert!(dom.contains("ops/s per task"), "{dom}");
    assert!(dom.contains("change +10."), "{dom}");
    assert!(
        dom.matches("<svg").count() >= 5,
        "{}",
        dom.matches("<svg").count()
    );
    assert!(text.contains("Scaling: dup1 · process"), "{text}");
    // Each plot links to itself as a standalone SVG: follow the headline's.
    let href = dom
        .split("href=\"")
        .skip(1)
        .filter_map(|rest| rest.split('"').next())
        .find(|h| h.contains("/plots/runs.svg") && h.contains("per_process_ops"))
        .expect("the headline plot links to its SVG")
        .replace("&amp;", "&");
    let (status, svg) = app.get(&href).await;
    assert_eq!(status, StatusCode::OK, "{href}");
    assert!(svg.contains("<svg"), "{svg}");
    assert!(svg.contains("will-it-scale.per_process_ops"), "{svg}");
    let series_href = dom
        .split("href=\"")
        .skip(1)
        .filter_map(|rest| rest.split('"').next())
        .find(|h| h.contains("/plots/series.svg"))
        .expect("the per-second series links to its SVG")
        .replace("&amp;", "&");
    let (status, svg) = app.get(&series_href).await;
    assert_eq!(status, StatusCode::OK, "{series_href}");
    assert!(svg.contains("<svg"), "{svg}");
    // the boot order and the jobs with their logs
    assert!(text.contains("Boot order"));
    assert!(dom.matches("/jobs/").count() >= 3);

    // The dashboard lists it with its verdict; the machine page its jobs.
    let dom = chromium.dump_dom(&format!("{base}/")).await;
    let text = squash(&browser::visible_text(&dom));
    assert!(text.contains("improvement"), "{text}");
    assert!(
        text.contains("improvement dup1 · nr_task 2 and 1 more report +10.0% +9.88% … +10.11%"),
        "{text}"
    );
    let dom = chromium.dump_dom(&format!("{base}/machines/lab1")).await;
    let text = squash(&browser::visible_text(&dom));
    assert!(text.contains("Machine lab1"), "{text}");
    assert!(
        text.contains("2 × QEMU Virtual CPU version 2.5+ (x86_64)"),
        "{text}"
    );
    assert!(text.contains("done"), "{text}");
    let dom = chromium.dump_dom(&format!("{base}/jobs/1/log")).await;
    assert!(squash(&browser::visible_text(&dom)).contains("guest powered off"));
}

#[sqlx::test(migrator = "patchperf_server::MIGRATOR")]
async fn a_running_comparison_page_follows_the_json_in_chromium(pool: sqlx::PgPool) {
    let Some(chromium) = browser::Chromium::find() else {
        eprintln!("skipping: /usr/bin/chromium is not installed (apt-get install chromium)");
        return;
    };
    let app = TestApp::new(pool).await;
    let machine = app.register("lab1").await;
    let id = app.submit("[PATCH] fs: live", "lab1", &[1], 3).await;
    let spec = app.claim(machine).await.unwrap();
    app.run_job(machine, &spec, &[1], ops, false).await;
    let server = TestServer::serve(app.state.clone(), "127.0.0.1:0".parse().unwrap()).await;
    let base = server.url();
    let dom = chromium.dump_dom(&format!("{base}/comparisons/{id}")).await;
    let text = squash(&browser::visible_text(&dom));
    // live.js fetched the JSON and rewrote the banner
    assert!(
        text.contains("live: running; 1 base and 1 patched runs stored of 3 a side"),
        "{text}"
    );
}

#[sqlx::test(migrator = "patchperf_server::MIGRATOR")]
async fn a_failed_job_shows_its_reason_and_log(pool: sqlx::PgPool) {
    let app = TestApp::new(pool).await;
    let machine = app.register("lab1").await;
    let id = app
        .submit("[PATCH] fs: breaks the build", "lab1", &[1], 3)
        .await;
    let spec = app.claim(machine).await.unwrap();
    let (status, body) = app
        .request(
            "POST",
            &format!("/api/v1/jobs/{}/finish", spec.job_id),
            Some(&app.runner),
            &[
                (
                    patchperf_common::protocol::MACHINE_HEADER,
                    machine.to_string(),
                ),
                (
                    patchperf_common::protocol::ATTEMPT_HEADER,
                    spec.attempt.to_string(),
                ),
            ],
            Some(
                serde_json::json!({
                    "outcome": "failed",
                    "reason": "build-failed",
                    "detail": "fs/file.c:12: error: expected ';' before '<' token",
                    "log_tail": "make[2]: *** [scripts/Makefile.build:250: fs/file.o] Error 1",
                })
                .to_string(),
            ),
        )
        .await;
    assert!(status.is_success(), "{status} {body}");
    let (_, html) = app.get(&format!("/comparisons/{id}")).await;
    let text = squash(&browser::visible_text(&html));
    assert!(
        text.contains("build failed: fs/file.c:12: error: expected ';' before '<' token"),
        "{text}"
    );
    let (status, html) = app.get(&format!("/jobs/{}/log", spec.job_id)).await;
    assert_eq!(status, StatusCode::OK);
    let text = squash(&browser::visible_text(&html));
    assert!(text.contains("state: failed: build failed"), "{text}");
    assert!(
        text.contains("make[2]: *** [scripts/Makefile.build:250: fs/file.o] Error 1"),
        "{text}"
    );
}

#[sqlx::test(migrator = "patchperf_server::MIGRATOR")]
async fn a_long_build_is_one_line_of_the_job_log_and_every_event_is_in_the_raw_log(
    pool: sqlx::PgPool,
) {
    let app = TestApp::new(pool).await;
    let machine = app.register("lab1").await;
    app.submit("[PATCH] fs: a long build", "lab1", &[1], 3)
        .await;
    let spec = app.claim(machine).await.unwrap();
    let headers = [
        (
            patchperf_common::protocol::MACHINE_HEADER,
            machine.to_string(),
        ),
        (
            patchperf_common::protocol::ATTEMPT_HEADER,
            spec.attempt.to_string(),
        ),
    ];
    let update = |state: &str, message: &str, tail: String| {
        let body = serde_json::json!({ "state": state, "message": message, "log_tail": tail });
        let path = format!("/api/v1/jobs/{}/state", spec.job_id);
        let (headers, runner) = (headers.clone(), app.runner.clone());
        let app = &app;
        async move {
            let (status, body) = app
                .request(
                    "POST",
                    &path,
                    Some(&runner),
                    &headers,
                    Some(body.to_string()),
                )
                .await;
            assert!(status.is_success(), "{status} {body}");
        }
    };
    for i in 0..40 {
        update(
            "building",
            "building the patched kernel",
            format!("  CC      fs/file{i}.o"),
        )
        .await;
    }
    update("booting", "booting the base kernel", String::new()).await;

    let (status, html) = app.get(&format!("/jobs/{}/log", spec.job_id)).await;
    assert_eq!(status, StatusCode::OK);
    let text = squash(&browser::visible_text(&html));
    assert!(
        text.contains("building the patched kernel (× 40)"),
        "{text}"
    );
    assert!(text.contains("CC fs/file39.o"), "{text}");
    assert!(
        !text.contains("CC fs/file38.o"),
        "earlier tails are folded: {text}"
    );
    assert!(text.contains("booting the base kernel"), "{text}");
    assert!(text.contains("boot block 1 of 3"), "{text}");
    assert!(html.contains("href=\"#end\""), "{html}");
    let (status, raw) = app.get(&format!("/jobs/{}/log.txt", spec.job_id)).await;
    assert_eq!(status, StatusCode::OK);
    for i in 0..40 {
        assert!(
            raw.contains(&format!("    CC      fs/file{i}.o\n")),
            "{raw}"
        );
    }
    assert_eq!(
        raw.matches("building attempt 1 building the patched kernel")
            .count(),
        40
    );
}

#[sqlx::test(migrator = "patchperf_server::MIGRATOR")]
async fn an_aa_comparison_sets_the_noise_floor_of_later_reports_on_its_machine(pool: sqlx::PgPool) {
    let app = TestApp::new(pool).await;
    let noisy = app.register("noisy").await;
    let quiet = app.register("quiet").await;

    // A/A on `noisy`: both sides boot the base kernel; boots differ by up
    // to 6% (a boot's value depends only on its position, not its side).
    let aa = app.submit_aa("noisy", 6).await;
    while let Some(spec) = app.claim(noisy).await {
        assert!(spec.aa, "A/A jobs say so to the runner");
        assert!(spec.mbox.is_empty());
        app.run_job(
            noisy,
            &spec,
            &[1],
            |_, seq, _| 100_000.0 * (1.0 + 0.02 * f64::from(seq % 4)),
            true,
        )
        .await;
    }
    let aa_view = app.get_json(&format!("/api/v1/comparisons/{aa}")).await;
    assert_eq!(aa_view["kind"], "aa");
    assert_eq!(aa_view["status"], "done");

    // The same +1.5% patch on both machines, measured with 0.1% noise.
    let ops = |side: Side, seq: u32, _: u32| {
        let base = 100_000.0 * (1.0 + 0.001 * f64::from(seq % 2));
        match side {
            Side::Base => base,
            Side::Patched => base * 1.015,
        }
    };
    let mut verdicts = Vec::new();
    for (name, machine) in [("quiet", quiet), ("noisy", noisy)] {
        let id = app
            .submit("[PATCH] fs: a small dup win", name, &[1], 3)
            .await;
        while let Some(spec) = app.claim(machine).await {
            assert!(!spec.aa);
            app.run_job(machine, &spec, &[1], ops, true).await;
        }
        let view = app.get_json(&format!("/api/v1/comparisons/{id}")).await;
        let (_, text) = app
            .get(&format!("/api/v1/comparisons/{id}/report.txt"))
            .await;
        verdicts.push((view, text));
    }
    let (quiet_view, quiet_text) = &verdicts[0];
    let (noisy_view, noisy_text) = &verdicts[1];
    // Without an A/A on its machine the default 1% threshold applies.
    assert_eq!(
        quiet_view["verdict"]["overall"], "improvement",
        "{quiet_text}"
    );
    let quiet_report = &quiet_view["verdict"]["reports"][0];
    assert!(quiet_report["policy"]["calibrated_percent"].is_null());
    assert_eq!(quiet_report["policy"]["min_change_percent"], 0.5);
    assert!(quiet_report["header"]["delta_aa"].is_null());
    // On the noisy machine δ is twice the A/A spread: +1.5% is within it.
    let noisy_report = &noisy_view["verdict"]["reports"][0];
    let delta = noisy_report["policy"]["calibrated_percent"]
        .as_f64()
        .expect("the noisy machine is calibrated");
    assert_eq!(noisy_report["header"]["delta_aa"], aa);
    // The A/A's bound as the report states it; δ is twice it, rounded up
    // to the hundredth of a percent reports print.
    let noisy_text_source = noisy_report["header"]["delta_source"].as_str().unwrap();
    let floor: f64 = noisy_text_source
        .split("2 × the ±")
        .nth(1)
        .and_then(|rest| rest.split('%').next())
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("no A/A bound in {noisy_text_source}"));
    assert!(
        delta >= 2.0 * floor - 0.001 && delta <= 2.0 * floor + 0.011,
        "δ {delta} from ±{floor}"
    );
    assert!(floor > 1.6, "floor {floor}");
    assert_ne!(
        noisy_view["verdict"]["overall"], "improvement",
        "{noisy_text}"
    );
    assert!(
        noisy_text.contains(&format!(
            "δ {delta:.2}%: 2 × the ±{floor:.3}% that A/A comparison {aa} measured (tcg-icount, \
             dup1 · process · 1 task, "
        )),
        "{noisy_text}"
    );

    // Each machine page says what its floor is and what it ran, with the
    // verdicts the report builder stored.
    app.build_reports().await;
    let (_, html) = app.get("/machines/noisy").await;
    let text = squash(&browser::visible_text(&html));
    assert!(
        text.contains(&format!(
            "dup1 process 1 tcg-icount ±{floor:.3}% {delta:.2}% A/A {aa}"
        )),
        "{text}"
    );
    assert!(text.contains("[PATCH] fs: a small dup win"), "{text}");
    let (_, html) = app.get("/machines/quiet").await;
    let text = squash(&browser::visible_text(&html));
    assert!(
        text.contains("No A/A comparison has finished on this machine"),
        "{text}"
    );
    assert!(text.contains("improvement"), "{text}");
}

#[sqlx::test(migrator = "patchperf_server::MIGRATOR")]
async fn the_text_report_links_absolutely(pool: sqlx::PgPool) {
    let app = TestApp::new(pool).await;
    let id = completed_comparison(&app, "[PATCH] fs: make dup faster").await;
    let path = format!("/api/v1/comparisons/{id}/report.txt");
    // Without --public-url: the host the request went to.
    let host = [("host", "perf.lab:8080".to_string())];
    let (status, text) = app.request("GET", &path, None, &host, None).await;
    assert_eq!(status, StatusCode::OK);
    assert!(
        text.contains(&format!("report: http://perf.lab:8080/comparisons/{id}\n")),
        "{text}"
    );
    // A Host that is no plain host name makes no link up.
    let odd = [("host", "evil.example/phish?x=".to_string())];
    let (_, text) = app.request("GET", &path, None, &odd, None).await;
    assert!(!text.contains("evil.example"), "{text}");
}
