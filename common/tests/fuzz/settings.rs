//! Fuzz target for the settings file reader (`settings::parse` and
//! `settings::extra_args`): a valid file with lines cut, doubled, swapped
//! for arbitrary text or bytes, and keys and values of every TOML type.
//! Properties: no panic; anything accepted names only known keys, holds no
//! NUL and turns into flags the command line itself accepts; a valid file
//! reads back as written; an unknown key is refused naming it.

use std::ffi::OsString;

use clap::{Arg, ArgAction, Command};
use patchperf_common::settings::{self, MAX_BYTES, Value};
use proptest::prelude::*;

/// A subcommand with the kinds of flags `serve` and `agent` have.
fn serve() -> Command {
    Command::new("serve")
        .arg(
            Arg::new("listen")
                .long("listen")
                .default_value("127.0.0.1:8080"),
        )
        .arg(
            Arg::new("lease_seconds")
                .long("lease-seconds")
                .value_parser(clap::value_parser!(u64).range(1..=3600))
                .default_value("120"),
        )
        .arg(
            Arg::new("private")
                .long("private")
                .action(ArgAction::SetTrue),
        )
        .arg(Arg::new("public_url").long("public-url"))
        .arg(Arg::new("data_dir").long("data-dir").default_value(".data"))
}

const VALID: &str = "listen = \"0.0.0.0:8080\"\n\
                     lease-seconds = 300\n\
                     private = true\n\
                     public-url = \"https://perf.example.org\"\n\
                     # a comment\n\
                     data-dir = \"/var/lib/patchperf\"\n";

fn line() -> impl Strategy<Value = String> {
    let key = prop_oneof![
        Just("listen".to_string()),
        Just("lease-seconds".to_string()),
        Just("private".to_string()),
        Just("lease_seconds".to_string()),
        Just("config".to_string()),
        "[a-z_-]{1,12}",
        "\\PC{0,8}",
    ];
    let value = prop_oneof![
        any::<i64>().prop_map(|i| i.to_string()),
        any::<f64>().prop_map(|f| format!("{f:?}")),
        any::<bool>().prop_map(|b| b.to_string()),
        "\\PC{0,16}".prop_map(|s| format!("{s:?}")),
        Just("\"a\\u0000b\"".to_string()),
        Just("[1, 2]".to_string()),
        Just("{ a = 1 }".to_string()),
        Just("1979-05-27T07:32:00Z".to_string()),
        Just("nan".to_string()),
        Just("inf".to_string()),
    ];
    prop_oneof![
        (key, value).prop_map(|(k, v)| format!("{k} = {v}")),
        "\\PC{0,40}",
        Just("[serve]".to_string()),
    ]
}

/// A valid file with its lines changed.
fn file() -> impl Strategy<Value = String> {
    let lines: Vec<String> = VALID.lines().map(str::to_string).collect();
    (
        Just(lines),
        prop::collection::vec((any::<prop::sample::Index>(), line(), 0..3u8), 0..6),
    )
        .prop_map(|(mut lines, edits)| {
            for (at, new, how) in edits {
                let i = at.index(lines.len().max(1)).min(lines.len());
                match how {
                    0 => lines.insert(i, new),
                    1 if i < lines.len() => lines[i] = new,
                    _ if i < lines.len() => {
                        lines.remove(i);
                    }
                    _ => lines.push(new),
                }
            }
            lines.join("\n")
        })
}

fn check(text: &str) -> Result<(), TestCaseError> {
    let cmd = serve();
    let Ok(parsed) = settings::parse(text, &cmd) else {
        return Ok(());
    };
    let known = [
        "listen",
        "lease-seconds",
        "private",
        "public-url",
        "data-dir",
    ];
    for s in &parsed {
        prop_assert!(known.contains(&s.key.as_str()), "{s:?}");
        if let Value::Text(t) = &s.value {
            prop_assert!(!t.contains('\0'));
        }
    }
    // What it adds is a command line the flags take or refuse as flags
    // (a lease out of range), never a panic.
    let matches = cmd.clone().try_get_matches_from(["serve"]).unwrap();
    let mut args: Vec<OsString> = vec!["serve".into()];
    args.extend(settings::extra_args(&cmd, &matches, &parsed));
    let _ = cmd.clone().try_get_matches_from(args);
    Ok(())
}

proptest! {
    #[test]
    fn fuzz_settings_file_changed_lines(text in file()) {
        check(&text)?;
    }

    #[test]
    fn fuzz_settings_file_arbitrary_text(text in "\\PC{0,400}") {
        check(&text)?;
    }

    #[test]
    fn fuzz_settings_file_arbitrary_bytes(bytes in prop::collection::vec(any::<u8>(), 0..400)) {
        if let Ok(text) = settings::read_from(bytes.as_slice()) {
            check(&text)?;
        }
    }

    #[test]
    fn fuzz_settings_file_a_valid_file_reads_back_as_written(
        listen in "[0-9.]{1,15}:[0-9]{1,5}",
        lease in 1u64..=3600,
        private in any::<bool>(),
        url in "\\PC{0,30}",
    ) {
        let text = format!(
            "listen = {listen:?}\nlease-seconds = {lease}\nprivate = {private}\npublic-url = {}\n",
            toml_string(&url)
        );
        let parsed = settings::parse(&text, &serve()).unwrap();
        let value = |key: &str| parsed.iter().find(|s| s.key == key).map(|s| s.value.clone());
        prop_assert_eq!(parsed.len(), 4);
        prop_assert_eq!(value("listen"), Some(Value::Text(listen)));
        prop_assert_eq!(value("lease-seconds"), Some(Value::Text(lease.to_string())));
        prop_assert_eq!(value("private"), Some(Value::Switch(private)));
        prop_assert_eq!(value("public-url"), Some(Value::Text(url)));
    }

    #[test]
    fn fuzz_settings_file_an_unknown_key_is_refused_naming_it(key in "[a-z][a-z0-9-]{0,20}") {
        prop_assume!(!["listen", "lease-seconds", "private", "public-url", "data-dir"]
            .contains(&key.as_str()));
        let err = settings::parse(&format!("{key} = 1\n"), &serve()).unwrap_err();
        prop_assert!(err.contains(&format!("unknown key `{key}`")), "{}", err);
    }
}

/// `s` as a TOML basic string.
fn toml_string(s: &str) -> String {
    toml::Value::String(s.to_string()).to_string()
}

#[test]
fn a_file_of_the_largest_size_is_read_and_one_byte_more_is_not() {
    let exact = format!("#{}", "x".repeat(MAX_BYTES - 1));
    assert!(settings::read_from(exact.as_bytes()).is_ok());
    let over = format!("{exact}x");
    assert!(settings::read_from(over.as_bytes()).is_err());
}
