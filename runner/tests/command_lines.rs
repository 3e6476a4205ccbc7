//! Every command line the documentation shows a user (README.md,
//! BENCHMARKS.md, ARCHITECTURE.md, examples/, the systemd units' ExecStart)
//! is parsed by the binaries' own argument parsers, so that no flag the
//! text names can drift from the code: a renamed flag, a dropped value, a
//! subcommand that moved all fail here, naming the file and line. And the
//! entry script a newcomer runs first says what of the toolchain is missing.

use std::path::{Path, PathBuf};

use clap::CommandFactory;
use clap::error::{ContextKind, ContextValue, ErrorKind};

/// The repository's root.
fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// A command found in a file: where, and its words after the program.
#[derive(Debug)]
struct Found {
    place: String,
    program: &'static str,
    args: Vec<String>,
}

const PROGRAMS: [&str; 3] = ["patchperf-runner", "patchperf-server", "./patchperf"];

/// The documents a user reads commands from.
fn documents() -> Vec<PathBuf> {
    let root = root();
    let mut files: Vec<PathBuf> = ["README.md", "BENCHMARKS.md", "ARCHITECTURE.md"]
        .iter()
        .map(|f| root.join(f))
        .filter(|p| p.exists())
        .collect();
    let mut stack = vec![root.join("examples")];
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                stack.push(path);
            } else if path.extension().is_some_and(|e| e == "md" || e == "sh") {
                files.push(path);
            }
        }
    }
    files.sort();
    files
}

/// The shell lines of a Markdown file's fenced blocks (continuations
/// joined), with their first line numbers; a `.sh` file is all shell.
/// Blocks tagged as another language (toml, text, json…) are not shell;
/// in an untagged block (a diagram, output) only a line that starts with
/// a command is one.
fn shell_lines(path: &Path, text: &str) -> Vec<(usize, String)> {
    let markdown = path.extension().is_some_and(|e| e == "md");
    let mut out = Vec::new();
    let mut in_block = !markdown;
    let mut shell = !markdown;
    let mut untagged = false;
    let mut pending: Option<(usize, String)> = None;
    for (i, line) in text.lines().enumerate() {
        if markdown && line.trim_start().starts_with("```") {
            let info = line.trim_start().trim_start_matches('`').trim();
            in_block = !in_block;
            shell = in_block && ["sh", "bash", "shell", "console"].contains(&info);
            untagged = in_block && info.is_empty();
            continue;
        }
        let starts_with_command = || {
            commands_in(line).iter().any(|(p, _)| {
                let l = line.trim_start().trim_start_matches("$ ");
                l.starts_with(p) || l.starts_with(&format!("target/release/{p}"))
            })
        };
        if !(in_block && (shell || (untagged && (pending.is_some() || starts_with_command())))) {
            continue;
        }
        let (start, mut joined) = pending.take().unwrap_or((i + 1, String::new()));
        match line.strip_suffix('\\') {
            Some(head) => {
                joined.push_str(head);
                joined.push(' ');
                pending = Some((start, joined));
            }
            None => {
                joined.push_str(line);
                out.push((start, joined));
            }
        }
    }
    out
}

/// The commands of one shell line: every word in command position that is
/// one of our programs (or a path ending in one), with the words after it
/// up to the end of its simple command (`|`, `;`, `&`, `)`, a redirection,
/// a comment).
fn commands_in(line: &str) -> Vec<(&'static str, Vec<String>)> {
    let line = line.trim_start().trim_start_matches("$ ");
    let mut found = Vec::new();
    for program in PROGRAMS {
        let mut from = 0;
        while let Some(at) = line[from..].find(program).map(|i| i + from) {
            from = at + program.len();
            let before = line[..at].chars().next_back();
            let after = line[from..].chars().next();
            let starts_word = matches!(before, None | Some(' ' | '(' | '"' | '/' | '\t'));
            let ends_word = matches!(after, None | Some(' ' | '"' | '\t'));
            if !(starts_word && ends_word && in_command_position(&line[..at])) {
                continue;
            }
            if after == Some('"') {
                from += 1;
            }
            let rest = &line[from..];
            found.push((program, words(&rest[..simple_command_end(rest)])));
        }
    }
    found
}

/// Whether a word starting after `before` (a path's directories included)
/// is where a shell expects a command: first on the line or after an
/// operator, `$(`, `sudo`/`exec`/`env`/`nohup`/`time`, or assignments.
fn in_command_position(before: &str) -> bool {
    // Back over the path of the program's word (`target/release/`).
    let head = before.trim_end_matches(|c: char| !(c.is_whitespace() || c == '(' || c == '"'));
    let head = head.trim_end_matches('"').trim_end();
    if head.is_empty() || head.ends_with(['(', '|', ';', '&', '{']) {
        return true;
    }
    let last = head.rsplit(char::is_whitespace).next().unwrap_or_default();
    if ["sudo", "exec", "env", "nohup", "time", "then", "do"].contains(&last) {
        return true;
    }
    // `VAR=value program` (and several of them).
    last.split_once('=').is_some_and(|(name, _)| {
        !name.is_empty() && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
    }) && in_command_position(&head[..head.len() - last.len()])
}

/// Where the simple command starting `rest` ends, quotes respected; a
/// redirection's file descriptor (`2>&1`) is not a word of the command.
fn simple_command_end(rest: &str) -> usize {
    let mut quote: Option<char> = None;
    let mut prev = ' ';
    for (i, c) in rest.char_indices() {
        match (quote, c) {
            (Some(q), c) if c == q => quote = None,
            (Some(_), _) => {}
            (None, '\'' | '"') => quote = Some(c),
            (None, '>' | '<') => {
                let digits = rest[..i].trim_end_matches(|d: char| d.is_ascii_digit());
                return if digits.ends_with(' ') {
                    digits.len()
                } else {
                    i
                };
            }
            (None, '|' | ';' | '&' | ')') => return i,
            (None, '#') if prev == ' ' => return i,
            _ => {}
        }
        prev = c;
    }
    rest.len()
}

/// Shell words: quotes removed, `\` escapes the next character.
fn words(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut word = String::new();
    let mut in_word = false;
    let mut quote: Option<char> = None;
    let mut chars = text.chars();
    while let Some(c) = chars.next() {
        match (quote, c) {
            (Some(q), c) if c == q => quote = None,
            (Some(_), c) => word.push(c),
            (None, '\'' | '"') => {
                quote = Some(c);
                in_word = true;
            }
            (None, '\\') => {
                word.extend(chars.next());
                in_word = true;
            }
            (None, c) if c.is_whitespace() => {
                if in_word {
                    out.push(std::mem::take(&mut word));
                    in_word = false;
                }
            }
            (None, c) => {
                word.push(c);
                in_word = true;
            }
        }
    }
    if in_word {
        out.push(word);
    }
    out
}

/// Every command in the documents and the units.
fn found() -> Vec<Found> {
    let mut all = Vec::new();
    let root = root();
    for path in documents() {
        let text = std::fs::read_to_string(&path).unwrap();
        let name = path
            .strip_prefix(&root)
            .unwrap_or(&path)
            .display()
            .to_string();
        for (line, shell) in shell_lines(&path, &text) {
            for (program, args) in commands_in(&shell) {
                all.push(Found {
                    place: format!("{name}:{line}"),
                    program,
                    args,
                });
            }
        }
    }
    let units = root.join("deploy/systemd");
    for entry in std::fs::read_dir(&units).unwrap() {
        let path = entry.unwrap().path();
        let text = std::fs::read_to_string(&path).unwrap();
        let name = path.strip_prefix(&root).unwrap().display().to_string();
        for (i, line) in text.lines().enumerate() {
            let Some(exec) = line.strip_prefix("ExecStart=") else {
                continue;
            };
            for (program, args) in commands_in(exec) {
                all.push(Found {
                    place: format!("{name}:{}", i + 1),
                    program,
                    args,
                });
            }
        }
    }
    all
}

/// Parses `args` with `program`'s parser; a required flag missing is
/// fine when the flag may come from the environment (the documents export
/// PATCHPERF_SERVER and the tokens once) or the settings file.
fn check(program: &str, args: &[String]) -> Result<(), String> {
    let cmd = match program {
        "patchperf-runner" => patchperf_runner::cli::Cli::command(),
        "patchperf-server" => patchperf_server::cli::Cli::command(),
        _ => return check_script(args),
    };
    let argv = std::iter::once(program.to_string()).chain(args.iter().cloned());
    let Err(e) = cmd.clone().try_get_matches_from(argv) else {
        return Ok(());
    };
    match e.kind() {
        ErrorKind::DisplayHelp | ErrorKind::DisplayVersion => Ok(()),
        ErrorKind::MissingRequiredArgument if missing_from_environment(&cmd, args, &e) => Ok(()),
        _ => Err(e.render().to_string()),
    }
}

/// Whether every argument `e` says is missing has an environment variable.
fn missing_from_environment(cmd: &clap::Command, args: &[String], e: &clap::Error) -> bool {
    // The subcommand path the words name, to find the flags' definitions
    // (a flag of `machines` is missing after `machines drain` too).
    let mut path = vec![cmd];
    for word in args {
        match path[path.len() - 1].find_subcommand(word) {
            Some(s) => path.push(s),
            None if !word.starts_with('-') => break,
            None => {}
        }
    }
    let Some(ContextValue::Strings(missing)) = e.get(ContextKind::InvalidArg) else {
        return false;
    };
    missing.iter().all(|m| {
        path.iter().flat_map(|c| c.get_arguments()).any(|a| {
            a.get_env().is_some()
                && a.get_long()
                    .is_some_and(|l| m.starts_with(&format!("--{l} ")) || *m == format!("--{l}"))
        })
    })
}

/// `./patchperf`: its verbs and demo's one flag.
fn check_script(args: &[String]) -> Result<(), String> {
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    match args.as_slice() {
        [] | ["-h" | "--help" | "help"] | ["test", ..] => Ok(()),
        ["demo", rest @ ..] if rest.iter().all(|a| ["--exit", "--help", "-h"].contains(a)) => {
            Ok(())
        }
        other => Err(format!(
            "./patchperf takes test or demo [--exit], not {other:?}"
        )),
    }
}

#[test]
fn every_documented_command_line_parses() {
    let all = found();
    let mut bad = Vec::new();
    for f in &all {
        if let Err(why) = check(f.program, &f.args) {
            bad.push(format!(
                "{}: {} {}\n{why}",
                f.place,
                f.program,
                f.args.join(" ")
            ));
        }
    }
    assert!(
        bad.is_empty(),
        "{} of {} command lines do not parse:\n\n{}",
        bad.len(),
        all.len(),
        bad.join("\n")
    );
    // The documents do show commands: the reader above found them.
    for program in PROGRAMS {
        assert!(
            all.iter().filter(|f| f.program == program).count() >= 3,
            "fewer than 3 `{program}` lines found in {:?}",
            documents()
        );
    }
}

#[test]
fn the_reader_finds_commands_as_a_shell_would() {
    assert_eq!(
        commands_in(r#"ci="$(patchperf-server token create --kind ci --label "kernel ci")" # x"#),
        [(
            "patchperf-server",
            words("token create --kind ci --label 'kernel ci'")
        )]
    );
    assert_eq!(
        commands_in("target/release/patchperf-runner submit -w open1 --wait | tee log"),
        [("patchperf-runner", words("submit -w open1 --wait"))]
    );
    assert_eq!(
        commands_in("$ sudo ./patchperf test -p patchperf-server 2>&1"),
        [("./patchperf", words("test -p patchperf-server"))]
    );
    assert!(commands_in("patchperf-runner: cannot reach the server").is_empty());
    assert!(commands_in("ls --spool /var/lib/patchperf-runner x").is_empty());
    assert_eq!(
        commands_in("PATCHPERF_SERVER=http://a:1 X=2 patchperf-runner agent && echo"),
        [("patchperf-runner", words("agent"))]
    );
    let md = "text\n```sh\npatchperf-runner agent \\\n  --claim-wait 10\n```\n```toml\npatchperf-runner = 1\n```\n```\nCI (patchperf-runner submit) --> server\npatchperf-server serve\n```\n";
    assert_eq!(
        shell_lines(Path::new("x.md"), md),
        [
            (3, "patchperf-runner agent    --claim-wait 10".to_string()),
            (11, "patchperf-server serve".to_string())
        ]
    );
    // A flag that does not exist is caught, one from the environment is not.
    assert!(check("patchperf-runner", &words("agent --name x --wait 5")).is_ok());
    assert!(check("patchperf-runner", &words("submit --aa -w open1 --runs 3")).is_ok());
    assert!(check("patchperf-runner", &words("submit --aa -w open1 --runs 2")).is_err());
    assert!(
        check(
            "patchperf-runner",
            &words("submit --mbox x -w open1 --bogus")
        )
        .is_err()
    );
    assert!(check("patchperf-server", &words("token create --kind ci")).is_err());
}

/// `./patchperf` as a newcomer without the right Rust runs it.
fn entry_script(path: &str, args: &[&str]) -> (Option<i32>, String) {
    let out = std::process::Command::new("bash")
        .arg(root().join("patchperf"))
        .args(args)
        .env("PATH", path)
        .output()
        .unwrap();
    (
        out.status.code(),
        format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        ),
    )
}

#[test]
fn the_entry_script_says_which_toolchain_is_missing_before_doing_anything() {
    let bare = "/usr/sbin:/usr/bin:/sbin:/bin";
    if Path::new("/usr/bin/cargo").exists() {
        eprintln!("skipped the no-cargo case: /usr/bin/cargo exists");
    } else {
        let (status, said) = entry_script(bare, &["test"]);
        assert_eq!(status, Some(2), "{said}");
        assert!(said.contains("cargo is not on PATH"), "{said}");
        assert!(
            said.contains("rustup component add clippy rustfmt"),
            "{said}"
        );
        assert!(!said.contains("==>"), "it went on: {said}");
    }
    // Debian 12's own Rust: too old for edition 2024.
    let dir = tempfile::tempdir().unwrap();
    for (tool, says) in [("cargo", "cargo 1.65.0"), ("rustc", "rustc 1.63.0")] {
        let file = dir.path().join(tool);
        std::fs::write(&file, format!("#!/bin/sh\necho '{says}'\n")).unwrap();
        let mut perms = std::fs::metadata(&file).unwrap().permissions();
        std::os::unix::fs::PermissionsExt::set_mode(&mut perms, 0o755);
        std::fs::set_permissions(&file, perms).unwrap();
    }
    let old = format!("{}:{bare}", dir.path().display());
    let (status, said) = entry_script(&old, &["demo"]);
    assert_eq!(status, Some(2), "{said}");
    assert!(said.contains("rustc 1.63.0 is older than 1.85"), "{said}");
    assert!(!said.contains("==>"), "it went on: {said}");
    // Help is help, whatever the toolchain.
    let (status, said) = entry_script(bare, &["test", "--help"]);
    assert_eq!(status, Some(0), "{said}");
    assert!(said.starts_with("usage: ./patchperf demo"), "{said}");
}
