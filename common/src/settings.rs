//! Settings files: one TOML file for a program's long-running subcommand
//! (the server's `serve`, the runner's `agent`), so that a systemd unit or
//! a container carries a file instead of a command line. Its keys are the
//! subcommand's long flag names, kebab-case as on the command line
//! (`lease-seconds = 300`, `private = true`); a value given as a flag
//! wins, then one from the environment, then the file's, then the default.
//!
//! The file is input like any other: at most [`MAX_BYTES`], top-level
//! keys only, every key a flag of the subcommand (an unknown key is an
//! error naming it), strings without NUL. Its values are checked by the
//! flags' own parsers, so a bad one is refused as the flag would be.
//!
//! This module opens nothing: the caller hands [`parse_command_line`] a
//! way to open the file.

use std::ffi::OsString;
use std::io::Read;
use std::path::{Path, PathBuf};

use clap::parser::ValueSource;
use clap::{ArgAction, ArgMatches, Command};

/// Largest settings file read, in bytes.
pub const MAX_BYTES: usize = 64 * 1024;

/// Flags that are never settings.
const NOT_SETTINGS: [&str; 3] = ["config", "help", "version"];

/// One key of a settings file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Setting {
    /// The flag's long name.
    pub key: String,
    /// Its value.
    pub value: Value,
}

/// A setting's value.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Value {
    /// The value of a flag that takes one (numbers as written).
    Text(String),
    /// A switch (`--private`): on or off.
    Switch(bool),
}

/// Why a command line with its settings file cannot be used.
#[derive(Debug)]
pub enum Failure {
    /// The command line itself (or `--help`, `--version`): clap says it.
    Usage(clap::Error),
    /// The settings file: what is wrong with it, naming the file.
    File(String),
}

/// Which subcommands read a settings file, and where it is by default.
#[derive(Debug, Clone, Copy)]
pub struct Program<'a> {
    /// The subcommand whose flags the file's keys are (`serve`).
    pub keys_of: &'a str,
    /// The subcommands that read the file; each takes the keys it has a
    /// flag for and passes over the others (`token` reads only where the
    /// database is).
    pub readers: &'a [&'a str],
    /// The file read when no `--config` names one, if it exists.
    pub default_path: &'a str,
}

/// The settings in `text`, each key a long flag of `cmd`.
pub fn parse(text: &str, cmd: &Command) -> Result<Vec<Setting>, String> {
    if text.len() > MAX_BYTES {
        return Err(format!("larger than {MAX_BYTES} bytes"));
    }
    let table: toml::Table = text.parse().map_err(|e: toml::de::Error| {
        e.to_string()
            .trim_end()
            .replace('\n', " ")
            .replace("  ", " ")
    })?;
    let mut settings = Vec::with_capacity(table.len());
    for (key, value) in table {
        let arg = setting_arg(cmd, &key).ok_or_else(|| unknown(cmd, &key))?;
        let switch = matches!(arg.get_action(), ArgAction::SetTrue | ArgAction::SetFalse);
        let value = match value {
            toml::Value::Boolean(b) if switch => Value::Switch(b),
            _ if switch => return Err(format!("`{key}` is true or false")),
            toml::Value::String(s) if s.contains('\0') => {
                return Err(format!("`{key}` holds a NUL character"));
            }
            toml::Value::String(s) => Value::Text(s),
            toml::Value::Integer(i) => Value::Text(i.to_string()),
            toml::Value::Float(f) if f.is_finite() => Value::Text(f.to_string()),
            toml::Value::Boolean(b) => Value::Text(b.to_string()),
            _ => return Err(format!("`{key}` is a string or a number")),
        };
        settings.push(Setting { key, value });
    }
    Ok(settings)
}

/// The flag of `cmd` a settings key names.
fn setting_arg<'c>(cmd: &'c Command, key: &str) -> Option<&'c clap::Arg> {
    cmd.get_arguments().find(|a| {
        // A renamed flag's old name stays an alias, on the command line
        // and in the files written for it.
        !a.is_positional()
            && (a.get_long() == Some(key) || a.get_all_aliases().is_some_and(|v| v.contains(&key)))
            && !NOT_SETTINGS.contains(&a.get_id().as_str())
    })
}

fn unknown(cmd: &Command, key: &str) -> String {
    let kebab = key.replace('_', "-");
    if kebab != key && setting_arg(cmd, &kebab).is_some() {
        return format!("unknown key `{key}` (keys are the flags' names: `{kebab}`)");
    }
    let mut known: Vec<&str> = cmd
        .get_arguments()
        .filter(|a| !a.is_positional() && !NOT_SETTINGS.contains(&a.get_id().as_str()))
        .filter_map(|a| a.get_long())
        .collect();
    known.sort_unstable();
    format!(
        "unknown key `{}`; the keys are {}",
        key.escape_debug(),
        known.join(", ")
    )
}

/// What to add to a command line so that `settings` apply wherever
/// neither the command line nor the environment gave a value; `matches`
/// are `cmd`'s from the command line alone. Settings of flags `cmd` does
/// not have are passed over.
pub fn extra_args(cmd: &Command, matches: &ArgMatches, settings: &[Setting]) -> Vec<OsString> {
    let mut extra = Vec::new();
    for setting in settings {
        let Some(arg) = setting_arg(cmd, &setting.key) else {
            continue;
        };
        let given = matches!(
            matches.value_source(arg.get_id().as_str()),
            Some(ValueSource::CommandLine | ValueSource::EnvVariable)
        );
        if given {
            continue;
        }
        match &setting.value {
            Value::Switch(true) => extra.push(format!("--{}", setting.key).into()),
            Value::Switch(false) => {}
            Value::Text(v) => extra.push(format!("--{}={v}", setting.key).into()),
        }
    }
    extra
}

/// Reads a settings file from `reader`: at most [`MAX_BYTES`], UTF-8.
pub fn read_from(reader: impl Read) -> Result<String, String> {
    let mut bytes = Vec::new();
    reader
        .take(MAX_BYTES as u64 + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| e.to_string())?;
    if bytes.len() > MAX_BYTES {
        return Err(format!("larger than {MAX_BYTES} bytes"));
    }
    String::from_utf8(bytes).map_err(|_| "not UTF-8".to_string())
}

/// Parses the command line `args` of `P`; when its subcommand is one of
/// `program.readers`, adds the settings of the file its `--config` names
/// (else of `program.default_path`, when that exists) for the flags the
/// command line and the environment left unset. `open` opens a file; a
/// missing default is no error, a missing `--config` file is.
pub fn parse_command_line<P, R>(
    args: Vec<OsString>,
    program: &Program<'_>,
    open: impl Fn(&Path) -> std::io::Result<R>,
) -> Result<P, Failure>
where
    P: clap::Parser,
    R: Read,
{
    let mut cmd = P::command();
    // Built, so that each subcommand has the program's global flags too
    // (`--log-format` is a key of the file like `serve`'s own).
    cmd.build();
    // Leniently first: a required flag (the agent's `--server`) may be in
    // the file.
    let matches = cmd
        .clone()
        .ignore_errors(true)
        .try_get_matches_from(&args)
        .map_err(Failure::Usage)?;
    let mut extra = Vec::new();
    let mut path = None;
    if let Some((name, sub)) = matches
        .subcommand()
        .filter(|(n, _)| program.readers.contains(n))
    {
        let explicit = sub.try_get_one::<PathBuf>("config").ok().flatten();
        let file = explicit
            .cloned()
            .unwrap_or_else(|| PathBuf::from(program.default_path));
        let text = match open(&file) {
            Ok(reader) => Some(read_from(reader).map_err(|e| in_file(&file, e))?),
            Err(e) if explicit.is_none() && e.kind() == std::io::ErrorKind::NotFound => None,
            Err(e) => return Err(in_file(&file, e)),
        };
        if let Some(text) = text {
            let keys = cmd
                .find_subcommand(program.keys_of)
                .expect("the subcommand whose flags the keys are");
            let settings = parse(&text, keys).map_err(|e| in_file(&file, e))?;
            let reader = cmd.find_subcommand(name).expect("the subcommand parsed");
            extra = extra_args(reader, sub, &settings);
            path = Some(file);
        }
    }
    let mut merged = args.clone();
    merged.extend(extra);
    P::try_parse_from(merged).map_err(|e| blame(e, &args, path.as_deref(), &cmd))
}

/// Whose fault a failed parse is: help and version are nobody's; the
/// command line's when it fails alone (its required flags excused: the
/// file may give them); else the file's.
fn blame(e: clap::Error, args: &[OsString], file: Option<&Path>, cmd: &Command) -> Failure {
    use clap::error::ErrorKind;
    let Some(file) = file else {
        return Failure::Usage(e);
    };
    if matches!(
        e.kind(),
        ErrorKind::DisplayHelp
            | ErrorKind::DisplayVersion
            | ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand
    ) {
        return Failure::Usage(e);
    }
    let excused = cmd
        .clone()
        .mut_args(|a| a.required(false))
        .mut_subcommands(|s| s.mut_args(|a| a.required(false)));
    match excused.try_get_matches_from(args) {
        Err(alone) => Failure::Usage(alone),
        Ok(_) => in_file(file, e.to_string().trim_end()),
    }
}

fn in_file(path: &Path, e: impl std::fmt::Display) -> Failure {
    Failure::File(format!("{}: {e}", path.display()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::{Args, CommandFactory, Parser, Subcommand};

    #[derive(Debug, Parser)]
    struct Cli {
        #[arg(long, global = true)]
        config: Option<PathBuf>,
        #[command(subcommand)]
        command: Sub,
    }

    #[derive(Debug, Subcommand)]
    enum Sub {
        Serve(ServeArgs),
        Agent {
            #[arg(long)]
            server: String,
        },
        Token {
            #[arg(long, env = "SETTINGS_TEST_DATA_DIR", default_value = ".data")]
            data_dir: PathBuf,
        },
        Other,
    }

    #[derive(Debug, Args)]
    struct ServeArgs {
        #[arg(long, env = "SETTINGS_TEST_DATA_DIR", default_value = ".data")]
        data_dir: PathBuf,
        #[arg(long, env = "SETTINGS_TEST_LEASE", default_value_t = 120,
              value_parser = clap::value_parser!(u64).range(1..=3600))]
        lease_seconds: u64,
        #[arg(long, env = "SETTINGS_TEST_PRIVATE")]
        private: bool,
        #[arg(long)]
        public_url: Option<String>,
    }

    const PROGRAM: Program<'static> = Program {
        keys_of: "serve",
        readers: &["serve", "token"],
        default_path: "/nonexistent/patchperf-settings-test.toml",
    };

    /// Parses `args` with `file` as the settings file every path opens.
    fn cli(args: &[&str], file: &str) -> Result<Cli, Failure> {
        let args = args.iter().map(OsString::from).collect();
        parse_command_line(args, &PROGRAM, |_| Ok(file.as_bytes()))
    }

    fn serve(args: &[&str], file: &str) -> ServeArgs {
        match cli(args, file).unwrap() {
            Cli {
                command: Sub::Serve(s),
                ..
            } => s,
            other => panic!("{other:?}"),
        }
    }

    fn file_error(args: &[&str], file: &str) -> String {
        match cli(args, file) {
            Err(Failure::File(e)) => e,
            other => panic!("not a file error: {other:?}"),
        }
    }

    #[test]
    fn the_file_sets_what_no_flag_sets_and_a_flag_wins_over_it() {
        let file = "lease-seconds = 300\nprivate = true\ndata-dir = \"/srv/pp\"\n";
        let s = serve(&["pp", "serve", "--config", "f.toml"], file);
        assert_eq!((s.lease_seconds, s.private), (300, true));
        assert_eq!(s.data_dir, Path::new("/srv/pp"));
        let s = serve(
            &["pp", "serve", "--config", "f", "--lease-seconds", "60"],
            file,
        );
        assert_eq!((s.lease_seconds, s.private), (60, true));
    }

    #[test]
    fn without_a_file_the_defaults_hold() {
        // The default path does not exist: no error, defaults.
        let args = ["pp", "serve"].iter().map(OsString::from).collect();
        let cli: Cli = parse_command_line(args, &PROGRAM, |p| std::fs::File::open(p)).unwrap();
        let Sub::Serve(s) = cli.command else { panic!() };
        assert_eq!((s.lease_seconds, s.private), (120, false));
    }

    #[test]
    fn a_missing_file_named_by_config_is_an_error_naming_it() {
        let args = ["pp", "serve", "--config", "/nonexistent/x.toml"]
            .iter()
            .map(OsString::from)
            .collect();
        let err =
            parse_command_line::<Cli, std::fs::File>(args, &PROGRAM, |p| std::fs::File::open(p))
                .unwrap_err();
        let Failure::File(e) = err else {
            panic!("{err:?}")
        };
        assert!(e.starts_with("/nonexistent/x.toml: "), "{e}");
    }

    #[test]
    fn an_unknown_key_is_an_error_naming_it_and_snake_case_points_at_the_flag() {
        let e = file_error(&["pp", "serve"], "lease-seconds = 3\nlistne = \"x\"\n");
        assert!(e.contains("unknown key `listne`"), "{e}");
        assert!(e.contains("lease-seconds, private, public-url"), "{e}");
        let e = file_error(&["pp", "serve"], "lease_seconds = 3\n");
        assert!(
            e.contains("`lease_seconds`") && e.contains("`lease-seconds`"),
            "{e}"
        );
        for not_a_setting in ["config = \"x\"", "help = true", "version = true"] {
            let e = file_error(&["pp", "serve"], not_a_setting);
            assert!(e.contains("unknown key"), "{not_a_setting}: {e}");
        }
    }

    #[test]
    fn a_bad_value_is_refused_as_the_flag_would_refuse_it_naming_the_file() {
        let e = file_error(
            &["pp", "serve", "--config", "f.toml"],
            "lease-seconds = 0\n",
        );
        assert!(
            e.starts_with("f.toml: ") && e.contains("--lease-seconds"),
            "{e}"
        );
        let e = file_error(&["pp", "serve"], "lease-seconds = \"soon\"\n");
        assert!(e.contains("--lease-seconds"), "{e}");
        let e = file_error(&["pp", "serve"], "private = \"yes\"\n");
        assert!(e.contains("`private` is true or false"), "{e}");
        let e = file_error(&["pp", "serve"], "public-url = [\"a\"]\n");
        assert!(e.contains("`public-url` is a string or a number"), "{e}");
        let e = file_error(&["pp", "serve"], "[serve]\nprivate = true\n");
        assert!(e.contains("unknown key `serve`"), "{e}");
        let e = file_error(&["pp", "serve"], "public-url = \"a\\u0000b\"\n");
        assert!(e.contains("NUL"), "{e}");
        let e = file_error(&["pp", "serve"], "private = true\nprivate = false\n");
        assert!(e.contains("duplicate"), "{e}");
    }

    #[test]
    fn a_file_larger_than_the_bound_is_refused_unread() {
        let big = format!("# {}\n", "x".repeat(MAX_BYTES));
        let e = file_error(&["pp", "serve"], &big);
        assert!(e.contains("larger than 65536 bytes"), "{e}");
    }

    #[test]
    fn a_value_adds_its_flag_and_a_switch_set_off_adds_nothing() {
        let cmd = Cli::command();
        let serve_cmd = cmd.find_subcommand("serve").unwrap();
        let matches = serve_cmd.clone().try_get_matches_from(["serve"]).unwrap();
        let settings = parse("lease-seconds = 300\nprivate = false\n", serve_cmd).unwrap();
        assert_eq!(
            extra_args(serve_cmd, &matches, &settings),
            [OsString::from("--lease-seconds=300")]
        );
    }

    #[test]
    fn another_reader_takes_only_the_keys_it_has_and_non_readers_read_nothing() {
        let file = "data-dir = \"/srv/pp\"\nlease-seconds = 30\n";
        let Cli {
            command: Sub::Token { data_dir },
            ..
        } = cli(&["pp", "token"], file).unwrap()
        else {
            panic!()
        };
        assert_eq!(data_dir, Path::new("/srv/pp"));
        // `other` never opens it: a broken file does not matter to it.
        assert!(matches!(
            cli(&["pp", "other"], "{{{"),
            Ok(Cli {
                command: Sub::Other,
                ..
            })
        ));
    }

    #[test]
    fn a_required_flag_may_come_from_the_file_and_a_bad_flag_is_the_command_lines_fault() {
        let agent = Program {
            keys_of: "agent",
            readers: &["agent"],
            ..PROGRAM
        };
        let run = |file: &'static str| {
            let args = ["pp", "agent"].map(OsString::from).to_vec();
            parse_command_line::<Cli, _>(args, &agent, |_| Ok(file.as_bytes()))
        };
        let Ok(Cli {
            command: Sub::Agent { server },
            ..
        }) = run("server = \"http://a\"\n")
        else {
            panic!("the file's server was not taken")
        };
        assert_eq!(server, "http://a");
        // Neither gives it: clap's own error, said with the file's name.
        let Err(Failure::File(e)) = run("") else {
            panic!("accepted without --server")
        };
        assert!(e.contains("--server"), "{e}");
        // A bad flag beside a good file is the command line's.
        let bad = cli(&["pp", "serve", "--lease-seconds", "x"], "private = true\n");
        assert!(matches!(bad, Err(Failure::Usage(_))), "{bad:?}");
    }

    #[test]
    fn help_is_still_help() {
        assert!(matches!(
            cli(&["pp", "serve", "--help"], "private = true"),
            Err(Failure::Usage(e)) if e.kind() == clap::error::ErrorKind::DisplayHelp
        ));
    }
}
