//! Bisections over a real git repository, with a lab played by the test:
//! each probe's runs are as fast as the commits its kernels carry make
//! them (commit `culprit` and every later one make open1 50% faster), and
//! chosen probes fail as kernels that do not build. Checked: the first bad
//! commit is found in O(log N) probes on one machine; a commit that does
//! not build is skipped, or named among the candidates; ends that do not
//! differ answer "not reproducible" (and its page says so); a finished
//! comparison is bisected without measuring its ends again; bad requests
//! are refused.

use axum::http::StatusCode;
use patchperf_common::mbox;
use patchperf_common::protocol::{BaseSource, JobSpec, NrTask};
use patchperf_common::run::Side;
use patchperf_server::Config;
use patchperf_server::domain::bisection;
use serde_json::{Value, json};
use sqlx::PgPool;

use crate::bisection_pages::{page, row, text};
use crate::git_repo::linear;
use crate::helpers::{TestApp, test_config};

/// How the played lab measures.
pub struct Lab {
    /// The first commit that makes open1 faster (none: no commit does).
    pub culprit: Option<usize>,
    /// Commits whose kernels do not build.
    pub broken: Vec<usize>,
    /// The repository's commit ids, base first, when a job's base may be
    /// a later commit (a tracked tree's last tested head): its kernel then
    /// carries as many commits as its place in this list, plus its patches.
    pub ids: Vec<String>,
}

impl Lab {
    /// Open1 ops a task on a kernel carrying the first `commits` commits.
    fn ops(&self, commits: usize, seq: u32) -> f64 {
        let noise = 1.0 + 0.001 * f64::from(seq % 3);
        let faster = self.culprit.is_some_and(|c| commits >= c);
        1000.0 * noise * if faster { 1.5 } else { 1.0 }
    }

    /// Runs `job` as a runner would: fails it when its patched kernel
    /// carries a broken commit as its last, else uploads each boot's runs.
    pub async fn run(&self, app: &TestApp, machine: i64, job: &JobSpec) {
        let offset = match &job.base {
            BaseSource::Git { commit, .. } => self.ids.iter().position(|id| id == commit),
            BaseSource::Tarball { .. } => None,
        }
        .unwrap_or(0);
        let patched = offset + mbox::prefixes(&job.mbox).len();
        let base = offset + mbox::prefixes(&job.base_mbox).len();
        if self.broken.contains(&patched) {
            let finish = json!({
                "outcome": "failed",
                "reason": "build-failed",
                "detail": format!("fs/step{patched}.c:1:1: error: expected identifier"),
            });
            let a = app.job_call(machine, job, "finish", finish).await;
            assert!(a.status.is_success(), "{a:?}");
            return;
        }
        for boot in &job.boots {
            let commits = match boot.side {
                Side::Base => base,
                Side::Patched => patched,
            };
            let ops = self.ops(commits, boot.seq);
            for nr_task in &job.params.nr_task {
                let NrTask::Count(n) = nr_task else { continue };
                let per_second = vec![ops * f64::from(*n); 5];
                let run = patchperf_testkit::runs::run_result("open1", *n, per_second, ops);
                app.upload(machine, job, *boot, run).await;
            }
        }
        app.finish_done(machine, job).await;
    }

    /// Advances bisections and runs what `machine` can claim until there is
    /// nothing left; the jobs run.
    pub async fn drain(&self, app: &TestApp, machine: i64) -> Vec<JobSpec> {
        let mut ran = Vec::new();
        loop {
            bisection::advance_all(&app.state).await.unwrap();
            let Some(job) = app.claim(machine).await else {
                return ran;
            };
            self.run(app, machine, &job).await;
            ran.push(job);
        }
    }
}

pub async fn app(pool: PgPool, mirrors: &std::path::Path) -> TestApp {
    let config = Config {
        local_git: true,
        git_dir: mirrors.to_path_buf(),
        ..test_config()
    };
    TestApp::with_config(pool, config).await
}

pub fn request(url: &str, good: &str, bad: &str) -> Value {
    json!({
        "base": { "kind": "git", "url": url, "commit": good },
        "bad": bad,
        "workload": "open1",
        "params": { "nr_task": [1], "seconds": 5, "warmup_seconds": 1 },
        "runs": 3,
        "order_seed": 11,
    })
}

/// A comparison of open1 over the git range from `good` to the head of
/// the repository at `url`, commit by commit; its id.
pub async fn range_comparison(app: &TestApp, url: &str, good: &str) -> i64 {
    app.post_comparison(json!({
        "base": { "kind": "git", "url": url, "commit": good },
        "range": format!("{good}..master"),
        "workloads": ["open1"],
        "params": { "nr_task": [1], "seconds": 5, "warmup_seconds": 1 },
        "runs": 3,
    }))
    .await
}

pub async fn start(app: &TestApp, body: Value) -> i64 {
    let a = app.post("/api/v1/bisections", &app.ci, body).await;
    assert_eq!(a.status, StatusCode::CREATED, "{a:?}");
    a.json["id"].as_i64().unwrap()
}

async fn bisection(app: &TestApp, id: i64) -> Value {
    let a = app.get(&format!("/api/v1/bisections/{id}")).await;
    assert_eq!(a.status, StatusCode::OK, "{a:?}");
    a.json
}

/// The commit positions probed, in order.
fn probed(view: &Value) -> Vec<u64> {
    view["probes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["position"].as_u64().unwrap())
        .collect()
}

#[sqlx::test(migrations = "../migrations")]
async fn the_first_bad_commit_is_found_in_log_n_probes_on_one_machine(pool: PgPool) {
    let (repo, ids) = linear(7);
    let mirrors = tempfile::tempdir().unwrap();
    let app = app(pool, mirrors.path()).await;
    let m1 = app.register("lab-1").await;
    let m2 = app.register("lab-2").await;
    let url = repo.path().to_str().unwrap();
    let id = start(&app, request(url, &ids[0], "master")).await;
    let lab = Lab {
        culprit: Some(5),
        broken: Vec::new(),
        ids: Vec::new(),
    };
    // The first probe goes to whichever machine claims it; the rest follow.
    let first = app.claim(m1).await.unwrap();
    lab.run(&app, m1, &first).await;
    bisection::advance_all(&app.state).await.unwrap();
    assert!(app.claim(m2).await.is_none(), "probes stay on lab-1");
    lab.drain(&app, m1).await;

    let view = bisection(&app, id).await;
    assert_eq!(view["status"], "done", "{view:#}");
    assert_eq!(view["git_range"], format!("{}..{}", ids[0], ids[7]));
    assert_eq!(view["machine"], "lab-1");
    let probes = probed(&view);
    // The ends, then at most ⌈log2 7⌉ = 3 commits.
    assert_eq!(probes[0], 7, "{probes:?}");
    assert!(probes.len() <= 4, "{probes:?}");
    let outcome = &view["outcome"];
    assert_eq!(outcome["kind"], "found", "{outcome:#}");
    assert_eq!(outcome["first_bad"], 5);
    let summary = outcome["summary"].as_str().unwrap();
    assert!(
        summary.starts_with(&format!(
            "first bad commit: [{}] fs: step 5\n",
            &ids[5][..10]
        )),
        "{summary}"
    );
    assert!(
        summary.contains("will-it-scale.per_process_ops of open1"),
        "{summary}"
    );
    for p in view["probes"].as_array().unwrap() {
        let k = p["position"].as_u64().unwrap() as usize;
        assert_eq!(p["commit"]["commit"], ids[k].as_str());
        let expected = if k >= 5 { "bad" } else { "good" };
        if k != 7 {
            assert_eq!(p["judgement"], expected, "{p:#}");
        }
        assert!(
            p["low"].as_f64().is_some() && p["high"].as_f64().is_some(),
            "{p:#}"
        );
    }
    // Probes are comparisons of their own, but not the dashboard's rows.
    let listed = app.get("/api/v1/comparisons").await;
    assert_eq!(listed.json["comparisons"].as_array().unwrap().len(), 0);
    let listed = app.get("/api/v1/bisections").await;
    assert_eq!(listed.json["bisections"][0]["id"], id);
    assert_eq!(listed.json["bisections"][0]["outcome"]["kind"], "found");
}

#[sqlx::test(migrations = "../migrations")]
async fn a_commit_that_does_not_build_is_skipped_as_git_bisect_skip_does(pool: PgPool) {
    let (repo, ids) = linear(6);
    let mirrors = tempfile::tempdir().unwrap();
    let app = app(pool, mirrors.path()).await;
    let m = app.register("lab-1").await;
    let url = repo.path().to_str().unwrap();

    // Commit 3 does not build; the culprit, 5, is found past it.
    let id = start(&app, request(url, &ids[0], "master")).await;
    Lab {
        culprit: Some(5),
        broken: vec![3],
        ids: Vec::new(),
    }
    .drain(&app, m)
    .await;
    let view = bisection(&app, id).await;
    assert_eq!(view["outcome"]["kind"], "found", "{view:#}");
    assert_eq!(view["outcome"]["first_bad"], 5);
    let skipped = view["probes"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["position"] == 3)
        .unwrap();
    assert_eq!(skipped["judgement"], "skip");
    assert_eq!(skipped["status"], "failed");
    assert!(
        skipped["failure"]
            .as_str()
            .unwrap()
            .contains("expected identifier")
    );
    // Its page row says why, and that the search stepped around it.
    let html = page(&app, &format!("/bisections/{id}")).await;
    let line = row(&html, &format!("/comparisons/{}", skipped["comparison_id"]));
    assert!(
        line.starts_with(&format!(
            "3/6 {} fs: step 3 failed: fs/step3.c:1:1: error: expected identifier skip 1..6",
            &ids[3][..10]
        )),
        "{line}"
    );
    assert!(line.contains(" skip "), "{line}");

    // Commit 3 does not build and the culprit is 4: both stay candidates.
    let id = start(&app, request(url, &ids[0], "master")).await;
    Lab {
        culprit: Some(4),
        broken: vec![3],
        ids: Vec::new(),
    }
    .drain(&app, m)
    .await;
    let view = bisection(&app, id).await;
    let outcome = &view["outcome"];
    assert_eq!(outcome["kind"], "one-of", "{outcome:#}");
    assert_eq!(outcome["candidates"], json!([3, 4]));
    let summary = outcome["summary"].as_str().unwrap();
    assert!(
        summary.contains(&format!("[{}] fs: step 3", &ids[3][..10])),
        "{summary}"
    );
    assert!(
        summary.contains(&format!("[{}] fs: step 4", &ids[4][..10])),
        "{summary}"
    );
    // The page marks both candidates in the series.
    let said = text(&page(&app, &format!("/bisections/{id}")).await);
    for k in [3, 4] {
        assert!(
            said.contains(&format!("{} fs: step {k} · probed: ", &ids[k][..10])),
            "{said}"
        );
    }
    assert_eq!(said.matches("· the answer").count(), 2, "{said}");

    // The bad end itself does not build: no answer.
    let id = start(&app, request(url, &ids[0], &ids[6])).await;
    Lab {
        culprit: Some(2),
        broken: vec![6],
        ids: Vec::new(),
    }
    .drain(&app, m)
    .await;
    let view = bisection(&app, id).await;
    assert_eq!(view["status"], "failed", "{view:#}");
    assert!(
        view["outcome"]["summary"]
            .as_str()
            .unwrap()
            .starts_with("the bad end could not be measured: fs/step6.c"),
        "{view:#}"
    );
}

#[sqlx::test(migrations = "../migrations")]
async fn ends_that_do_not_differ_are_not_reproducible(pool: PgPool) {
    let (repo, ids) = linear(4);
    let mirrors = tempfile::tempdir().unwrap();
    let app = app(pool, mirrors.path()).await;
    let m = app.register("lab-1").await;
    let id = start(
        &app,
        request(repo.path().to_str().unwrap(), &ids[0], "master"),
    )
    .await;
    Lab {
        culprit: None,
        broken: Vec::new(),
        ids: Vec::new(),
    }
    .drain(&app, m)
    .await;
    let view = bisection(&app, id).await;
    assert_eq!(view["status"], "done");
    assert_eq!(probed(&view), [4], "one probe: the ends");
    let outcome = &view["outcome"];
    assert_eq!(outcome["kind"], "not-reproducible", "{outcome:#}");
    assert!(
        outcome["summary"]
            .as_str()
            .unwrap()
            .starts_with("not reproducible: will-it-scale.per_process_ops of open1"),
        "{outcome:#}"
    );

    // Its page says so first; the one probe (the ends) is not judged and
    // narrowed nothing; the dashboard shows the answer's first line.
    let html = page(&app, &format!("/bisections/{id}")).await;
    let said = text(&html);
    assert!(
        said.contains(
            "not reproducible: will-it-scale.per_process_ops of open1 (process, nr_task 1) \
             does not differ between the good and the bad end"
        ),
        "{said}"
    );
    assert!(!said.contains("the answer"), "{said}");
    let line = row(&html, "/comparisons/1");
    assert!(line.starts_with("4/4 "), "{line}");
    assert!(line.ends_with("% 3 a side not reported"), "{line}");
    let line = row(&page(&app, "/").await, &format!("/bisections/{id}"));
    assert!(
        line.contains(" 1 not reproducible: will-it-scale.per_process_ops of open1"),
        "{line}"
    );
}

#[sqlx::test(migrations = "../migrations")]
async fn a_finished_range_comparison_is_bisected_without_measuring_its_ends_again(pool: PgPool) {
    let (repo, ids) = linear(4);
    let mirrors = tempfile::tempdir().unwrap();
    let app = app(pool, mirrors.path()).await;
    let m = app.register("lab-1").await;
    let url = repo.path().to_str().unwrap();
    let range = range_comparison(&app, url, &ids[0]).await;
    let body = json!({ "comparison": range, "workload": "open1" });
    let a = app.post("/api/v1/bisections", &app.ci, body.clone()).await;
    assert_eq!(a.status, StatusCode::CONFLICT, "{a:?}");
    assert!(
        a.error()
            .contains("a bisection starts from a comparison that is done")
    );

    let lab = Lab {
        culprit: Some(3),
        broken: Vec::new(),
        ids: Vec::new(),
    };
    lab.drain(&app, m).await;
    let id = start(&app, body).await;
    lab.drain(&app, m).await;
    let view = bisection(&app, id).await;
    assert_eq!(view["comparison_id"], range);
    assert_eq!(view["outcome"]["first_bad"], 3, "{view:#}");
    let probes = probed(&view);
    assert!(
        !probes.contains(&4),
        "the comparison measured the bad end: {probes:?}"
    );
    assert!(probes.len() <= 2, "{probes:?}");
    // Its page and the dashboard link the comparison it started from.
    let link = format!("<a href=\"/comparisons/{range}\">comparison {range}</a>");
    let html = page(&app, &format!("/bisections/{id}")).await;
    assert!(html.contains(&link), "{html}");
    assert!(text(&html).contains(&format!("started from comparison {range}")));
    let html = page(&app, "/").await;
    assert!(row(&html, &format!("/bisections/{id}")).contains(&format!("comparison {range}")));
    assert!(html.contains(&link), "{html}");
}

#[sqlx::test(migrations = "../migrations")]
async fn bisections_that_cannot_start_are_refused_with_the_reason(pool: PgPool) {
    let (repo, ids) = linear(2);
    let mirrors = tempfile::tempdir().unwrap();
    let app = app(pool, mirrors.path()).await;
    let url = repo.path().to_str().unwrap();
    let refused = |body: Value| {
        let app = &app;
        async move {
            let a = app.post("/api/v1/bisections", &app.ci, body).await;
            assert_eq!(a.status, StatusCode::UNPROCESSABLE_ENTITY, "{a:?}");
            a.error().to_string()
        }
    };
    let mut body = request(url, &ids[0], "master");
    body["workload"] = json!("open9");
    assert!(refused(body).await.starts_with("unknown workload `open9`"));
    let mut body = request(url, &ids[0], "master");
    body["params"]["nr_task"] = json!([1, 2]);
    assert!(refused(body).await.contains("the one task count"));
    let body = request(url, &ids[2], &ids[0]);
    assert!(refused(body).await.contains("it has no commits"));
    let mut body = request(url, &ids[0], "master");
    body["machine"] = json!("lab-9");
    assert!(refused(body).await.contains("unknown machine `lab-9`"));
    let a = app
        .post(
            "/api/v1/bisections",
            &app.runner,
            request(url, &ids[0], "master"),
        )
        .await;
    assert_eq!(a.status, StatusCode::FORBIDDEN, "{a:?}");
    let a = app
        .post(
            "/api/v1/bisections",
            &app.ci,
            json!({ "comparison": 99, "workload": "open1" }),
        )
        .await;
    assert_eq!(a.status, StatusCode::NOT_FOUND, "{a:?}");
    assert_eq!(app.count("bisections").await, 0);
}

#[sqlx::test(migrations = "../migrations")]
async fn a_range_too_long_to_measure_commit_by_commit_is_bisected(pool: PgPool) {
    let n = mbox::prefix::MAX_STEPS + 1;
    let (repo, ids) = linear(n);
    let mirrors = tempfile::tempdir().unwrap();
    let app = app(pool, mirrors.path()).await;
    let url = repo.path().to_str().unwrap();
    // Bisected, as the README says: every commit is a candidate, and the
    // first probe measures the bad end.
    let id = start(&app, request(url, &ids[0], "master")).await;
    let view = bisection(&app, id).await;
    assert_eq!(view["commits"].as_array().unwrap().len(), n, "{view}");
    assert_eq!(probed(&view), [n as u64]);
    // Commit by commit it is refused, and told what to do instead.
    let a = app
        .post(
            "/api/v1/comparisons",
            &app.ci,
            json!({
                "base": { "kind": "git", "url": url, "commit": ids[0] },
                "range": format!("{}..master", ids[0]),
                "workloads": ["open1"],
                "params": { "nr_task": [1], "seconds": 5, "warmup_seconds": 1 },
                "runs": 3,
            }),
        )
        .await;
    assert_eq!(a.status, StatusCode::UNPROCESSABLE_ENTITY, "{a:?}");
    assert!(
        a.error()
            .contains(&format!("up to 200 patches; this one has {n}"))
            && a.error().contains("bisect it"),
        "{}",
        a.error()
    );
}
