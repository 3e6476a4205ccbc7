//! The map's two data files as text: `map.tsv` (workload, file, share,
//! seen on) and `functions.tsv` (workload, function, files, share, seen
//! on), read strictly (a line that breaks the format names its number)
//! and written back in the same form.

use super::{Exercised, RunsThrough, WorkloadMap};
use crate::Error;
use crate::workload;

/// The column line of the files' data.
const COLUMNS: &str = "workload\tfile\tshare\tseen_on";

/// The column line of the functions' data.
const FUNCTION_COLUMNS: &str = "workload\tfunction\tfiles\tshare\tseen_on";

impl WorkloadMap {
    /// Reads the map's two texts: files, functions.
    pub fn parse(files: &str, functions: &str) -> Result<WorkloadMap, Error> {
        let mut map = WorkloadMap::parse_files(files)?;
        map.functions = parse_functions(functions)?;
        map.sort();
        Ok(map)
    }

    /// Reads the files' text.
    pub fn parse_files(text: &str) -> Result<WorkloadMap, Error> {
        let mut map = WorkloadMap::default();
        let mut columns = false;
        for (i, line) in text.lines().enumerate() {
            let bad = |message: String| Error::WorkloadMap {
                line: i + 1,
                message,
            };
            if let Some(note) = line.strip_prefix('#') {
                map.notes.push(note.trim().to_string());
                continue;
            }
            if line.trim().is_empty() {
                continue;
            }
            if !columns {
                if line != COLUMNS {
                    return Err(bad(format!("want the columns `{COLUMNS}` first")));
                }
                columns = true;
                continue;
            }
            let fields: Vec<&str> = line.split('\t').collect();
            let [workload, file, share, seen_on] = fields[..] else {
                return Err(bad(format!("{} fields; want 4", fields.len())));
            };
            if workload::find(workload).is_none() {
                return Err(bad(format!("unknown workload {workload:?}")));
            }
            if !is_tree_path(file) {
                return Err(bad(format!("{file:?} is not a path in a kernel tree")));
            }
            let (share, seen_on) = share_and_releases(share, seen_on).map_err(bad)?;
            if map
                .entries
                .iter()
                .any(|e| e.workload == workload && e.file == file)
            {
                return Err(bad(format!("{workload} and {file} twice")));
            }
            map.entries.push(Exercised {
                workload: workload.to_string(),
                file: file.to_string(),
                share,
                seen_on,
            });
        }
        if !columns {
            return Err(Error::WorkloadMap {
                line: text.lines().count(),
                message: format!("no `{COLUMNS}` line"),
            });
        }
        map.sort();
        Ok(map)
    }

    /// The functions as text, as [`WorkloadMap::parse`] reads them.
    pub fn render_functions(&self) -> String {
        let mut out = format!("{FUNCTION_COLUMNS}\n");
        for f in &self.functions {
            out.push_str(&format!(
                "{}\t{}\t{}\t{:.2}\t{}\n",
                f.workload,
                f.function,
                f.files.join(","),
                f.share,
                f.seen_on.join(",")
            ));
        }
        out
    }

    /// The files as text, as [`WorkloadMap::parse`] reads them.
    pub fn render(&self) -> String {
        let mut out: String = self.notes.iter().map(|n| format!("# {n}\n")).collect();
        out.push_str(COLUMNS);
        out.push('\n');
        for e in &self.entries {
            out.push_str(&format!(
                "{}\t{}\t{:.2}\t{}\n",
                e.workload,
                e.file,
                e.share,
                e.seen_on.join(",")
            ));
        }
        out
    }
}

/// Reads the functions' text.
fn parse_functions(text: &str) -> Result<Vec<RunsThrough>, Error> {
    let mut out: Vec<RunsThrough> = Vec::new();
    let mut columns = false;
    for (i, line) in text.lines().enumerate() {
        let bad = |message: String| Error::WorkloadMap {
            line: i + 1,
            message: format!("functions: {message}"),
        };
        if line.starts_with('#') || line.trim().is_empty() {
            continue;
        }
        if !columns {
            if line != FUNCTION_COLUMNS {
                return Err(bad(format!("want the columns `{FUNCTION_COLUMNS}` first")));
            }
            columns = true;
            continue;
        }
        let fields: Vec<&str> = line.split('\t').collect();
        let [workload, function, files, share, seen_on] = fields[..] else {
            return Err(bad(format!("{} fields; want 5", fields.len())));
        };
        if workload::find(workload).is_none() {
            return Err(bad(format!("unknown workload {workload:?}")));
        }
        let is_symbol = !function.is_empty()
            && function.len() <= 128
            && function
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '_');
        if !is_symbol {
            return Err(bad(format!("{function:?} is not a C function name")));
        }
        let files: Vec<String> = files
            .split(',')
            .filter(|f| !f.is_empty())
            .map(str::to_string)
            .collect();
        if let Some(f) = files.iter().find(|f| !is_tree_path(f)) {
            return Err(bad(format!("{f:?} is not a path in a kernel tree")));
        }
        let (share, seen_on) = share_and_releases(share, seen_on).map_err(bad)?;
        if out
            .iter()
            .any(|r| r.workload == workload && r.function == function)
        {
            return Err(bad(format!("{workload} and {function} twice")));
        }
        out.push(RunsThrough {
            workload: workload.to_string(),
            function: function.to_string(),
            files,
            share,
            seen_on,
        });
    }
    if !columns && !text.trim().is_empty() {
        return Err(Error::WorkloadMap {
            line: text.lines().count(),
            message: format!("functions: no `{FUNCTION_COLUMNS}` line"),
        });
    }
    Ok(out)
}

/// The share column (a number from 0 to 100) and the releases column
/// (`6.1.192,6.12.118`) of a line, or what is wrong with them.
fn share_and_releases(share: &str, seen_on: &str) -> Result<(f64, Vec<String>), String> {
    let share: f64 = share
        .parse()
        .ok()
        .filter(|s: &f64| s.is_finite() && (0.0..=100.0).contains(s))
        .ok_or_else(|| format!("share {share:?} is not a number from 0 to 100"))?;
    let seen_on: Vec<String> = seen_on.split(',').map(str::to_string).collect();
    if seen_on.iter().any(|r| !is_release(r)) {
        return Err(format!("seen_on {seen_on:?} is not a list of releases"));
    }
    Ok((share, seen_on))
}

/// A relative path inside a kernel tree: `dir/name`, no `..`, no spaces.
fn is_tree_path(path: &str) -> bool {
    !path.is_empty()
        && path.len() <= 200
        && !path.starts_with('/')
        && path.split('/').all(|part| {
            !part.is_empty()
                && part != ".."
                && part != "."
                && part
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || "._-+".contains(c))
        })
}

/// `6.12.118`: a kernel release's numbers.
fn is_release(release: &str) -> bool {
    !release.is_empty()
        && release.len() <= 40
        && release
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || ".-+".contains(c))
}

#[cfg(test)]
mod tests {
    use super::super::tests::SMALL;
    use super::*;

    #[test]
    fn a_broken_map_is_refused_with_its_line() {
        let cases = [
            ("dup1\tfs/file.c\t1\t6.1", "want the columns"),
            (
                "workload\tfile\tshare\tseen_on\ndup9\tfs/file.c\t1\t6.1",
                "unknown workload",
            ),
            (
                "workload\tfile\tshare\tseen_on\ndup1\t../file.c\t1\t6.1",
                "not a path",
            ),
            (
                "workload\tfile\tshare\tseen_on\ndup1\tfs/file.c\tNaN\t6.1",
                "not a number",
            ),
            (
                "workload\tfile\tshare\tseen_on\ndup1\tfs/file.c\t101\t6.1",
                "not a number",
            ),
            (
                "workload\tfile\tshare\tseen_on\ndup1\tfs/file.c\t1",
                "3 fields",
            ),
            (
                "workload\tfile\tshare\tseen_on\ndup1\tfs/file.c\t1\t6 1",
                "releases",
            ),
            (
                "workload\tfile\tshare\tseen_on\ndup1\tfs/file.c\t1\t6.1\ndup1\tfs/file.c\t2\t6.1",
                "twice",
            ),
            ("# only a note", "no `workload"),
        ];
        for (text, want) in cases {
            let err = WorkloadMap::parse_files(text).unwrap_err().to_string();
            assert!(err.contains(want), "{text:?}: {err}");
        }
        let columns = "workload\tfunction\tfiles\tshare\tseen_on\n";
        for (text, want) in [
            ("dup1\talloc_fd\tfs/file.c\t1\t6.1", "want the columns"),
            ("dup1\talloc fd\tfs/file.c\t1\t6.1", "not a C function"),
            ("dup1\talloc_fd\t/fs/file.c\t1\t6.1", "not a path"),
            ("dup1\talloc_fd\tfs/file.c\t-1\t6.1", "not a number"),
        ] {
            let text = if want == "want the columns" {
                text.to_string()
            } else {
                format!("{columns}{text}")
            };
            let err = WorkloadMap::parse(SMALL, &text).unwrap_err().to_string();
            assert!(err.contains(want), "{text:?}: {err}");
        }
    }
}
