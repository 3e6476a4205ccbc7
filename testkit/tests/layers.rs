//! No import cycles in the server, the runner or common: each crate's
//! modules form layers, every arrow pointing one way, so a module can be
//! read (and moved) knowing only what is below it.
//!
//! How it is checked: every `src/**/*.rs` is read as text; the `use`
//! trees and the `crate::`, `super::` and `self::` paths in code (and a
//! child module named directly, `driver::run`) are each followed to the
//! file that *defines* the item, through `pub use` re-exports, so naming
//! `crate::Error` depends on `error.rs`, not on `lib.rs`. Each such
//! reference is an edge from the file written in to the file defining.
//! The check is run twice: between module files (`harness::driver`), and
//! between top-level modules (`harness`, `kernel`, `error`).
//!
//! The rules that decide what is an edge:
//! - A module file and the files below it (`workloads/mod.rs` and
//!   `workloads/open3.rs`) are one node for the edges between them: a
//!   parent holds what its children share (the trait they implement, via
//!   `super::`) and is also their face (re-exports, the table of them), so
//!   both directions are the module talking to itself. Edges between
//!   siblings, cousins and other top-level modules all count; the price is
//!   that a loop passing *through* a parent's own code (child a → parent →
//!   child b → a) is not seen here.
//! - A `pub use` only re-exports: it is an edge only when the module's own
//!   code also uses the name.
//! - `#[cfg(test)]` items and test-only files are left out: tests may reach
//!   across layers to build what they check.
//! - `main.rs` is the binary, a crate of its own above the library.
//!
//! No cycles is not yet the documented direction: the server's and the
//! runner's top-level modules are also ranked (ARCHITECTURE.md's picture,
//! `http → domain → db`, `commands → cli`), and every edge between them
//! must point down the ranks.

#[path = "layers/graph.rs"]
mod graph;
#[path = "layers/scan.rs"]
mod scan;

use std::path::Path;

use graph::{Crate, cycles};

fn workspace() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("testkit sits in the workspace")
}

fn assert_acyclic(name: &str) {
    let krate = Crate::read(name, &workspace().join(name).join("src"));
    let mut found = Vec::new();
    for (level, top) in [("module files", false), ("top-level modules", true)] {
        for cycle in cycles(&krate.edges(top)) {
            found.push(format!("{} ({level}):\n{cycle}", krate.name));
        }
    }
    assert!(found.is_empty(), "import cycles:\n{}", found.join("\n"));
}

#[test]
fn common_has_no_import_cycle() {
    assert_acyclic("common");
}

#[test]
fn runner_has_no_import_cycle() {
    assert_acyclic("runner");
}

#[test]
fn server_has_no_import_cycle() {
    assert_acyclic("server");
}

/// The server's top-level modules, top first: each may use only those
/// ranked below it. `state` is the HTTP layer's `AppState`, above the
/// domain it holds; the leaves at the bottom use nothing of the crate.
const SERVER_RANKS: &[&[&str]] = &[
    &["commands"],
    &["cli", "backup"],
    &["http"],
    &["state"],
    &["domain"],
    &["db", "git"],
    &["config", "destination", "postgres"],
    &["error"],
];

/// The runner's, top first, as ARCHITECTURE.md draws them.
const RUNNER_RANKS: &[&[&str]] = &[
    &["commands"],
    &["cli"],
    &["agent"],
    &["kernel"],
    &["perf"],
    &["harness"],
    &["proc"],
    &["error"],
];

/// The edges between top-level modules that point up (or sideways) in
/// `ranks`, and the modules that have no rank.
fn against_the_ranks(edges: &graph::Edges, ranks: &[&[&str]]) -> Vec<String> {
    let rank = |m: &str| ranks.iter().position(|r| r.contains(&m));
    let mut wrong = Vec::new();
    for (from, tos) in edges {
        if from == "crate" {
            continue;
        }
        let Some(up) = rank(from) else {
            wrong.push(format!(
                "{from} has no layer: give it one in the test and ARCHITECTURE.md"
            ));
            continue;
        };
        for (to, (file, line, path)) in tos {
            match rank(to) {
                Some(down) if down > up => {}
                _ => wrong.push(format!(
                    "{from} -> {to} points up ({}:{line}: {path})",
                    file.display()
                )),
            }
        }
    }
    wrong
}

fn assert_ranked(name: &str, ranks: &[&[&str]]) {
    let krate = Crate::read(name, &workspace().join(name).join("src"));
    let wrong = against_the_ranks(&krate.edges(true), ranks);
    assert!(wrong.is_empty(), "{name}:\n{}", wrong.join("\n"));
}

#[test]
fn the_server_points_down_http_domain_db() {
    assert_ranked("server", SERVER_RANKS);
}

#[test]
fn the_runner_points_down_commands_cli_agent_kernel() {
    assert_ranked("runner", RUNNER_RANKS);
}

/// The rank check itself: the domain naming the HTTP layer is refused, and
/// so is a module no rank names.
#[test]
fn the_rank_check_sees_an_upward_edge() {
    let dir = tempfile::tempdir().unwrap();
    let src = dir.path();
    std::fs::write(src.join("lib.rs"), "mod domain;\nmod http;\nmod extra;\n").unwrap();
    std::fs::write(src.join("http.rs"), "pub struct AppState;\n").unwrap();
    std::fs::write(src.join("domain.rs"), "fn f(_: crate::http::AppState) {}\n").unwrap();
    std::fs::write(src.join("extra.rs"), "\n").unwrap();
    let wrong = against_the_ranks(
        &Crate::read("made-up", src).edges(true),
        &[&["http"], &["domain"]],
    );
    assert_eq!(wrong.len(), 2, "{wrong:?}");
    assert!(
        wrong
            .iter()
            .any(|w| w.starts_with("domain -> http points up")),
        "{wrong:?}"
    );
    assert!(
        wrong.iter().any(|w| w.starts_with("extra has no layer")),
        "{wrong:?}"
    );
}

/// The queries the HTTP layer names in `text` (a file's code before its
/// tests and without comments): `db::table::function` paths, and `db::table` imported as a
/// module to call through. Row types (`db::jobs::JobRow`) and the modules
/// on the way to one are data, and allowed.
fn queries_named(text: &str) -> Vec<String> {
    let code: String = text
        .split("#[cfg(test)]")
        .next()
        .unwrap_or_default()
        .lines()
        // Comments may name what a query does; only code calls one.
        .map(|l| l.split("//").next().unwrap_or_default())
        .collect::<Vec<_>>()
        .join("\n");
    let ident = |c: char| c.is_ascii_alphanumeric() || c == '_';
    let mut found = Vec::new();
    for (at, _) in code.match_indices("db::") {
        if code[..at].chars().next_back().is_some_and(ident) {
            continue;
        }
        let rest = &code[at + 4..];
        let mut segments = Vec::new();
        let mut tail = rest;
        loop {
            let len = tail.find(|c: char| !ident(c)).unwrap_or(tail.len());
            if len == 0 {
                break;
            }
            segments.push(&tail[..len]);
            tail = &tail[len..];
            match tail.strip_prefix("::") {
                Some(t) if t.starts_with(|c: char| c.is_ascii_alphabetic() || c == '_') => tail = t,
                _ => break,
            }
        }
        let last = segments.last().copied().unwrap_or_default();
        let lowercase = last.starts_with(|c: char| c.is_ascii_lowercase() || c == '_');
        if lowercase && !tail.starts_with("::") {
            found.push(format!("db::{}", segments.join("::")));
        }
    }
    found
}

/// Every `.rs` file under `dir` (a folder of the workspace) with its text.
fn rust_files(dir: &str) -> Vec<(std::path::PathBuf, String)> {
    let mut files = Vec::new();
    let mut stack = vec![workspace().join(dir)];
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                stack.push(path);
            } else if path.extension().is_some_and(|e| e == "rs") {
                let text = std::fs::read_to_string(&path).unwrap();
                files.push((path, text));
            }
        }
    }
    files
}

/// Pages and API handlers read through the domain's views, never a query
/// of their own (ARCHITECTURE.md: handlers parse, call one domain
/// function, render).
#[test]
fn the_http_layer_reads_through_the_domain() {
    let named: Vec<String> = rust_files("server/src/http")
        .iter()
        .flat_map(|(path, text)| {
            queries_named(text)
                .into_iter()
                .map(move |q| format!("{}: {q}", path.display()))
        })
        .collect();
    assert!(
        named.is_empty(),
        "queries called from http/:\n{}",
        named.join("\n")
    );
}

/// Pages render what the domain's views give them and name nothing of
/// the database, not even a row type: those come through the view that
/// returns them (`domain::comparison::overview::ComparisonRow`, …).
#[test]
fn pages_name_nothing_of_the_database() {
    let mut named = Vec::new();
    for (path, text) in rust_files("server/src/http/pages") {
        let code = text.split("#[cfg(test)]").next().unwrap_or_default();
        for (n, line) in code.lines().enumerate() {
            let line = line.split("//").next().unwrap_or_default();
            if line.contains("db::") {
                named.push(format!("{}:{}: {}", path.display(), n + 1, line.trim()));
            }
        }
    }
    assert!(
        named.is_empty(),
        "pages naming the database:\n{}",
        named.join("\n")
    );
}

#[test]
fn the_query_check_tells_a_query_from_a_row() {
    let text = "use crate::db::{self, jobs::JobRow};\n\
                use crate::db::changes;\n\
                fn f() { let _ = db::trees::ids(&db); let _: db::jobs::JobRow; }\n\
                //! reads `db::progress::of` through the domain\n\
                #[cfg(test)]\nmod tests { fn g() { db::runs::all(); } }\n";
    assert_eq!(queries_named(text), ["db::changes", "db::trees::ids"]);
}

/// The check itself: a loop that only shows once a re-export is followed
/// (`b` names `crate::Thing`, defined in `a`, which uses `b`) is found, and
/// a parent that holds its children's trait is not one.
#[test]
fn the_check_sees_a_loop_through_a_re_export() {
    let dir = tempfile::tempdir().unwrap();
    let src = dir.path();
    let files = [
        ("lib.rs", "mod a;\nmod b;\nmod p;\npub use a::Thing;\n"),
        (
            "a.rs",
            "use crate::b::Other;\npub struct Thing(Other);\n// crate::p::x\n",
        ),
        (
            "b.rs",
            "pub struct Other;\nfn f() { let _ = crate::Thing; }\n",
        ),
        (
            "p/mod.rs",
            "mod c;\npub trait T {}\npub fn all() { c::run() }\n",
        ),
        ("p/c.rs", "use super::T;\npub fn run() {}\n"),
    ];
    std::fs::create_dir(src.join("p")).unwrap();
    for (name, text) in files {
        std::fs::write(src.join(name), text).unwrap();
    }
    let edges = Crate::read("made-up", src).edges(false);
    let found = cycles(&edges);
    assert_eq!(found.len(), 1, "{found:?}");
    assert!(
        found[0].contains("a -> b") && found[0].contains("b -> a"),
        "{}",
        found[0]
    );
}
