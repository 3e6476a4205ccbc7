//! `patchperf-server serve` with no DATABASE_URL creates, starts, uses and
//! cleanly stops a private Postgres under its data directory.

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::os::unix::fs::PermissionsExt;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

fn healthz(port: u16) -> Option<String> {
    let mut s = TcpStream::connect(("127.0.0.1", port)).ok()?;
    s.set_read_timeout(Some(Duration::from_secs(5))).ok()?;
    s.write_all(b"GET /healthz HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n")
        .ok()?;
    let mut answer = String::new();
    s.read_to_string(&mut answer).ok()?;
    Some(answer)
}

#[test]
fn serve_without_database_url_runs_its_own_postgres_and_stops_it() {
    if let Err(e) = patchperf_server::postgres::find_bin() {
        println!("skipped: {e}");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    // The cluster runs as the postgres user when we are root; it must be
    // able to reach the data directory.
    std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
    let data_dir = dir.path().join("data");
    let port = TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();

    let mut server = Command::new(env!("CARGO_BIN_EXE_patchperf-server"))
        .args([
            "serve",
            "--listen",
            &format!("127.0.0.1:{port}"),
            "--data-dir",
        ])
        .arg(&data_dir)
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
            let mut err = String::new();
            server
                .stderr
                .take()
                .unwrap()
                .read_to_string(&mut err)
                .unwrap();
            panic!("server exited with {status}: {err}");
        }
        assert!(
            started.elapsed() < Duration::from_secs(120),
            "no /healthz after 120 s"
        );
        std::thread::sleep(Duration::from_millis(200));
    };
    assert!(answer.starts_with("HTTP/1.1 200"), "{answer}");
    let pid_file = data_dir.join("pg/data/postmaster.pid");
    assert!(pid_file.exists(), "the private cluster is running");

    let kill = Command::new("kill")
        .args(["-TERM", &server.id().to_string()])
        .status()
        .unwrap();
    assert!(kill.success());
    let status = server.wait().unwrap();
    let mut err = String::new();
    server
        .stderr
        .take()
        .unwrap()
        .read_to_string(&mut err)
        .unwrap();
    assert!(status.success(), "exit {status}: {err}");
    assert!(
        !pid_file.exists(),
        "Postgres still running after shutdown: {err}"
    );
    assert!(err.contains("private Postgres stopped"), "{err}");
}
