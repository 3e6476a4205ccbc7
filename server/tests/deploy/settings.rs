//! The server's settings file: `deploy/server.toml.example` names every
//! flag of `serve` and each of its values is accepted; the unit reads it;
//! and a real `patchperf-server serve` takes its settings from the file,
//! the environment over the file and a flag over both.

use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use clap::CommandFactory;
use patchperf_common::settings;
use patchperf_testkit::deploy::deploy_dir;
use patchperf_testkit::{database_url, free_port};
use sqlx::PgPool;

/// The example with every setting uncommented.
fn uncommented() -> String {
    std::fs::read_to_string(deploy_dir().join("server.toml.example"))
        .unwrap()
        .lines()
        .map(|l| {
            l.strip_prefix('#')
                .filter(|k| k.contains(" = "))
                .unwrap_or(l)
        })
        .map(|l| format!("{l}\n"))
        .collect()
}

#[test]
fn the_example_names_every_flag_of_serve_and_each_value_is_accepted() {
    // Built as the parser builds it: with the global flags on `serve`.
    let mut cli = patchperf_server::cli::Cli::command();
    cli.build();
    let serve = cli.find_subcommand("serve").unwrap();
    let parsed = settings::parse(&uncommented(), serve).unwrap();
    for arg in serve.get_arguments() {
        let Some(long) = arg.get_long() else { continue };
        if ["config", "help"].contains(&long) {
            continue;
        }
        assert!(
            parsed.iter().any(|s| s.key == long),
            "--{long} is not in deploy/server.toml.example"
        );
    }
    // Values as the flags read them: the whole file on a real command line.
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("server.toml");
    // smtp-url requires mail-from: both are in the example.
    std::fs::write(&file, uncommented()).unwrap();
    let args = [
        "patchperf-server",
        "serve",
        "--config",
        file.to_str().unwrap(),
    ]
    .map(Into::into)
    .to_vec();
    let cli = settings::parse_command_line::<patchperf_server::cli::Cli, _>(
        args,
        &patchperf_server::cli::SETTINGS,
        |p| std::fs::File::open(p),
    )
    .unwrap();
    let patchperf_server::cli::Command::Serve(serve) = cli.command else {
        panic!()
    };
    assert_eq!(serve.db.data_dir, Path::new("/var/lib/patchperf"));
    assert_eq!(serve.lease, std::time::Duration::from_secs(120));
    assert!(!serve.private);
    assert_eq!(cli.log_format, patchperf_server::cli::LogFormat::Text);

    // Durations are spelled as everywhere (`2m`, `90d`); a file written
    // before, with the keys and bare numbers of then, means what it meant.
    let day = 86_400;
    for (text, lease, prune, age) in [
        (
            "lease = \"2m\"\nprune-after = \"90d\"\ncalibration-max-age = \"7d\"\n",
            120,
            90 * day,
            7 * day,
        ),
        (
            "lease-seconds = 300\nprune-after-days = 30\ncalibration-max-age-days = 14\n",
            300,
            30 * day,
            14 * day,
        ),
    ] {
        std::fs::write(&file, text).unwrap();
        let args = [
            "patchperf-server",
            "serve",
            "--config",
            file.to_str().unwrap(),
        ]
        .map(Into::into)
        .to_vec();
        let cli = settings::parse_command_line::<patchperf_server::cli::Cli, _>(
            args,
            &patchperf_server::cli::SETTINGS,
            |p| std::fs::File::open(p),
        )
        .unwrap_or_else(|e| panic!("{text}: {e:?}"));
        let patchperf_server::cli::Command::Serve(serve) = cli.command else {
            panic!()
        };
        let secs = |d: std::time::Duration| d.as_secs();
        assert_eq!(
            (
                secs(serve.lease),
                secs(serve.prune_after),
                secs(serve.calibration_max_age)
            ),
            (lease, prune, age),
            "{text}"
        );
    }
}

#[test]
fn the_unit_reads_the_settings_file() {
    let unit =
        std::fs::read_to_string(deploy_dir().join("systemd/patchperf-server.service")).unwrap();
    let exec = unit.lines().find(|l| l.starts_with("ExecStart=")).unwrap();
    assert!(
        exec.ends_with(" serve --config /etc/patchperf/server.toml"),
        "{exec}"
    );
}

/// `patchperf-server serve` with `args` and `env`, no other settings.
fn serve(args: &[&str], env: &[(&str, String)]) -> Child {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_patchperf-server"));
    cmd.arg("serve").args(args);
    for (name, _) in std::env::vars() {
        if name.starts_with("PATCHPERF_") || name == "DATABASE_URL" {
            cmd.env_remove(name);
        }
    }
    cmd.envs(env.iter().map(|(k, v)| (k, v)))
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap()
}

/// Waits until the server answers /healthz on `port` (or exits).
fn answers_on(server: &mut Child, port: u16) {
    let started = Instant::now();
    let url = format!("http://127.0.0.1:{port}/healthz");
    loop {
        if let Ok(answer) = ureq::get(&url).call() {
            assert_eq!(answer.status(), 200);
            return;
        }
        if let Some(status) = server.try_wait().unwrap() {
            let mut err = String::new();
            std::io::Read::read_to_string(&mut server.stderr.take().unwrap(), &mut err).unwrap();
            panic!("server exited with {status}: {err}");
        }
        assert!(
            started.elapsed() < Duration::from_secs(60),
            "nothing on {port}"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
}

fn stop(mut server: Child) {
    let killed = Command::new("kill")
        .args(["-TERM", &server.id().to_string()])
        .status()
        .unwrap();
    assert!(killed.success());
    assert!(server.wait().unwrap().success());
}

#[sqlx::test(migrations = false)]
async fn serve_takes_the_file_then_the_environment_then_the_flag(pool: PgPool) {
    let url = database_url(&pool);
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("server.toml");
    let (from_file, from_env, from_flag) = (free_port(), free_port(), free_port());
    std::fs::write(
        &file,
        format!("database-url = \"{url}\"\nlisten = \"127.0.0.1:{from_file}\"\n"),
    )
    .unwrap();
    let config = file.to_str().unwrap().to_string();
    tokio::task::spawn_blocking(move || {
        let mut s = serve(&["--config", &config], &[]);
        answers_on(&mut s, from_file);
        stop(s);
        let env = [("PATCHPERF_LISTEN", format!("127.0.0.1:{from_env}"))];
        let mut s = serve(&["--config", &config], &env);
        answers_on(&mut s, from_env);
        stop(s);
        let listen = format!("127.0.0.1:{from_flag}");
        let mut s = serve(&["--config", &config, "--listen", &listen], &env);
        answers_on(&mut s, from_flag);
        stop(s);
        // PATCHPERF_CONFIG names the file as --config does.
        let env = [("PATCHPERF_CONFIG", config.clone())];
        let mut s = serve(&[], &env);
        answers_on(&mut s, from_file);
        stop(s);
    })
    .await
    .unwrap();
}

#[test]
fn an_unknown_key_stops_the_server_before_it_starts_naming_the_key_and_the_file() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("server.toml");
    std::fs::write(&file, "listen = \"127.0.0.1:1\"\nlease_secs = 5\n").unwrap();
    let out = serve(&["--config", file.to_str().unwrap()], &[])
        .wait_with_output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains(file.to_str().unwrap()) && err.contains("unknown key `lease_secs`"),
        "{err}"
    );
}

/// A setting that cannot work stops `serve` before it starts, with exit
/// status 2 (the unit does not restart on it): a lease of nothing, a
/// public URL that is no absolute http(s) URL (links in mail would be
/// broken), from a flag or from the file.
#[test]
fn a_lease_of_nothing_or_a_public_url_that_is_not_one_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("server.toml");
    std::fs::write(&file, "lease-seconds = 0\n").unwrap();
    let file = file.to_str().unwrap().to_string();
    for args in [
        vec!["--lease-seconds", "0"],
        vec!["--lease-seconds", "5"],
        vec!["--lease", "2d"],
        vec!["--public-url", "not a url"],
        vec!["--public-url", "ftp://perf.example.org"],
        vec!["--public-url", "https://perf.example.org/?page=1"],
        vec!["--config", &file],
    ] {
        let line: Vec<std::ffi::OsString> = ["patchperf-server", "serve"]
            .into_iter()
            .chain(args.iter().copied())
            .map(Into::into)
            .collect();
        let parsed = settings::parse_command_line::<patchperf_server::cli::Cli, _>(
            line,
            &patchperf_server::cli::SETTINGS,
            |p| std::fs::File::open(p),
        );
        match parsed {
            Err(settings::Failure::Usage(e)) => assert_eq!(e.exit_code(), 2, "{args:?}: {e}"),
            // `main` exits 2 on a file's failure too, naming the file.
            Err(settings::Failure::File(why)) => {
                assert!(why.contains("between 10 s and 1 day"), "{args:?}: {why}");
            }
            Ok(_) => panic!("{args:?} accepted"),
        }
    }
    for ok in [
        "https://perf.example.org",
        "http://10.0.0.5:8080/patchperf/",
    ] {
        let line = ["patchperf-server", "serve", "--public-url", ok]
            .map(Into::into)
            .to_vec();
        assert!(
            settings::parse_command_line::<patchperf_server::cli::Cli, _>(
                line,
                &patchperf_server::cli::SETTINGS,
                |p| std::fs::File::open(p),
            )
            .is_ok(),
            "{ok}"
        );
    }
}

/// A `--git-dir` the server cannot write stops it at start, naming it,
/// instead of answering the first tree 500 (issue 42).
#[sqlx::test(migrations = "../migrations")]
async fn an_unwritable_git_dir_stops_the_server_at_start(pool: PgPool) {
    let dir = tempfile::tempdir().unwrap();
    // Below a plain file: no user can make it, root included.
    let file = dir.path().join("file");
    std::fs::write(&file, "").unwrap();
    let git_dir = file.join("mirrors");
    let url = database_url(&pool);
    let out = tokio::task::spawn_blocking(move || {
        Command::new(env!("CARGO_BIN_EXE_patchperf-server"))
            .args(["serve", "--listen", "127.0.0.1:0", "--git-dir"])
            .arg(&git_dir)
            .env("DATABASE_URL", url)
            .env_remove("PATCHPERF_CONFIG")
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .output()
            .unwrap()
    })
    .await
    .unwrap();
    assert!(!out.status.success(), "{out:?}");
    let said = String::from_utf8_lossy(&out.stderr);
    assert!(
        said.contains("/file/mirrors: this user cannot write there"),
        "{said}"
    );
}
