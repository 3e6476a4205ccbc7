//! `deploy/Containerfile`, `deploy/compose.yaml` and
//! `deploy/patchperf.env.example` agree with each other and with the
//! server: the compose file is valid to the compose tool on this machine
//! (`docker compose`, else `docker-compose`), the server reaches the
//! compose file's Postgres, listens where the ports, the image and the
//! health checks look, keeps its data in a volume, and every setting the
//! server reads from its environment is named in the example.

use std::process::Command;

use clap::CommandFactory;
use patchperf_common::settings;
use patchperf_testkit::deploy::deploy_dir;
use yaml_rust2::{Yaml, YamlLoader};

fn read(name: &str) -> String {
    std::fs::read_to_string(deploy_dir().join(name)).unwrap_or_else(|e| panic!("{name}: {e}"))
}

fn compose() -> Yaml {
    YamlLoader::load_from_str(&read("compose.yaml"))
        .unwrap()
        .remove(0)
}

/// `docker compose` (the plugin) or `docker-compose`, whichever runs here.
fn compose_tool() -> Option<Vec<&'static str>> {
    [vec!["docker", "compose"], vec!["docker-compose"]]
        .into_iter()
        .find(|tool| {
            Command::new(tool[0])
                .args(&tool[1..])
                .arg("version")
                .output()
                .is_ok_and(|o| o.status.success())
        })
}

/// The compose file with the example settings, as the README starts it,
/// in a copy of the layout it expects (`deploy/` under the build context).
fn compose_config(env: &str) -> Option<Result<String, String>> {
    let tool = compose_tool()?;
    let root = tempfile::tempdir().unwrap();
    let deploy = root.path().join("deploy");
    std::fs::create_dir(&deploy).unwrap();
    for name in ["compose.yaml", "Containerfile"] {
        std::fs::copy(deploy_dir().join(name), deploy.join(name)).unwrap();
    }
    std::fs::write(deploy.join("patchperf.env"), env).unwrap();
    let out = Command::new(tool[0])
        .args(&tool[1..])
        .args(["-p", "patchperf", "-f", "deploy/compose.yaml", "--env-file"])
        .arg("deploy/patchperf.env")
        .arg("config")
        .current_dir(root.path())
        .output()
        .unwrap();
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    Some(if out.status.success() {
        Ok(text)
    } else {
        Err(text)
    })
}

#[test]
fn the_compose_file_is_valid_with_the_example_settings() {
    match compose_config(&read("patchperf.env.example")) {
        None => eprintln!("skipped: neither `docker compose` nor `docker-compose` runs here"),
        Some(Err(e)) => panic!("compose config: {e}"),
        Some(Ok(config)) => {
            // The password of the example reached both services.
            assert!(
                config.contains("postgres://patchperf:change-me@postgres:5432/patchperf"),
                "{config}"
            );
        }
    }
}

#[test]
fn the_compose_file_without_a_postgres_password_is_refused() {
    let env: String = read("patchperf.env.example")
        .lines()
        .filter(|l| !l.starts_with("POSTGRES_PASSWORD="))
        .map(|l| format!("{l}\n"))
        .collect();
    match compose_config(&env) {
        None => eprintln!("skipped: neither `docker compose` nor `docker-compose` runs here"),
        Some(Ok(config)) => panic!("accepted without POSTGRES_PASSWORD: {config}"),
        Some(Err(e)) => assert!(e.contains("POSTGRES_PASSWORD"), "{e}"),
    }
}

/// A setting of the server image's settings file, read as `serve` reads it.
fn image_setting(key: &str) -> String {
    let cli = patchperf_server::cli::Cli::command();
    let serve = cli.find_subcommand("serve").unwrap();
    let settings = settings::parse(&read("server.container.toml"), serve).unwrap();
    match &settings.iter().find(|s| s.key == key).unwrap().value {
        settings::Value::Text(v) => v.clone(),
        other => panic!("{key}: {other:?}"),
    }
}

fn s(y: &Yaml) -> &str {
    y.as_str().unwrap_or_else(|| panic!("not a string: {y:?}"))
}

/// `${VAR:?message}` → `VAR`.
fn variable(text: &str) -> &str {
    let start = text.find("${").expect("an interpolated variable") + 2;
    let end = start + text[start..].find([':', '}']).unwrap();
    &text[start..end]
}

#[test]
fn the_server_in_compose_reaches_its_postgres_and_keeps_its_data_in_a_volume() {
    let c = compose();
    let services = &c["services"];
    let (pg, server) = (&services["postgres"], &services["server"]);
    assert!(!pg.is_badvalue() && !server.is_badvalue(), "{c:?}");

    // DATABASE_URL names the postgres service, its user, password and db.
    let url = s(&server["environment"]["DATABASE_URL"]);
    let env = &pg["environment"];
    let (user, db) = (s(&env["POSTGRES_USER"]), s(&env["POSTGRES_DB"]));
    let password = variable(s(&env["POSTGRES_PASSWORD"]));
    let expected_prefix = format!("postgres://{user}:${{{password}");
    assert!(url.starts_with(&expected_prefix), "{url}");
    assert!(url.ends_with(&format!("}}@postgres:5432/{db}")), "{url}");
    assert_eq!(
        s(&server["depends_on"]["postgres"]["condition"]),
        "service_healthy"
    );

    // A named volume each, declared at the top.
    for (service, mount) in [
        (pg, "/var/lib/postgresql/data"),
        (server, image_setting("data-dir").as_str()),
    ] {
        let volumes = service["volumes"].as_vec().unwrap();
        let named = volumes
            .iter()
            .map(s)
            .find_map(|v| v.strip_suffix(&format!(":{mount}")))
            .unwrap_or_else(|| panic!("no volume at {mount}: {volumes:?}"));
        assert!(
            !c["volumes"][named].is_badvalue(),
            "volume {named} undeclared"
        );
    }

    // Health checks on both; the server's asks /healthz on the port the
    // image's settings file has it listen on, which is the one published
    // and exposed.
    let listen = image_setting("listen");
    let port = listen.rsplit_once(':').unwrap().1;
    let check: Vec<&str> = server["healthcheck"]["test"]
        .as_vec()
        .unwrap()
        .iter()
        .map(s)
        .collect();
    assert!(
        check.contains(&format!("http://127.0.0.1:{port}/healthz").as_str()),
        "{check:?}"
    );
    assert!(!pg["healthcheck"]["test"].is_badvalue());
    let ports: Vec<&str> = server["ports"].as_vec().unwrap().iter().map(s).collect();
    assert!(
        ports.iter().any(|p| p.ends_with(&format!(":{port}"))),
        "{ports:?}"
    );
    let containerfile = read("Containerfile");
    assert!(
        containerfile.contains(&format!("EXPOSE {port}\n")),
        "the image exposes another port than {port}"
    );
    assert!(listen.starts_with("0.0.0.0:"), "{listen}");
    assert!(
        containerfile.contains("COPY deploy/server.container.toml /etc/patchperf/server.toml\n")
    );
    assert_eq!(
        patchperf_server::cli::DEFAULT_CONFIG,
        "/etc/patchperf/server.toml"
    );

    // Built from the repository with this Containerfile, settings from
    // the example's copy.
    assert_eq!(s(&server["build"]["dockerfile"]), "deploy/Containerfile");
    assert_eq!(s(&server["build"]["context"]), "..");
    assert_eq!(s(&server["env_file"]), "patchperf.env");
}

#[test]
fn the_image_is_built_in_two_stages_and_runs_unprivileged_with_a_health_check() {
    let file = read("Containerfile");
    let froms: Vec<&str> = file.lines().filter(|l| l.starts_with("FROM ")).collect();
    assert_eq!(froms.len(), 2, "{froms:?}");
    assert!(froms[0].contains("rust:") && froms[0].ends_with(" AS build"));
    assert!(froms[1].contains("debian:bookworm-slim"));
    assert!(file.contains("COPY --from=build "));
    let user = file.lines().rfind(|l| l.starts_with("USER ")).unwrap();
    assert_eq!(user, "USER patchperf");
    let health = file.find("HEALTHCHECK ").unwrap();
    assert!(file[health..].contains("/healthz"));
    // pg_dump of Debian bookworm's client is 15: it backs up the compose
    // file's Postgres only if that is not newer.
    assert!(file.contains("postgresql-client"));
    let image = s(&compose()["services"]["postgres"]["image"]).to_string();
    assert!(image.contains(":15-"), "{image}");
    // The context leaves the build output out.
    let ignore = std::fs::read_to_string(deploy_dir().join("../.dockerignore")).unwrap();
    assert!(ignore.lines().any(|l| l == "target/"));
}

#[test]
fn the_env_example_names_every_setting_of_serve_with_a_comment() {
    let example = read("patchperf.env.example");
    let cli = patchperf_server::cli::Cli::command();
    let serve = cli.find_subcommand("serve").unwrap();
    let mut named = 0;
    for arg in serve.get_arguments() {
        if arg.get_id() == "help" {
            continue;
        }
        let env = arg
            .get_env()
            .unwrap_or_else(|| panic!("--{} has no environment variable", arg.get_id()));
        let env = env.to_str().unwrap();
        let lines: Vec<&str> = example.lines().collect();
        let at = lines
            .iter()
            .position(|l| l.trim_start_matches('#').starts_with(&format!("{env}=")))
            .unwrap_or_else(|| panic!("{env} (--{}) is not in the example", arg.get_id()));
        assert!(
            at > 0 && lines[at - 1].starts_with("# "),
            "{env} has no comment above it"
        );
        named += 1;
    }
    assert!(named >= 15, "only {named} settings");
}
