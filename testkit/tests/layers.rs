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
