//! The pages' layout, measured in headless Chromium: on a 390 px phone no
//! page is wider than the screen (tables scroll in their own box, long
//! names and paths wrap), and at 1400×900 (and on the phone) a comparison's
//! answer (verdict, size, metric, 95% interval) is above the fold. The
//! comparison looks like a real one: seed 004's patch, 140 metrics with
//! perf-profile's long call chains, +4.8% on the headline metric, a job log
//! with a kernel build's long paths.

use axum::http::StatusCode;
use patchperf_common::protocol::JobSpec;
use patchperf_common::run::{MetricValue, Side};
use patchperf_testkit::TestServer;
use patchperf_testkit::git_fixture::patches_dir;

use crate::browser::{self, Chromium, Viewport};
use crate::helpers::{TestApp, run_result};

/// The functions perf saw in a dup1 run, outermost first.
const STACK: [&str; 16] = [
    "__GI___dup",
    "entry_SYSCALL_64_after_hwframe",
    "do_syscall_64",
    "__x64_sys_dup",
    "alloc_fd",
    "expand_files",
    "find_next_fd",
    "_raw_spin_lock",
    "native_queued_spin_lock_slowpath",
    "fd_install",
    "syscall_exit_to_user_mode",
    "exit_to_user_mode_prepare",
    "task_work_run",
    "__fput",
    "filp_flush",
    "__x64_sys_close",
];

/// perf-stat's events as 0-day names them.
const PERF_STAT: [&str; 12] = [
    "perf-stat.i.branch-instructions",
    "perf-stat.i.branch-miss-rate%",
    "perf-stat.i.cache-misses",
    "perf-stat.i.cpi",
    "perf-stat.i.dTLB-load-misses",
    "perf-stat.i.iTLB-load-misses",
    "perf-stat.i.instructions",
    "perf-stat.i.ipc",
    "perf-stat.overall.MPKI",
    "perf-stat.overall.cpi",
    "perf-stat.ps.cpu-cycles",
    "perf-stat.ps.instructions",
];

/// The extra metrics of a run, 136 of them: perf-stat's, and
/// perf-profile's call chains (up to the whole stack in one name), children
/// and self shares. The chains through alloc_fd shrink by 10% with the
/// patch; the rest differ by boot-to-boot noise only.
fn profile_metrics(side: Side, seq: u32) -> Vec<MetricValue> {
    let mut names: Vec<String> = PERF_STAT.iter().map(|s| s.to_string()).collect();
    for start in 0..STACK.len() {
        for len in 2..=STACK.len() - start {
            if len <= 8 || start + len == STACK.len() {
                let chain = STACK[start..start + len].join(".");
                names.push(format!("perf-profile.calltrace.cycles-pp.{chain}"));
            }
        }
    }
    for f in STACK {
        names.push(format!("perf-profile.children.cycles-pp.{f}"));
        names.push(format!("perf-profile.self.cycles-pp.{f}"));
    }
    names
        .into_iter()
        .enumerate()
        .map(|(i, name)| {
            let i = u32::try_from(i).unwrap();
            let noise = 1.0 + 0.002 * f64::from((seq + i) % 3);
            let moved = side == Side::Patched && name.contains("alloc_fd");
            let value = (1.0 + f64::from(i % 17) * 3.1) * noise * if moved { 0.9 } else { 1.0 };
            MetricValue { name, value }
        })
        .collect()
}

/// dup1 ops a task and second: +4.8% with the patch, 0.05% boot-to-boot noise.
fn ops(side: Side, seq: u32, nr_task: u32) -> f64 {
    let base = 100_000.0 * (1.0 + 0.0005 * f64::from(seq % 3)) / f64::from(nr_task).sqrt();
    match side {
        Side::Base => base,
        Side::Patched => base * 1.048,
    }
}

/// What a runner says while it builds and boots, with a kernel build's
/// long paths.
async fn say_building(app: &TestApp, machine: i64, spec: &JobSpec) {
    let steps = [
        (
            "building",
            "building the patched kernel (1 patch, 1 file) in /var/cache/patchperf/build/linux-source-6.1+e1daec2c08f4b2a7c1d9",
            "  CC      drivers/gpu/drm/amd/display/dc/dml/dcn32/display_mode_vba_util_32.o\n  \
             CC      fs/file.o\n  LD [M]  drivers/net/ethernet/mellanox/mlx5/core/mlx5_core.ko\n\
             fs/file.c:515:13: note: in expansion of macro 'likely'; \
             /var/cache/patchperf/build/linux-source-6.1+e1daec2c08f4b2a7c1d9/include/linux/compiler.h:77",
        ),
        (
            "booting",
            "booting /var/cache/patchperf/kernels/linux-source-6.1+e1daec2c08f4b2a7c1d9/arch/x86/boot/bzImage",
            "",
        ),
    ];
    for (state, message, tail) in steps {
        let body = serde_json::json!({ "state": state, "message": message, "log_tail": tail });
        let a = app.job_call(machine, spec, "state", body).await;
        assert!(a.status.is_success(), "{a:?}");
    }
}

/// A finished comparison of seed 004 on dup1 with 1 and 2 tasks, 3 boots
/// a side; its id and its first job's.
async fn real_looking_comparison(app: &TestApp) -> (i64, i64) {
    let machine = app.register("lab1").await;
    let patch = "004-fs-file.c-remove-sanity_check-and-add-likely-unlikely-in-alloc_fd.patch";
    let mbox = std::fs::read_to_string(patches_dir().join(patch)).unwrap();
    let id = app
        .post_comparison(serde_json::json!({
            "base": { "kind": "tarball", "name": "linux-source-6.1" },
            "mbox": mbox,
            "workloads": ["dup1"],
            "params": { "mode": "process", "nr_task": [1, 2], "seconds": 5, "warmup_seconds": 1 },
            "runs": 3,
            "max_runs": 3,
            "backend": "tcg-icount",
            "machine": "lab1",
            "order_seed": 7,
        }))
        .await;
    let mut first_job = None;
    while let Some(spec) = app.claim(machine).await {
        first_job.get_or_insert(spec.job_id);
        say_building(app, machine, &spec).await;
        for boot in &spec.boots {
            for nr_task in [1, 2] {
                let mut run = run_result(nr_task, ops(boot.side, boot.seq, nr_task));
                run.metrics.extend(profile_metrics(boot.side, boot.seq));
                app.upload(machine, &spec, *boot, run).await;
            }
        }
        app.finish_done(machine, &spec).await;
    }
    app.build_reports().await;
    let (status, _) = app.get(&format!("/comparisons/{id}")).await;
    assert_eq!(status, StatusCode::OK);
    (id, first_job.expect("a job"))
}

#[sqlx::test(migrator = "patchperf_server::MIGRATOR")]
async fn no_page_is_wider_than_a_phone(pool: sqlx::PgPool) {
    let Some(chromium) = Chromium::find() else {
        eprintln!("skipping: /usr/bin/chromium is not installed (apt-get install chromium)");
        return;
    };
    let app = TestApp::new(pool).await;
    let (id, job) = real_looking_comparison(&app).await;
    let server = TestServer::serve(app.state.clone(), "127.0.0.1:0".parse().unwrap()).await;
    let base = server.url();
    let pages = [
        "/".to_string(),
        format!("/comparisons/{id}"),
        format!("/comparisons/{id}/metrics"),
        format!("/jobs/{job}/log"),
        "/machines".to_string(),
        "/machines/lab1".to_string(),
    ];
    let urls: Vec<String> = pages.iter().map(|p| format!("{base}{p}")).collect();
    browser::assert_fit_a_phone(&chromium, &urls).await;
    server.stop().await;
}

/// The real-looking comparison served on a loopback port, and Chromium to
/// look at it; `None` (and why, on stderr) without Chromium.
async fn served(pool: sqlx::PgPool) -> Option<(Chromium, TestServer, i64)> {
    let Some(chromium) = Chromium::find() else {
        eprintln!("skipping: /usr/bin/chromium is not installed (apt-get install chromium)");
        return None;
    };
    let app = TestApp::new(pool).await;
    let (id, _) = real_looking_comparison(&app).await;
    let server = TestServer::serve(app.state.clone(), "127.0.0.1:0".parse().unwrap()).await;
    Some((chromium, server, id))
}

/// Where the first row of the all-metrics table puts its change, verdict
/// and reason.
const METRICS_ROW: &str = r#"(() => {
  const row = document.querySelector('table.all tbody tr');
  if (!row) return null;
  const box = s => row.querySelector(s).getBoundingClientRect();
  return { change_right: box('td.change').right, verdict_right: box('td.verdict').right,
           why_width: box('td.why').width, row_height: row.getBoundingClientRect().height,
           viewport: window.innerWidth };
})()"#;

#[sqlx::test(migrator = "patchperf_server::MIGRATOR")]
async fn every_metric_shows_its_change_and_verdict_first_and_its_reason_readable(
    pool: sqlx::PgPool,
) {
    let Some((chromium, server, id)) = served(pool).await else {
        return;
    };
    let url = format!("{}/comparisons/{id}/metrics", server.url());
    // On a phone, without scrolling sideways: the change and the verdict.
    let phone = chromium.evaluate(&url, browser::PHONE, METRICS_ROW).await;
    let viewport = phone["viewport"].as_f64().expect("a metrics row");
    assert!(
        phone["verdict_right"].as_f64().unwrap() <= viewport,
        "the verdict is off the phone's screen: {phone}"
    );
    // On a desktop, the reason is a column one reads, not a sliver.
    let desktop = Viewport {
        width: 1400,
        height: 900,
    };
    let wide = chromium.evaluate(&url, desktop, METRICS_ROW).await;
    assert!(
        wide["why_width"].as_f64().unwrap() >= 200.0,
        "the reason is squeezed: {wide}"
    );
    assert!(
        wide["row_height"].as_f64().unwrap() <= 100.0,
        "a row is too tall to scan: {wide}"
    );
    server.stop().await;
}

/// The summary's place and text on the page, as a browser lays it out.
const SUMMARY: &str = r#"(() => {
  const s = document.querySelector('section.summary');
  if (!s) return null;
  const r = s.getBoundingClientRect();
  const noticed = [...document.querySelectorAll('p.headline')]
    .find(p => p.textContent.startsWith('patchperf noticed'));
  return { top: r.top, bottom: r.bottom, text: s.innerText,
           noticed_bottom: noticed ? noticed.getBoundingClientRect().bottom : null };
})()"#;

#[sqlx::test(migrator = "patchperf_server::MIGRATOR")]
async fn the_answer_is_above_the_fold_of_a_comparison(pool: sqlx::PgPool) {
    let Some((chromium, server, id)) = served(pool).await else {
        return;
    };
    let url = format!("{}/comparisons/{id}", server.url());
    for screen in [
        Viewport {
            width: 1400,
            height: 900,
        },
        browser::PHONE,
    ] {
        let summary = chromium.evaluate(&url, screen, SUMMARY).await;
        let bottom = summary["bottom"].as_f64().expect("a summary block");
        let text = summary["text"].as_str().unwrap();
        eprintln!(
            "layout: {url} at {}×{}: the summary from {} to {bottom} px, \
             the first \"patchperf noticed\" ends at {} px: {text}",
            screen.width, screen.height, summary["top"], summary["noticed_bottom"]
        );
        // What a developer must read first: the verdict, how much, of what,
        // how sure.
        for said in [
            "improvement: +4.8% (",
            " ops/s per task) of will-it-scale.per_process_ops on dup1 · process · nr_task 1",
            "(95% interval +4.",
            "3 and 3 runs, tcg-icount",
        ] {
            assert!(
                text.contains(said),
                "{said:?} is not in the summary: {text}"
            );
        }
        // On the first screen, a phone's too: nothing to scroll past.
        assert!(
            bottom <= f64::from(screen.height),
            "the summary ends at {bottom} px, below the fold of {} px: {text}",
            screen.height
        );
    }
    server.stop().await;
}

#[sqlx::test(migrator = "patchperf_server::MIGRATOR")]
async fn the_answer_and_the_table_come_before_boot_order_and_jobs(pool: sqlx::PgPool) {
    let app = TestApp::new(pool).await;
    let (id, _) = real_looking_comparison(&app).await;
    let (status, html) = app.get(&format!("/comparisons/{id}")).await;
    assert_eq!(status, StatusCode::OK);
    let at = |what: &str| html.find(what).unwrap_or_else(|| panic!("{what}: {html}"));
    let (summary, table) = (
        at("<section class=\"summary\">"),
        at("<table class=\"report\">"),
    );
    let (boots, jobs) = (at("<h2>Boot order</h2>"), at("<h2>Jobs</h2>"));
    assert!(summary < table && table < boots && boots < jobs, "{html}");

    // The summary says the means beside the change: `100050 → 104852`.
    let said = browser::visible_text(&html);
    let said = said.split_whitespace().collect::<Vec<_>>().join(" ");
    let lead = "improvement: +4.8% (";
    let start = said.find(lead).unwrap_or_else(|| panic!("{said}")) + lead.len();
    let (values, rest) = said[start..].split_once(')').unwrap();
    let means: Vec<f64> = values
        .trim_end_matches(" ops/s per task")
        .split(" → ")
        .map(|v| v.parse().unwrap_or_else(|_| panic!("{values}")))
        .collect();
    assert_eq!(means.len(), 2, "{values}");
    assert!((means[1] / means[0] - 1.048).abs() < 0.001, "{values}");
    assert!(values.ends_with(" ops/s per task"), "{values}");
    assert!(
        rest.starts_with(" of will-it-scale.per_process_ops on dup1 · process · nr_task 1"),
        "{rest}"
    );

    // "Why" explains in a handful of sentences, not the table again row
    // by row: the headline's reason, then what else moved, the largest
    // named.
    for list in html.split("<ul class=\"reasons\">").skip(1) {
        let list = &list[..list.find("</ul>").unwrap()];
        let items: Vec<String> = list
            .split("<li>")
            .skip(1)
            .map(browser::visible_text)
            .collect();
        assert!((1..=4).contains(&items.len()), "{items:?}");
        assert!(
            items[0].starts_with("will-it-scale.per_process_ops: improvement, +4.8%: "),
            "{items:?}"
        );
        let others = items[1..].join(" ");
        assert!(
            others.contains(" metrics improved for real: the largest "),
            "{items:?}"
        );
        assert!(others.contains("alloc_fd"), "{items:?}");
    }
    let rows = html[table..]
        .split("</table>")
        .next()
        .unwrap()
        .matches("<tr")
        .count();
    assert!(rows > 8, "a table longer than the list: {rows}");
}

/// The first dashboard row's height and its change cell, as laid out.
const DASHBOARD_ROW: &str = r#"(() => {
  const row = document.querySelector('table.comparisons tbody tr');
  if (!row) return null;
  const change = row.querySelector('td.change');
  return { height: row.getBoundingClientRect().height,
           change: change ? change.innerText : null };
})()"#;

#[sqlx::test(migrator = "patchperf_server::MIGRATOR")]
async fn a_dashboard_row_is_columns_not_a_paragraph(pool: sqlx::PgPool) {
    let Some((chromium, server, _)) = served(pool).await else {
        return;
    };
    let desktop = Viewport {
        width: 1400,
        height: 900,
    };
    let row = chromium
        .evaluate(&format!("{}/", server.url()), desktop, DASHBOARD_ROW)
        .await;
    // Two reports (dup1 with 1 and 2 tasks): the worst in columns, the
    // other counted under it; two lines of text, not one sentence each.
    assert!(
        row["height"].as_f64().expect("a dashboard row") <= 60.0,
        "a row is a paragraph: {row}"
    );
    assert!(
        row["change"].as_str().is_some_and(|c| c.ends_with('%')),
        "{row}"
    );
    server.stop().await;
}

/// Where the first dashboard row's name and verdict are on the screen.
const DASHBOARD_ROW_ON_A_PHONE: &str = r#"(() => {
  const row = document.querySelector('table.comparisons tbody tr');
  if (!row) return null;
  const box = e => { const r = e.getBoundingClientRect();
                     return { top: r.top, bottom: r.bottom, left: r.left, right: r.right }; };
  return { name: box(row.querySelector('td.name a')),
           verdict: box(row.querySelector('td.verdict')),
           change: box(row.querySelector('td.change')),
           screen: { width: window.innerWidth, height: window.innerHeight } };
})()"#;

/// On a phone the dashboard's first screen shows a comparison: its name,
/// verdict and change, without scrolling sideways or down.
#[sqlx::test(migrator = "patchperf_server::MIGRATOR")]
async fn a_phone_sees_the_comparisons_by_name_on_the_first_screen(pool: sqlx::PgPool) {
    let Some((chromium, server, _)) = served(pool).await else {
        return;
    };
    let phone = Viewport {
        width: 390,
        height: 844,
    };
    let row = chromium
        .evaluate(
            &format!("{}/", server.url()),
            phone,
            DASHBOARD_ROW_ON_A_PHONE,
        )
        .await;
    let (width, height) = (
        row["screen"]["width"].as_f64().expect("a dashboard row"),
        row["screen"]["height"].as_f64().unwrap(),
    );
    for cell in ["name", "verdict", "change"] {
        let b = &row[cell];
        let inside = b["left"].as_f64().unwrap() >= 0.0
            && b["right"].as_f64().unwrap() <= width
            && b["top"].as_f64().unwrap() >= 0.0
            && b["bottom"].as_f64().unwrap() <= height;
        assert!(inside, "the {cell} is off the first screen: {row}");
    }
    server.stop().await;
}
