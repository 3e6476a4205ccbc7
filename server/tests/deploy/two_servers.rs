//! Two servers on one Postgres, the way a lab grows (README, "Several
//! servers"): both real binaries, every runner and CI call going to one or
//! the other. Under load (four runners racing for the jobs of twelve
//! comparisons, each runner's calls alternating between the servers) no
//! job is handed out twice and every one is done at its first attempt;
//! each queued mail reaches the relay once although both servers' senders
//! run; and with every report to build again, each is built once, by one
//! of the two (their `/metrics` counters add up to the number of
//! reports). A bisection both servers' drivers advance queues each probe
//! once and ends; a tracked tree's new head pushed to both at once is
//! measured once.

use std::collections::BTreeSet;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use patchperf_testkit::smtp::{Relay, header};
use patchperf_testkit::{database_url, free_port, openmetrics};
use sqlx::PgPool;

use crate::client::{Client, NEW, run, serve_with, stop};
use crate::git_repo::{commit_file, linear};

const RUNNERS: usize = 4;
const COMPARISONS: usize = 12;
/// Jobs a comparison of 3 runs a side is split into.
const JOBS_EACH: usize = 3;
const MAILS: i64 = 20;

struct Lab {
    url: String,
    runner: String,
    ci: String,
    admin: String,
    extra: Vec<String>,
}

impl Lab {
    /// The database at `url` migrated, a token of each kind minted on it
    /// with the binary, and `extra` flags for every server.
    fn new(url: String, extra: Vec<String>) -> Lab {
        run(NEW, &["migrate"], &url);
        let token = |kind: &str| {
            let out = run(
                NEW,
                &["token", "create", "--kind", kind, "--label", kind],
                &url,
            );
            String::from_utf8_lossy(&out.stdout).trim().to_string()
        };
        Lab {
            runner: token("runner"),
            ci: token("ci"),
            admin: token("admin"),
            extra,
            url,
        }
    }

    fn serve(&self) -> (std::process::Child, String) {
        let extra: Vec<&str> = self.extra.iter().map(String::as_str).collect();
        serve_with(NEW, &self.url, &extra).unwrap()
    }

    fn client(&self, base: &str) -> Client {
        Client {
            base: base.to_string(),
            runner: self.runner.clone(),
            ci: self.ci.clone(),
            machine: 0,
        }
    }

    /// Reports built by the server at `base` since it started.
    fn report_builds(&self, base: &str) -> f64 {
        let mut answer = ureq::get(&format!("{base}/metrics"))
            .header("authorization", &format!("Bearer {}", self.admin))
            .call()
            .unwrap();
        let text = answer.body_mut().read_to_string().unwrap();
        openmetrics::value(
            &openmetrics::parse(&text),
            "patchperf_report_builds_total",
            &[],
        )
        .unwrap()
    }
}

/// Each runner registers through one server, then runs jobs until none is
/// left for it, claiming through the servers in turn; every job id it ran.
fn race(lab: &Lab, bases: [&str; 2]) -> Vec<i64> {
    let ran = Arc::new(Mutex::new(Vec::new()));
    std::thread::scope(|scope| {
        for r in 0..RUNNERS {
            let ran = Arc::clone(&ran);
            scope.spawn(move || {
                let mut first = lab.client(bases[r % 2]);
                first.register(&format!("rack-{r}"));
                let other = Client {
                    base: bases[(r + 1) % 2].to_string(),
                    ..first.clone()
                };
                let clients = [first, other];
                for turn in 0.. {
                    match clients[turn % 2].run_one_job() {
                        Some(job) => ran.lock().unwrap().push(job),
                        None => break,
                    }
                }
            });
        }
    });
    Arc::try_unwrap(ran).unwrap().into_inner().unwrap()
}

fn wait_until(what: &str, mut done: impl FnMut() -> bool) {
    let started = Instant::now();
    while !done() {
        assert!(started.elapsed() < Duration::from_secs(120), "{what}");
        std::thread::sleep(Duration::from_millis(250));
    }
}

fn count_sent(relay: &Relay) -> usize {
    relay
        .mails()
        .iter()
        .filter(|(headers, _)| header(headers, "subject").starts_with("two servers, mail"))
        .count()
}

async fn count(pool: &PgPool, sql: &str) -> i64 {
    sqlx::query_scalar(sql).fetch_one(pool).await.unwrap()
}

#[sqlx::test(migrations = false)]
async fn two_servers_on_one_database_do_nothing_twice(pool: PgPool) {
    let url = database_url(&pool);
    let dir = tempfile::tempdir().unwrap();
    let relay = Relay::start(free_port(), dir.path());
    let extra = vec![
        "--smtp-url".into(),
        format!("smtp://127.0.0.1:{}", relay.port),
        "--mail-from".into(),
        "patchperf <perf@lab.test>".into(),
    ];
    let lab = tokio::task::spawn_blocking(move || Lab::new(url, extra));
    let lab = lab.await.unwrap();
    let lab = Arc::new(lab);

    // Under load: claims through both, never one job twice.
    let (servers, ran) = {
        let lab = Arc::clone(&lab);
        tokio::task::spawn_blocking(move || {
            let (a, base_a) = lab.serve();
            let (b, base_b) = lab.serve();
            for i in 0..COMPARISONS {
                let ci = lab.client(if i % 2 == 0 { &base_a } else { &base_b });
                ci.submit_for(&format!("fs: change {i}"), None);
            }
            let ran = race(&lab, [&base_a, &base_b]);
            ((a, base_a, b, base_b), ran)
        })
        .await
        .unwrap()
    };
    let distinct: BTreeSet<i64> = ran.iter().copied().collect();
    assert_eq!(distinct.len(), ran.len(), "a job handed out twice: {ran:?}");
    assert_eq!(ran.len(), COMPARISONS * JOBS_EACH);
    let first_time = count(
        &pool,
        "SELECT count(*) FROM jobs WHERE state = 'done' AND attempt = 1",
    )
    .await;
    assert_eq!(first_time, (COMPARISONS * JOBS_EACH) as i64);

    // Mail: both senders run; each message goes out once.
    sqlx::query(
        "INSERT INTO outbox (key, channel, recipient, subject, body, mail_to)
         SELECT 'two-servers:' || g, 'mail', 'dev' || g || '@lab.test',
                'two servers, mail ' || g, 'one of twenty', 'dev' || g || '@lab.test'
         FROM generate_series(1, $1::bigint) g",
    )
    .bind(MAILS)
    .execute(&pool)
    .await
    .unwrap();
    let relay = tokio::task::spawn_blocking(move || {
        wait_until("every mail at the relay", || {
            count_sent(&relay) >= MAILS as usize
        });
        // A second copy would come within a sender's poll (5 s).
        std::thread::sleep(Duration::from_secs(6));
        relay
    })
    .await
    .unwrap();
    // Only the mails queued here (a comparison's own would be told apart).
    let subjects: Vec<String> = relay
        .mails()
        .iter()
        .map(|(headers, _)| header(headers, "subject").to_string())
        .filter(|s| s.starts_with("two servers, mail"))
        .collect();
    let distinct: BTreeSet<&String> = subjects.iter().collect();
    assert_eq!(subjects.len(), MAILS as usize, "{subjects:?}");
    assert_eq!(distinct.len(), subjects.len(), "a mail sent twice");
    assert_eq!(
        count(
            &pool,
            "SELECT count(*) FROM outbox WHERE state = 'sent' AND key LIKE 'two-servers:%'"
        )
        .await,
        MAILS
    );

    // Reports: with every one to build again and both servers started
    // afresh (nothing in their memory), each is built by one of them.
    let (a, _, b, _) = servers;
    tokio::task::spawn_blocking(move || {
        stop(a);
        stop(b);
    })
    .await
    .unwrap();
    sqlx::query("DELETE FROM comparison_reports")
        .execute(&pool)
        .await
        .unwrap();
    sqlx::query("INSERT INTO stale_reports (comparison_id) SELECT id FROM comparisons ON CONFLICT DO NOTHING")
        .execute(&pool)
        .await
        .unwrap();
    let lab2 = Arc::clone(&lab);
    let ((a, base_a), (b, base_b)) =
        tokio::task::spawn_blocking(move || (lab2.serve(), lab2.serve()))
            .await
            .unwrap();
    let started = Instant::now();
    loop {
        let built = count(&pool, "SELECT count(*) FROM comparison_reports").await;
        let stale = count(&pool, "SELECT count(*) FROM stale_reports").await;
        if built == COMPARISONS as i64 && stale == 0 {
            break;
        }
        assert!(
            started.elapsed() < Duration::from_secs(120),
            "{built} reports built, {stale} to build"
        );
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
    let builds = tokio::task::spawn_blocking(move || {
        let builds = lab.report_builds(&base_a) + lab.report_builds(&base_b);
        stop(a);
        stop(b);
        builds
    })
    .await
    .unwrap();
    assert_eq!(
        builds, COMPARISONS as f64,
        "reports built over both servers"
    );
}

/// Two servers, each with mirrors of its own, that may read repositories
/// on this machine, on a [`Lab`] of `url`.
fn lab_on(url: &str, mirrors: &std::path::Path) -> (Lab, [(std::process::Child, String); 2]) {
    let lab = Lab::new(url.to_string(), vec!["--local-git".into()]);
    let servers = ["a", "b"].map(|name| {
        let dir = mirrors.join(name);
        let mut extra: Vec<&str> = lab.extra.iter().map(String::as_str).collect();
        extra.extend(["--git-dir", dir.to_str().unwrap()]);
        serve_with(NEW, url, &extra).unwrap()
    });
    (lab, servers)
}

#[sqlx::test(migrations = false)]
async fn two_servers_advance_a_bisection_and_a_tree_once(pool: PgPool) {
    let url = database_url(&pool);
    let mirrors = tempfile::tempdir().unwrap();
    let (repo, ids) = linear(8);
    let repo_path = repo.path().to_path_buf();
    let mirrors_path = mirrors.path().to_path_buf();
    let (bisection, tree, servers) = tokio::task::spawn_blocking(move || {
        let (lab, servers) = lab_on(&url, &mirrors_path);
        let [(_, a), (_, b)] = &servers;
        let (a, b) = (a.clone(), b.clone());
        let repo_url = repo_path.to_str().unwrap().to_string();

        // A bisection of the 8 commits, started through one server; a
        // runner alternating between both takes each probe's jobs until
        // it ends (every probe measures +5%, so each counts as bad).
        let ci = lab.client(&a);
        let body = serde_json::json!({
            "base": { "kind": "git", "url": repo_url, "commit": ids[0] },
            "bad": ids[8],
            "workload": "dup1",
            "params": { "nr_task": [1], "seconds": 5, "warmup_seconds": 1 },
            "runs": 3,
            "order_seed": 11,
        });
        let (status, answer) = ci.call("/api/v1/bisections", &lab.ci, &[], body);
        assert_eq!(status, 201, "{answer}");
        let bisection = answer["id"].as_i64().unwrap();
        let mut first = lab.client(&a);
        first.register("rack-0");
        let clients = [
            first.clone(),
            Client {
                base: b.clone(),
                ..first
            },
        ];
        let mut turn = 0;
        wait_until("the bisection ends", || {
            turn += 1;
            while clients[turn % 2].run_one_job().is_some() {}
            let (_, body) = clients[turn % 2].get(&format!("/api/v1/bisections/{bisection}"));
            let v: serde_json::Value = serde_json::from_str(&body).unwrap();
            v["status"] != "running"
        });

        // A tree on the same repository, then a new head pushed to both
        // servers at once.
        let body = serde_json::json!({
            "name": "vfs",
            "url": repo_url,
            "branch": "master",
            "workloads": ["dup1"],
            "params": { "nr_task": [1], "seconds": 5, "warmup_seconds": 1 },
            "runs": 3,
        });
        let (status, answer) = ci.call("/api/v1/trees", &lab.ci, &[], body);
        assert_eq!(status, 201, "{answer}");
        let tree = answer["tree"]["id"].as_i64().unwrap();
        commit_file(&repo_path, "fs/new.c", "int new;\n", "fs: new head");
        std::thread::scope(|scope| {
            for base in [&a, &b] {
                let lab = &lab;
                scope.spawn(move || {
                    let c = lab.client(base);
                    let (status, answer) = c.call(
                        &format!("/api/v1/trees/{tree}/push"),
                        &lab.ci,
                        &[],
                        serde_json::json!({}),
                    );
                    assert_eq!(status, 200, "{answer}");
                });
            }
        });
        (bisection, tree, servers)
    })
    .await
    .unwrap();

    let repeated = count(
        &pool,
        &format!(
            "SELECT count(*) FROM (SELECT probe FROM comparisons WHERE bisection_id = {bisection}
                                   GROUP BY probe HAVING count(*) > 1) twice"
        ),
    )
    .await;
    assert_eq!(repeated, 0, "a probe queued twice");
    let status: String = sqlx::query_scalar("SELECT status FROM bisections WHERE id = $1")
        .bind(bisection)
        .fetch_one(&pool)
        .await
        .unwrap();
    assert_eq!(status, "done");
    // Position 0 is the head when the tree was added (the range's base),
    // 1 the new head; one range comparison measured it.
    let commits = count(
        &pool,
        &format!("SELECT count(*) FROM tree_commits WHERE tree_id = {tree}"),
    )
    .await;
    let measured = count(
        &pool,
        &format!("SELECT count(*) FROM comparisons WHERE tree_id = {tree} AND parent_id IS NULL"),
    )
    .await;
    assert_eq!((commits, measured), (2, 1), "the new head measured once");
    tokio::task::spawn_blocking(move || {
        for (server, _) in servers {
            stop(server);
        }
    })
    .await
    .unwrap();
    drop(repo);
}
