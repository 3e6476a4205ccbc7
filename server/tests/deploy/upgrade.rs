//! A rolling upgrade: the server of the release before (built from the
//! newest commit with other migrations, `testkit::previous_release`)
//! serves a database, the new server migrates it while the old one runs,
//! and the old one goes on taking runs, finishing jobs and answering
//! pages on the new schema; then both serve it side by side. The rule
//! that makes it so (migrations expand, then contract a release later) is
//! in the README, "Upgrading".

use patchperf_testkit::database_url;
use patchperf_testkit::previous_release::{self, PreviousServer};
use sqlx::PgPool;

use crate::client::{Client, NEW, run, serve, stop};

#[sqlx::test(migrations = false)]
async fn the_release_before_keeps_serving_while_the_new_one_migrates_under_it(pool: PgPool) {
    let url = database_url(&pool);
    tokio::task::spawn_blocking(move || rolling_upgrade(&url))
        .await
        .unwrap();
}

fn rolling_upgrade(url: &str) {
    // Without the history (a tarball, a shallow clone) there is no release
    // before to build; a build that fails is a failure.
    if let Err(why) = previous_release::previous_commit() {
        eprintln!("skipped: no release before to build: {why}");
        return;
    }
    let previous: PreviousServer = previous_release::server().unwrap_or_else(|e| panic!("{e}"));
    let old = previous.binary.to_str().unwrap();
    eprintln!("the release before: {} ({old})", previous.commit);

    // The old server makes the database its own and starts serving.
    let (old_server, old_base) = serve(old, url).unwrap();
    let token = |kind: &str| {
        // The old release's spelling, which the new one keeps as an alias.
        let out = run(
            old,
            &["token", "create", "--kind", kind, "--name", kind],
            url,
        );
        String::from_utf8_lossy(&out.stdout).trim().to_string()
    };
    let (runner, ci) = (token("runner"), token("ci"));
    let mut old_client = Client {
        base: old_base,
        runner,
        ci,
        machine: 0,
    };
    old_client.register("rack-7");
    let first = old_client.submit("fs: before the upgrade");
    assert!(old_client.run_one_job().is_some());

    // The new release migrates the database under the running old one,
    // saying what it applied; `--status` then has nothing pending, and a
    // second pass nothing to apply.
    let said = String::from_utf8_lossy(&run(NEW, &["migrate"], url).stdout).to_string();
    assert!(said.starts_with("applied "), "{said}");
    assert!(said.contains("the schema is at "), "{said}");
    let status =
        String::from_utf8_lossy(&run(NEW, &["migrate", "--status"], url).stdout).to_string();
    assert!(
        status.starts_with("applied 20261130000000 foundation\n"),
        "{status}"
    );
    assert!(
        status.ends_with("\n0 pending of ") || status.contains("\n0 pending of "),
        "{status}"
    );
    let again = String::from_utf8_lossy(&run(NEW, &["migrate"], url).stdout).to_string();
    assert!(
        again.starts_with("nothing to apply: the schema is at "),
        "{again}"
    );

    // The old server goes on: the rest of the comparison, a new one, pages.
    while old_client.run_one_job().is_some() {}
    let before = old_client.verdict(first);
    assert_eq!(before["verdict"]["overall"], "improvement", "{before}");
    let second = old_client.submit("fs: during the upgrade");
    while old_client.run_one_job().is_some() {}
    old_client.verdict(second);
    for path in [
        "/".to_string(),
        format!("/comparisons/{first}"),
        format!("/api/v1/comparisons/{first}/report.txt"),
        "/machines/rack-7".to_string(),
    ] {
        let (status, body) = old_client.get(&path);
        assert_eq!(status, 200, "old server, {path}: {body}");
    }

    // The new server beside it reads the same verdicts.
    let (new_server, new_base) = serve(NEW, url).unwrap();
    let new_client = Client {
        base: new_base,
        runner: old_client.runner.clone(),
        ci: old_client.ci.clone(),
        ..old_client
    };
    for id in [first, second] {
        assert_eq!(new_client.verdict(id)["verdict"]["overall"], "improvement");
    }
    // A comparison the new one stores (its setup as one value) the old one
    // claims, measures and shows as it asked: the setting columns it reads
    // are kept in step with the value. Each server shows each comparison
    // with the same setup, whichever stored it.
    let third = new_client.submit("fs: after the upgrade");
    while old_client.run_one_job().is_some() {}
    assert_eq!(
        old_client.verdict(third)["verdict"]["overall"],
        "improvement"
    );
    let setup = |v: &serde_json::Value| {
        ["workloads", "runs_per_side", "max_runs_per_side", "backend"]
            .map(|field| v[field].clone())
            .to_vec()
    };
    for id in [first, third] {
        let (old_view, new_view) = (old_client.verdict(id), new_client.verdict(id));
        assert_eq!(setup(&old_view), setup(&new_view), "comparison {id}");
        assert_eq!(new_view["backend"], "tcg-icount", "{new_view}");
        assert_eq!(new_view["workloads"], serde_json::json!(["dup1"]));
        assert_eq!(old_view["config_fragment"], new_view["config_fragment"]);
    }
    stop(old_server);

    // An old server started again on the new schema: a release that
    // tolerates migrations newer than its own must start.
    if previous.lib_rs.contains("ignore_missing: true") {
        let (again, _) = serve(old, url)
            .unwrap_or_else(|e| panic!("the release before did not start on the new schema: {e}"));
        stop(again);
    } else {
        eprintln!(
            "the release before ({}) predates starting on a newer schema; not started again",
            previous.commit
        );
    }
    stop(new_server);
}
