//! Reads one source file into what the layer check needs: the paths it
//! names (`use` trees and `crate::`/`super::`/`self::` paths in code), the
//! items it defines and the names it re-exports. This is a lexer, not a
//! parser: it only has to be right about paths, so it blanks out comments
//! and literals (a `"crate::x"` in a message is not a dependency) and drops
//! `#[cfg(test)]` items (tests may reach across layers to build fixtures;
//! they are not part of the built graph).

use std::collections::BTreeSet;

#[derive(Debug, Clone, PartialEq)]
enum Tok {
    Ident(String),
    PathSep,
    Punct(char),
}

#[derive(Debug, Clone)]
struct Token {
    tok: Tok,
    line: usize,
}

/// A path as written, with the inline module it was written in (relative
/// to the file's module) so `super::` inside `mod percent { … }` resolves.
#[derive(Debug, Clone)]
pub struct PathRef {
    pub inline: Vec<String>,
    pub segments: Vec<String>,
    pub line: usize,
    pub glob: bool,
}

/// A `use` that names something under another name in this module.
#[derive(Debug, Clone)]
pub struct UseItem {
    pub path: PathRef,
    /// The name it is known by here (`as` alias or the last segment).
    pub name: String,
    pub public: bool,
}

#[derive(Debug, Default)]
pub struct FileScan {
    pub uses: Vec<UseItem>,
    /// Paths in code outside `use` declarations.
    pub paths: Vec<PathRef>,
    pub defines: BTreeSet<String>,
    /// Identifiers outside `use` declarations: a `pub use` counts as a
    /// dependency only when the module also uses the name itself.
    pub idents: BTreeSet<String>,
    /// `#[cfg(test)] mod x;` children: whole files that are tests.
    pub test_children: BTreeSet<String>,
    /// `mod x { … }` written in the file itself (outermost only).
    pub inline_mods: BTreeSet<String>,
}

/// Blanks comments, string and char literals, keeping newlines so line
/// numbers stay right.
fn blank_literals(src: &str) -> String {
    let c: Vec<char> = src.chars().collect();
    let mut out = String::with_capacity(src.len());
    let mut i = 0;
    let keep_lines = |out: &mut String, s: &[char]| {
        out.extend(s.iter().filter(|&&ch| ch == '\n'));
        out.push(' ');
    };
    let ident_char = |ch: char| ch.is_alphanumeric() || ch == '_';
    while i < c.len() {
        let prev_ident = i > 0 && ident_char(c[i - 1]);
        if c[i] == '/' && c.get(i + 1) == Some(&'/') {
            while i < c.len() && c[i] != '\n' {
                i += 1;
            }
        } else if c[i] == '/' && c.get(i + 1) == Some(&'*') {
            let (start, mut depth) = (i, 0);
            while i < c.len() {
                if c[i] == '/' && c.get(i + 1) == Some(&'*') {
                    depth += 1;
                    i += 2;
                } else if c[i] == '*' && c.get(i + 1) == Some(&'/') {
                    depth -= 1;
                    i += 2;
                    if depth == 0 {
                        break;
                    }
                } else {
                    i += 1;
                }
            }
            keep_lines(&mut out, &c[start..i]);
        } else if !prev_ident && (c[i] == 'r' || (c[i] == 'b' && c.get(i + 1) == Some(&'r'))) {
            let start = i;
            let mut j = i + if c[i] == 'b' { 2 } else { 1 };
            let mut hashes = 0;
            while c.get(j) == Some(&'#') {
                hashes += 1;
                j += 1;
            }
            if c.get(j) != Some(&'"') {
                out.push(c[i]);
                i += 1;
                continue;
            }
            j += 1;
            while j < c.len() {
                if c[j] == '"' && (1..=hashes).all(|k| c.get(j + k) == Some(&'#')) {
                    j += 1 + hashes;
                    break;
                }
                j += 1;
            }
            i = j;
            keep_lines(&mut out, &c[start..i]);
        } else if c[i] == '"' {
            let start = i;
            i += 1;
            while i < c.len() && c[i] != '"' {
                i += if c[i] == '\\' { 2 } else { 1 };
            }
            i += 1;
            keep_lines(&mut out, &c[start..i.min(c.len())]);
        } else if c[i] == '\'' && c.get(i + 1) == Some(&'\\') {
            i += 2;
            while i < c.len() && c[i] != '\'' {
                i += 1;
            }
            i += 1;
            out.push(' ');
        } else if c[i] == '\'' && c.get(i + 2) == Some(&'\'') {
            i += 3;
            out.push(' ');
        } else {
            out.push(c[i]);
            i += 1;
        }
    }
    out
}

fn tokenize(src: &str) -> Vec<Token> {
    let c: Vec<char> = blank_literals(src).chars().collect();
    let (mut i, mut line, mut toks) = (0, 1, Vec::new());
    while i < c.len() {
        let ch = c[i];
        if ch == '\n' {
            line += 1;
            i += 1;
        } else if ch.is_whitespace() {
            i += 1;
        } else if ch.is_alphanumeric() || ch == '_' {
            let start = i;
            while i < c.len() && (c[i].is_alphanumeric() || c[i] == '_') {
                i += 1;
            }
            let word: String = c[start..i].iter().collect();
            toks.push(Token {
                tok: Tok::Ident(word),
                line,
            });
        } else if ch == ':' && c.get(i + 1) == Some(&':') {
            toks.push(Token {
                tok: Tok::PathSep,
                line,
            });
            i += 2;
        } else {
            toks.push(Token {
                tok: Tok::Punct(ch),
                line,
            });
            i += 1;
        }
    }
    toks
}

fn ident(t: Option<&Token>) -> Option<&str> {
    match t.map(|t| &t.tok) {
        Some(Tok::Ident(s)) => Some(s),
        _ => None,
    }
}

fn is(t: Option<&Token>, p: char) -> bool {
    matches!(t.map(|t| &t.tok), Some(Tok::Punct(c)) if *c == p)
}

/// Index just past the balanced group opened at `i` (`(`, `[` or `{`).
fn skip_group(toks: &[Token], i: usize) -> usize {
    let mut depth = 0i32;
    for (j, t) in toks.iter().enumerate().skip(i) {
        match t.tok {
            Tok::Punct('(' | '[' | '{') => depth += 1,
            Tok::Punct(')' | ']' | '}') => {
                depth -= 1;
                if depth == 0 {
                    return j + 1;
                }
            }
            _ => {}
        }
    }
    toks.len()
}

/// Drops `#[cfg(test)]` (and `cfg(all(test, …))`) items, noting test-only
/// child files.
fn drop_test_items(toks: Vec<Token>, test_children: &mut BTreeSet<String>) -> Vec<Token> {
    let mut out = Vec::with_capacity(toks.len());
    let mut i = 0;
    while i < toks.len() {
        if !(is(toks.get(i), '#') && is(toks.get(i + 1), '[')) {
            out.push(toks[i].clone());
            i += 1;
            continue;
        }
        let end = skip_group(&toks, i + 1);
        let attr = &toks[i + 2..end.saturating_sub(1)];
        let words: Vec<&str> = attr.iter().filter_map(|t| ident(Some(t))).collect();
        let test_only = words.first() == Some(&"cfg")
            && words.contains(&"test")
            && !words.contains(&"not")
            && !words.contains(&"any");
        if !test_only {
            out.extend(toks[i..end].iter().cloned());
            i = end;
            continue;
        }
        // Skip further attributes, then the item up to its `;` or body.
        let mut j = end;
        while is(toks.get(j), '#') && is(toks.get(j + 1), '[') {
            j = skip_group(&toks, j + 1);
        }
        if ident(toks.get(j)) == Some("mod") && is(toks.get(j + 2), ';') {
            test_children.insert(ident(toks.get(j + 1)).unwrap_or("").to_string());
        }
        while j < toks.len() {
            match toks[j].tok {
                Tok::Punct(';') => {
                    j += 1;
                    break;
                }
                Tok::Punct('{') => {
                    j = skip_group(&toks, j);
                    break;
                }
                Tok::Punct('(' | '[') => j = skip_group(&toks, j),
                _ => j += 1,
            }
        }
        i = j;
    }
    out
}

/// Parses a `use` tree starting at `i` (just past `use`), pushing each
/// leaf; returns the index past it.
fn use_tree(
    toks: &[Token],
    mut i: usize,
    prefix: &[String],
    leaves: &mut Vec<(Vec<String>, Option<String>, bool, usize)>,
) -> usize {
    let mut path = prefix.to_vec();
    loop {
        match toks.get(i).map(|t| &t.tok) {
            Some(Tok::Ident(s)) if s != "as" => {
                path.push(s.clone());
                i += 1;
            }
            Some(Tok::Punct('$')) => i += 1,
            Some(Tok::PathSep) => i += 1,
            Some(Tok::Punct('*')) => {
                leaves.push((path, None, true, toks[i].line));
                return i + 1;
            }
            Some(Tok::Punct('{')) => {
                i += 1;
                while i < toks.len() && !is(toks.get(i), '}') {
                    i = use_tree(toks, i, &path, leaves);
                    if is(toks.get(i), ',') {
                        i += 1;
                    }
                }
                return i + 1;
            }
            Some(Tok::Ident(_)) => {
                // `as name`
                let alias = ident(toks.get(i + 1)).map(str::to_string);
                leaves.push((path, alias, false, toks[i].line));
                return i + 2;
            }
            _ => {
                let line = toks.get(i.saturating_sub(1)).map_or(0, |t| t.line);
                if path.len() > prefix.len() {
                    leaves.push((path, None, false, line));
                }
                return i;
            }
        }
    }
}

const ITEM_KEYWORDS: &[&str] = &[
    "struct", "enum", "fn", "trait", "type", "const", "static", "union", "mod",
];

pub fn scan(src: &str) -> FileScan {
    let mut scan = FileScan::default();
    let toks = drop_test_items(tokenize(src), &mut scan.test_children);
    // Inline modules open around here: (name, brace depth inside it).
    let mut inline: Vec<(String, i32)> = Vec::new();
    let mut depth = 0i32;
    let mut i = 0;
    while i < toks.len() {
        let here: Vec<String> = inline.iter().map(|(n, _)| n.clone()).collect();
        match &toks[i].tok {
            Tok::Punct('{') => depth += 1,
            Tok::Punct('}') => {
                if inline.last().is_some_and(|(_, d)| *d == depth) {
                    inline.pop();
                }
                depth -= 1;
            }
            Tok::Ident(w) if w == "mod" && is(toks.get(i + 2), '{') => {
                let name = ident(toks.get(i + 1)).unwrap_or("").to_string();
                scan.defines.insert(name.clone());
                if inline.is_empty() {
                    scan.inline_mods.insert(name.clone());
                }
                inline.push((name, depth + 1));
            }
            Tok::Ident(w) if w == "use" => {
                let public = ident(toks.get(i.wrapping_sub(1))) == Some("pub")
                    || is(toks.get(i.wrapping_sub(1)), ')');
                let mut leaves = Vec::new();
                i = use_tree(&toks, i + 1, &[], &mut leaves);
                for (segments, alias, glob, line) in leaves {
                    let name = alias
                        .or_else(|| segments.last().cloned())
                        .unwrap_or_default();
                    let path = PathRef {
                        inline: here.clone(),
                        segments,
                        line,
                        glob,
                    };
                    scan.uses.push(UseItem { path, name, public });
                }
                continue;
            }
            Tok::Ident(w) if w == "macro_rules" && is(toks.get(i + 1), '!') => {
                scan.defines
                    .extend(ident(toks.get(i + 2)).map(str::to_string));
            }
            Tok::Ident(w) => {
                scan.idents.insert(w.clone());
                if ITEM_KEYWORDS.contains(&w.as_str()) {
                    scan.defines
                        .extend(ident(toks.get(i + 1)).map(str::to_string));
                }
                let starts_path = !matches!(
                    toks.get(i.wrapping_sub(1)).map(|t| &t.tok),
                    Some(Tok::PathSep)
                );
                if starts_path && matches!(toks.get(i + 1).map(|t| &t.tok), Some(Tok::PathSep)) {
                    let (mut segments, line) = (vec![w.clone()], toks[i].line);
                    let mut j = i + 1;
                    while matches!(toks.get(j).map(|t| &t.tok), Some(Tok::PathSep)) {
                        match ident(toks.get(j + 1)) {
                            Some(s) => segments.push(s.to_string()),
                            None => break,
                        }
                        j += 2;
                    }
                    scan.idents.extend(segments.iter().cloned());
                    scan.paths.push(PathRef {
                        inline: here,
                        segments,
                        line,
                        glob: false,
                    });
                    i = j;
                    continue;
                }
            }
            _ => {}
        }
        i += 1;
    }
    scan
}
