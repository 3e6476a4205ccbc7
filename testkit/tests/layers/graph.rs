//! A crate's modules and the edges between them: each path a file names is
//! followed to the file that defines the item (through `pub use`
//! re-exports), and the strongly connected groups of the resulting graph
//! are the cycles.

use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::path::{Path, PathBuf};

use super::scan::{FileScan, PathRef, scan};

pub type Module = Vec<String>;

pub struct Crate {
    pub name: String,
    files: BTreeMap<Module, (PathBuf, FileScan)>,
}

/// Where a dependency was seen: file and line, for the failure message.
pub type Evidence = (PathBuf, usize, String);

pub type Edges = BTreeMap<String, BTreeMap<String, Evidence>>;

fn walk(dir: &Path, out: &mut Vec<PathBuf>) {
    let mut entries: Vec<_> = fs::read_dir(dir)
        .expect("read src")
        .map(|e| e.expect("entry").path())
        .collect();
    entries.sort();
    for path in entries {
        if path.is_dir() {
            walk(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

fn module_of(src: &Path, file: &Path) -> Option<Module> {
    let rel = file.strip_prefix(src).ok()?;
    let mut parts: Module = rel
        .iter()
        .map(|p| p.to_string_lossy().into_owned())
        .collect();
    let last = parts.pop()?;
    match last.trim_end_matches(".rs") {
        // main.rs is the binary: a crate of its own over the library.
        "main" if parts.is_empty() => return None,
        "lib" if parts.is_empty() => {}
        "mod" => {}
        stem => parts.push(stem.to_string()),
    }
    Some(parts)
}

impl Crate {
    pub fn read(name: &str, src: &Path) -> Crate {
        let mut paths = Vec::new();
        walk(src, &mut paths);
        let mut files = BTreeMap::new();
        for path in paths {
            if let Some(module) = module_of(src, &path) {
                let text = fs::read_to_string(&path).expect("read source");
                files.insert(module, (path, scan(&text)));
            }
        }
        // Files a parent declares `#[cfg(test)] mod x;` are tests.
        let tests: Vec<Module> = files
            .iter()
            .flat_map(|(m, (_, s))| {
                s.test_children
                    .iter()
                    .map(move |c| [m.clone(), vec![c.clone()]].concat())
            })
            .collect();
        for t in tests {
            files.retain(|m, _| !m.starts_with(&t));
        }
        Crate {
            name: name.to_string(),
            files,
        }
    }

    /// The file that holds `module` (itself, or the file an inline module
    /// is written in).
    fn file_of(&self, module: &[String]) -> Option<Module> {
        (0..=module.len())
            .rev()
            .map(|n| module[..n].to_vec())
            .find(|m| self.files.contains_key(m))
    }

    fn is_module(&self, module: &[String]) -> bool {
        if self.files.contains_key(module) {
            return true;
        }
        let Some((last, parent)) = module.split_last() else {
            return true;
        };
        self.files
            .get(parent)
            .is_some_and(|(_, s)| s.inline_mods.contains(last))
    }

    /// The file defining what `path`, written in `module`, names; `None`
    /// for paths outside the crate.
    fn resolve(&self, module: &[String], path: &PathRef, depth: usize) -> Option<Module> {
        if depth > 16 || path.segments.is_empty() {
            return None;
        }
        let here: Module = [module, &path.inline].concat();
        let segs = &path.segments;
        let (mut base, mut rest): (Module, &[String]) = match segs[0].as_str() {
            "crate" => (vec![], &segs[1..]),
            "self" => (here.clone(), &segs[1..]),
            "super" => {
                let ups = segs.iter().take_while(|s| *s == "super").count();
                (here[..here.len().checked_sub(ups)?].to_vec(), &segs[ups..])
            }
            first => {
                let child = [here.clone(), vec![first.to_string()]].concat();
                if !self.is_module(&child) {
                    return self.through_alias(module, path, depth);
                }
                (here.clone(), &segs[..])
            }
        };
        while let Some(s) = rest.first() {
            let next = [base.clone(), vec![s.clone()]].concat();
            if !self.is_module(&next) {
                break;
            }
            base = next;
            rest = &rest[1..];
        }
        let file = self.file_of(&base)?;
        let Some(name) = rest.first() else {
            return Some(file);
        };
        if base != file {
            return Some(file);
        }
        Some(self.defining(&file, name, depth).unwrap_or(file))
    }

    /// `alias::item` where `use crate::a::b as alias;` (or `use super::b;`)
    /// brought a module into scope.
    fn through_alias(&self, module: &[String], path: &PathRef, depth: usize) -> Option<Module> {
        let scan = &self.files.get(module)?.1;
        let u = scan.uses.iter().find(|u| {
            u.name == path.segments[0] && !u.path.glob && u.path.segments[0] != path.segments[0]
        })?;
        let mut segments = u.path.segments.clone();
        segments.extend(path.segments[1..].iter().cloned());
        self.resolve(
            module,
            &PathRef {
                segments,
                ..u.path.clone()
            },
            depth + 1,
        )
    }

    /// The file that defines `name`, which `file` defines or re-exports.
    fn defining(&self, file: &Module, name: &str, depth: usize) -> Option<Module> {
        let scan = &self.files[file].1;
        if scan.defines.contains(name) {
            return Some(file.clone());
        }
        if let Some(u) = scan.uses.iter().find(|u| !u.path.glob && u.name == name) {
            return self.resolve(file, &u.path, depth + 1);
        }
        for u in scan.uses.iter().filter(|u| u.path.glob && u.public) {
            let Some(target) = self.resolve(file, &u.path, depth + 1) else {
                continue;
            };
            if target != *file {
                if let Some(found) = self.defining(&target, name, depth + 1) {
                    return Some(found);
                }
            }
        }
        None
    }

    /// Edges between module files (`a::b`) and, with `top`, between the
    /// top-level modules (`a`).
    pub fn edges(&self, top: bool) -> Edges {
        let node = |m: &Module| match (top, m.first()) {
            (_, None) => "crate".to_string(),
            (true, Some(first)) => first.clone(),
            (false, _) => m.join("::"),
        };
        let mut edges = Edges::new();
        for (module, (path, scan)) in &self.files {
            let refs = scan
                .uses
                .iter()
                .filter(|u| !u.path.glob || !u.public)
                .filter(|u| !u.public || scan.idents.contains(&u.name))
                .map(|u| &u.path)
                .chain(scan.paths.iter());
            for r in refs {
                let Some(target) = self.resolve(module, r, 0) else {
                    continue;
                };
                let (from, to) = (node(module), node(&target));
                let nested = module.starts_with(&target) || target.starts_with(module);
                if from != to && !nested {
                    let ev = (path.clone(), r.line, r.segments.join("::"));
                    edges
                        .entry(from.clone())
                        .or_default()
                        .entry(to)
                        .or_insert(ev);
                }
            }
            edges.entry(node(module)).or_default();
        }
        edges
    }
}

/// The cycles of a graph, one per strongly connected group, each written
/// as the path around it with where every step was seen.
pub fn cycles(edges: &Edges) -> Vec<String> {
    let mut reported: BTreeSet<String> = BTreeSet::new();
    let mut out = Vec::new();
    for start in edges.keys() {
        if reported.contains(start) {
            continue;
        }
        if let Some(cycle) = cycle_through(edges, start) {
            let mut text = String::new();
            for pair in cycle.windows(2) {
                let (file, line, path) = &edges[&pair[0]][&pair[1]];
                text += &format!(
                    "  {} -> {}   ({}:{line}: {path})\n",
                    pair[0],
                    pair[1],
                    file.display()
                );
            }
            reported.extend(cycle);
            out.push(text);
        }
    }
    out
}

/// A shortest cycle through `start`, by breadth-first search back to it.
fn cycle_through(edges: &Edges, start: &str) -> Option<Vec<String>> {
    let mut prev: BTreeMap<String, String> = BTreeMap::new();
    let mut queue = std::collections::VecDeque::from([start.to_string()]);
    while let Some(n) = queue.pop_front() {
        for next in edges.get(&n).into_iter().flat_map(|e| e.keys()) {
            if next == start {
                let mut path = vec![n.clone()];
                while let Some(p) = prev.get(path.last()?) {
                    path.push(p.clone());
                }
                path.reverse();
                path.push(start.to_string());
                return Some(path);
            }
            if !prev.contains_key(next) && next != start {
                prev.insert(next.clone(), n.clone());
                queue.push_back(next.clone());
            }
        }
    }
    None
}
