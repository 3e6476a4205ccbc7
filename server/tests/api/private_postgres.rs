//! `patchperf-server serve` with no DATABASE_URL creates, starts, uses and
//! cleanly stops a private Postgres under its data directory.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use patchperf_testkit::free_port;

fn healthz(port: u16) -> Option<String> {
    let mut s = TcpStream::connect(("127.0.0.1", port)).ok()?;
    s.set_read_timeout(Some(Duration::from_secs(5))).ok()?;
    s.write_all(b"GET /healthz HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n")
        .ok()?;
    let mut answer = String::new();
    s.read_to_string(&mut answer).ok()?;
    Some(answer)
}

/// A temporary directory the postgres user can reach (the cluster runs as
/// that user when we are root), with `data/` to serve from.
fn data_dir() -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
    let data_dir = dir.path().join("data");
    (dir, data_dir)
}

/// `patchperf-server serve` on `port` with `data_dir` and no DATABASE_URL,
/// once it answers /healthz.
fn serve(data_dir: &Path, port: u16) -> Child {
    let mut server = Command::new(env!("CARGO_BIN_EXE_patchperf-server"))
        .args([
            "serve",
            "--listen",
            &format!("127.0.0.1:{port}"),
            "--data-dir",
        ])
        .arg(data_dir)
        .env_remove("DATABASE_URL")
        .env_remove("PATCHPERF_DATA_DIR")
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();

    let started = Instant::now();
    let answer = loop {
        if let Some(answer) = healthz(port) {
            break answer;
        }
        if let Some(status) = server.try_wait().unwrap() {
            panic!("server exited with {status}: {}", stderr(&mut server));
        }
        assert!(
            started.elapsed() < Duration::from_secs(120),
            "no /healthz after 120 s"
        );
        std::thread::sleep(Duration::from_millis(200));
    };
    assert!(answer.starts_with("HTTP/1.1 200"), "{answer}");
    server
}

/// `patchperf-server ARGS --data-dir DATA_DIR` without DATABASE_URL, as
/// an admin runs a command against the server's cluster; its output.
fn admin(data_dir: &Path, args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_patchperf-server"))
        .args(args)
        .arg("--data-dir")
        .arg(data_dir)
        .env_remove("DATABASE_URL")
        .env_remove("PATCHPERF_DATA_DIR")
        .output()
        .unwrap()
}

fn stderr(server: &mut Child) -> String {
    let mut err = String::new();
    server
        .stderr
        .take()
        .unwrap()
        .read_to_string(&mut err)
        .unwrap();
    err
}

/// Stops the server with SIGTERM; returns its stderr once it exited 0.
fn terminate(mut server: Child) -> String {
    let kill = Command::new("kill")
        .args(["-TERM", &server.id().to_string()])
        .status()
        .unwrap();
    assert!(kill.success());
    let status = server.wait().unwrap();
    let err = stderr(&mut server);
    assert!(status.success(), "exit {status}: {err}");
    err
}

/// Stops a cluster a failed test left running, so it does not outlive the
/// test.
struct ClusterGuard(PathBuf);

impl Drop for ClusterGuard {
    fn drop(&mut self) {
        if !self.0.join("postmaster.pid").exists() {
            return;
        }
        let Ok(bin) = patchperf_server::postgres::find_bin(&self.0) else {
            return;
        };
        let as_postgres = Command::new("runuser")
            .args(["-u", "postgres", "--"])
            .arg(bin.join("pg_ctl"))
            .args(["stop", "-m", "immediate", "-D"])
            .arg(&self.0)
            .status();
        if !as_postgres.is_ok_and(|s| s.success()) {
            let _ = Command::new(bin.join("pg_ctl"))
                .args(["stop", "-m", "immediate", "-D"])
                .arg(&self.0)
                .status();
        }
    }
}

#[test]
fn serve_without_database_url_runs_its_own_postgres_and_stops_it() {
    if let Err(e) = patchperf_server::postgres::newest_installed() {
        println!("skipped: {e}");
        return;
    }
    let (_dir, data_dir) = data_dir();
    let _guard = ClusterGuard(data_dir.join("pg/data"));
    let server = serve(&data_dir, free_port());
    let pid_file = data_dir.join("pg/data/postmaster.pid");
    assert!(pid_file.exists(), "the private cluster is running");

    let err = terminate(server);
    assert!(
        !pid_file.exists(),
        "Postgres still running after shutdown: {err}"
    );
    assert!(err.contains("private Postgres stopped"), "{err}");
}

#[test]
fn a_cluster_left_running_by_a_crash_is_adopted_and_stopped() {
    if let Err(e) = patchperf_server::postgres::newest_installed() {
        println!("skipped: {e}");
        return;
    }
    let (_dir, data_dir) = data_dir();
    let _guard = ClusterGuard(data_dir.join("pg/data"));
    let pid_file = data_dir.join("pg/data/postmaster.pid");

    // The first server dies without a chance to stop its cluster.
    let mut crashed = serve(&data_dir, free_port());
    crashed.kill().unwrap();
    crashed.wait().unwrap();
    assert!(pid_file.exists(), "the cluster outlives the crash");

    // The next one finds it running, adopts it, and stops it on SIGTERM as
    // it would one it started.
    let server = serve(&data_dir, free_port());
    let err = terminate(server);
    assert!(err.contains("adopting"), "{err}");
    assert!(
        !pid_file.exists(),
        "adopted Postgres still running after shutdown: {err}"
    );
    assert!(err.contains("private Postgres stopped"), "{err}");
}

#[test]
fn a_command_beside_a_running_server_leaves_its_cluster_running() {
    if let Err(e) = patchperf_server::postgres::newest_installed() {
        println!("skipped: {e}");
        return;
    }
    let (_dir, data_dir) = data_dir();
    let _guard = ClusterGuard(data_dir.join("pg/data"));
    let pid_file = data_dir.join("pg/data/postmaster.pid");
    let port = free_port();
    let server = serve(&data_dir, port);

    let out = admin(
        &data_dir,
        &["token", "create", "--kind", "ci", "--label", "beside"],
    );
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{err}");
    assert!(!err.contains("adopting"), "{err}");
    assert!(pid_file.exists(), "the server's cluster was stopped: {err}");
    let answer = healthz(port).unwrap();
    assert!(answer.starts_with("HTTP/1.1 200"), "{answer}");

    let err = terminate(server);
    assert!(!pid_file.exists(), "{err}");
}

#[test]
fn admin_commands_on_a_directory_without_a_cluster_fail_and_create_nothing() {
    if let Err(e) = patchperf_server::postgres::newest_installed() {
        println!("skipped: {e}");
        return;
    }
    let (_dir, data_dir) = data_dir();
    for args in [
        &["token", "create", "--kind", "ci", "--label", "lost"][..],
        &["token", "list"],
        &["migrate"],
        &["prune", "--older-than-days", "90"],
    ] {
        let out = admin(&data_dir, args);
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success(), "{args:?} succeeded: {err}");
        assert!(
            out.stdout.is_empty(),
            "{args:?} printed {:?}",
            String::from_utf8_lossy(&out.stdout)
        );
        assert!(
            err.contains(&format!(
                "no patchperf database under {}",
                data_dir.join("pg").display()
            )) && err.contains("PATCHPERF_DATA_DIR"),
            "{args:?}: {err}"
        );
        assert!(
            !data_dir.exists(),
            "{args:?} created {}",
            data_dir.display()
        );
    }
}

/// The private cluster dying under a running server (killed, OOM, an
/// admin's `pg_ctl stop -m immediate`) ends the server unsuccessfully, so
/// its unit starts both again, instead of a process answering 503 for
/// ever (issue 42: /healthz said 503 for minutes while `Restart=` never
/// fired).
#[test]
fn the_private_cluster_dying_ends_the_server_unsuccessfully() {
    let Ok(bin) = patchperf_server::postgres::newest_installed() else {
        println!("skipped: no Postgres installed");
        return;
    };
    let (_dir, data_dir) = data_dir();
    let data = data_dir.join("pg/data");
    let _guard = ClusterGuard(data.clone());
    let mut server = serve(&data_dir, free_port());
    let stop = Command::new("runuser")
        .args(["-u", "postgres", "--"])
        .arg(bin.join("pg_ctl"))
        .args(["stop", "-m", "immediate", "-D"])
        .arg(&data)
        .status()
        .unwrap();
    assert!(stop.success());
    let started = Instant::now();
    let status = loop {
        if let Some(status) = server.try_wait().unwrap() {
            break status;
        }
        assert!(
            started.elapsed() < Duration::from_secs(60),
            "the server still runs 60 s after its Postgres stopped"
        );
        std::thread::sleep(Duration::from_millis(200));
    };
    let err = stderr(&mut server);
    assert!(!status.success(), "exit {status}: {err}");
    assert!(
        err.contains("the private Postgres stopped under the server"),
        "{err}"
    );
}

/// An admin command run as root against the service's cluster (a root
/// cron's `backup`, a `token create` with sudo) runs Postgres as the user
/// that owns the cluster and leaves it theirs (issue 42: it was handed to
/// `postgres`, and the service, running as its own user, could not start
/// it again).
#[test]
fn root_leaves_the_cluster_to_its_owner() {
    if patchperf_server::postgres::newest_installed().is_err() {
        println!("skipped: no Postgres installed");
        return;
    }
    let root = Command::new("id").arg("-u").output().unwrap();
    if String::from_utf8_lossy(&root.stdout).trim() != "0" {
        println!("skipped: not root");
        return;
    }
    let (_dir, data_dir) = data_dir();
    let _guard = ClusterGuard(data_dir.join("pg/data"));
    let server = serve(&data_dir, free_port());
    terminate(server);
    // The service's own user owns it, as on a lab's machine.
    let chown = Command::new("chown")
        .args(["-R", "nobody:"])
        .arg(data_dir.join("pg"))
        .status()
        .unwrap();
    assert!(chown.success());
    let owner = |path: &Path| {
        let out = Command::new("stat")
            .args(["-c", "%U"])
            .arg(path)
            .output()
            .unwrap();
        String::from_utf8_lossy(&out.stdout).trim().to_string()
    };
    let out = admin(
        &data_dir,
        &["token", "create", "--kind", "ci", "--label", "cron"],
    );
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{err}");
    for path in ["pg", "pg/data", "pg/data/base", "pg/run"] {
        assert_eq!(owner(&data_dir.join(path)), "nobody", "{path}");
    }
}
