//! Whether a message carries a patch: the one rule the server (accepting a
//! series) and the runner (choosing what to apply) share; what a patch
//! changes, in lines (`diffstat`), in files (`paths`) and in the C
//! functions its hunk headers name (`functions`).

/// Whether `body` holds a diff that `git am` or `patch -p1` would apply: a
/// git diff header (`diff --git`, which also covers patches that only change
/// a file's mode or rename it and so have no hunk), or a plain unified diff's
/// `---`, `+++` and `@@` lines in a row.
pub fn has_diff(body: &str) -> bool {
    let mut previous: [&str; 2] = ["", ""];
    for line in body.lines() {
        if line.starts_with("diff --git ")
            || (previous[0].starts_with("--- ")
                && previous[1].starts_with("+++ ")
                && line.starts_with("@@ "))
        {
            return true;
        }
        previous = [previous[1], line];
    }
    false
}

/// What a patch changes, as `git diff --stat` sums it up.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct DiffStat {
    /// Files touched.
    pub files: usize,
    /// Lines added.
    pub insertions: usize,
    /// Lines removed.
    pub deletions: usize,
}

impl std::fmt::Display for DiffStat {
    /// `2 files changed, 10 insertions(+), 3 deletions(-)`, as git says it.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let s = |n: usize| if n == 1 { "" } else { "s" };
        write!(f, "{} file{} changed", self.files, s(self.files))?;
        if self.insertions > 0 {
            write!(
                f,
                ", {} insertion{}(+)",
                self.insertions,
                s(self.insertions)
            )?;
        }
        if self.deletions > 0 {
            write!(f, ", {} deletion{}(-)", self.deletions, s(self.deletions))?;
        }
        Ok(())
    }
}

/// Counts the files and the added and removed lines of the diffs in `text`
/// (one message or a whole series): a file per `diff --git` header (per
/// `+++` header when there is none: plain unified diffs), a line per
/// `+`/`-` line inside a hunk, the hunk's own counts telling where it ends.
pub fn diffstat(text: &str) -> DiffStat {
    let mut stat = DiffStat::default();
    let (mut git_files, mut plain_files) = (0, 0);
    let mut hunks = Hunks::default();
    for line in text.lines() {
        match hunks.read(line) {
            Some(b'+') => stat.insertions += 1,
            Some(b'-') => stat.deletions += 1,
            Some(_) => {}
            None if line.starts_with("diff --git ") => git_files += 1,
            None if line.starts_with("+++ ") => plain_files += 1,
            None => {}
        }
    }
    stat.files = if git_files > 0 {
        git_files
    } else {
        plain_files
    };
    stat
}

/// Where a reader of a diff stands: inside a hunk, with the lines still to
/// come on each side (the hunk's own `@@ -a,b +c,d @@` counts say where it
/// ends), or between hunks, where headers are. Lines inside a hunk are not
/// headers, however they start.
#[derive(Debug, Default)]
struct Hunks {
    old: usize,
    new: usize,
}

impl Hunks {
    /// Reads `line`: inside a hunk, its first byte (`+`, `-`, `\` for
    /// `\ No newline at end of file`, another for context); outside, `None`
    /// (a hunk header starts the next hunk).
    fn read(&mut self, line: &str) -> Option<u8> {
        if self.old > 0 || self.new > 0 {
            let first = line.as_bytes().first().copied().unwrap_or(b' ');
            match first {
                b'+' => self.new = self.new.saturating_sub(1),
                b'-' => self.old = self.old.saturating_sub(1),
                b'\\' => {}
                _ => {
                    self.old = self.old.saturating_sub(1);
                    self.new = self.new.saturating_sub(1);
                }
            }
            return Some(first);
        }
        if let Some(counts) = line.strip_prefix("@@ -") {
            // `a,b` (b lines) or `a` (one line).
            let count = |range: &str| -> usize {
                match range.split_once(',') {
                    Some((_, n)) => n.parse().unwrap_or(0),
                    None => 1,
                }
            };
            let mut parts = counts.split_whitespace();
            self.old = parts.next().map_or(0, count);
            self.new = parts
                .next()
                .and_then(|p| p.strip_prefix('+'))
                .map_or(0, count);
        }
        None
    }
}

/// The files the diffs in `text` touch, as `patch -p1` names them (the
/// first path component, `a/` or `b/`, taken off): both sides of every
/// `diff --git` header, every `---`/`+++` header but `/dev/null`, every
/// rename's and copy's source and target. Lines inside hunks are not
/// headers, however they start. What a list's path filters and workload
/// map are matched against.
pub fn paths(text: &str) -> std::collections::BTreeSet<String> {
    let mut found = std::collections::BTreeSet::new();
    // `strip`: take off the `a/` or `b/` (rename and copy lines have none).
    let mut add = |path: &str, strip: bool| {
        let path = path.trim().trim_matches('"');
        if path.is_empty() || path == "/dev/null" {
            return;
        }
        let path = match path.split_once('/') {
            Some((_, rest)) if strip => rest,
            _ => path,
        };
        found.insert(path.to_string());
    };
    let mut hunks = Hunks::default();
    for line in text.lines() {
        if hunks.read(line).is_some() {
            continue;
        }
        if let Some(both) = line.strip_prefix("diff --git ") {
            // `a/x b/x`; a path with ` b/` in it splits at the last one.
            if let Some(at) = both.rfind(" b/").or_else(|| both.rfind(" \"b/")) {
                add(&both[..at], true);
                add(&both[at + 1..], true);
            }
        } else if let Some(header) = line
            .strip_prefix("--- ")
            .or_else(|| line.strip_prefix("+++ "))
        {
            // A plain diff may follow the path with a tab and a date.
            add(header.split('\t').next().unwrap_or_default(), true);
        } else if let Some(path) = ["rename from ", "rename to ", "copy from ", "copy to "]
            .iter()
            .find_map(|p| line.strip_prefix(p))
        {
            add(path, false);
        }
    }
    found
}

/// What [`functions`] names a hunk outside any function by.
pub const OUTSIDE_FUNCTIONS: &str = "";

/// The C function each hunk of the diffs in `text` is in, by file, as
/// git's hunk header names it (`@@ -3985,7 +3985,7 @@ static struct file
/// *path_openat(struct nameidata *nd,` → `path_openat` in `fs/namei.c`):
/// what lets a change to one path of a large file call for the workloads
/// that run that path. A hunk whose header names no function (a struct, a
/// global, nothing) adds [`OUTSIDE_FUNCTIONS`] for its file, so that the
/// file as a whole still counts; `SYSCALL_DEFINEn(name, …)` names
/// `__do_sys_name`, the function the kernel builds from it.
pub fn functions(
    text: &str,
) -> std::collections::BTreeMap<String, std::collections::BTreeSet<String>> {
    let mut found: std::collections::BTreeMap<String, std::collections::BTreeSet<String>> =
        Default::default();
    let mut file: Option<String> = None;
    let mut hunks = Hunks::default();
    for line in text.lines() {
        if hunks.read(line).is_some() {
            continue;
        }
        if let Some(path) = line.strip_prefix("+++ ") {
            let path = path.split('\t').next().unwrap_or_default().trim();
            file = (path != "/dev/null").then(|| {
                path.split_once('/')
                    .map_or(path, |(_, rest)| rest)
                    .to_string()
            });
        } else if let Some(header) = line.strip_prefix("@@ -") {
            let context = header.split_once(" @@").map(|(_, rest)| rest.trim());
            if let Some(file) = &file {
                let name = context
                    .and_then(function_named)
                    .unwrap_or_else(|| OUTSIDE_FUNCTIONS.to_string());
                found.entry(file.clone()).or_default().insert(name);
            }
        }
    }
    found
}

/// The function a hunk header's context line defines: the identifier
/// before its first `(`, when that is a C identifier that is no keyword.
fn function_named(context: &str) -> Option<String> {
    let (before, after) = context.split_once('(')?;
    let name = before
        .trim_end()
        .rsplit(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
        .next()?;
    let is_identifier = !name.is_empty()
        && name.len() <= 128
        && !name.starts_with(|c: char| c.is_ascii_digit())
        && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
    const NOT_NAMES: &[&str] = &[
        "if", "for", "while", "switch", "return", "sizeof", "int", "void", "char", "long", "short",
        "unsigned", "signed", "bool", "struct", "union", "enum", "const", "static",
    ];
    if !is_identifier || NOT_NAMES.contains(&name) {
        return None;
    }
    if let Some(n) = name.strip_prefix("SYSCALL_DEFINE") {
        if n.chars().all(|c| c.is_ascii_digit()) {
            let call = after.split(',').next().unwrap_or_default().trim();
            return function_named(&format!("__do_sys_{call}("));
        }
    }
    Some(name.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hunk_headers_name_the_functions_a_patch_changes() {
        let text = "diff --git a/fs/namei.c b/fs/namei.c\n--- a/fs/namei.c\n+++ b/fs/namei.c\n\
                    @@ -4300,3 +4300,3 @@ int do_unlinkat(int dfd, struct filename *name)\n\
                    \x20a\n-b\n+c\n\x20d\n\
                    @@ -10,2 +10,3 @@ static const struct inode_operations x = {\n\x20a\n+b\n\x20c\n\
                    diff --git a/fs/file.c b/fs/file.c\n--- a/fs/file.c\n+++ b/fs/file.c\n\
                    @@ -1,1 +1,1 @@ SYSCALL_DEFINE1(dup, unsigned int, fildes)\n-a\n+b\n\
                    @@ -9,1 +9,1 @@ static unsigned int find_next_fd(struct fdtable *fdt, unsigned int start)\n\
                    -a\n+b\n\
                    @@ -20,1 +20,1 @@\n-a\n+b\n\
                    diff --git a/fs/gone.c b/fs/gone.c\n--- a/fs/gone.c\n+++ /dev/null\n\
                    @@ -1,1 +0,0 @@ void gone(void)\n-a\n";
        let got = functions(text);
        let names = |f: &str| -> Vec<&str> { got[f].iter().map(String::as_str).collect() };
        assert_eq!(names("fs/namei.c"), ["", "do_unlinkat"]);
        assert_eq!(names("fs/file.c"), ["", "__do_sys_dup", "find_next_fd"]);
        assert_eq!(got.len(), 2, "{got:?}");
        assert_eq!(function_named("if (x)"), None);
        assert_eq!(
            function_named("SYSCALL_DEFINE3(read, unsigned int, fd,").as_deref(),
            Some("__do_sys_read")
        );
        assert_eq!(function_named("static int (*f)(void)"), None);
        assert_eq!(
            function_named("static __poll_t pipe_poll(struct file *filp, poll_table *wait)")
                .as_deref(),
            Some("pipe_poll")
        );
    }

    #[test]
    fn paths_are_the_files_a_patch_touches() {
        let text = "diff --git a/fs/open.c b/fs/open.c\nindex 1..2 100644\n--- a/fs/open.c\n\
                    +++ b/fs/open.c\n@@ -1 +1 @@\n--- a/not/a/header.c\n+++ b/neither.c\n\
                    diff --git a/run.sh b/run.sh\nold mode 100644\nnew mode 100755\n\
                    diff --git a/fs/a.c b/fs/b.c\nsimilarity index 100%\nrename from fs/a.c\n\
                    rename to fs/b.c\n\
                    --- a/include/linux/fs.h\t2024-01-01 00:00:00\n+++ b/include/linux/fs.h\n\
                    @@ -1 +1 @@\n-a\n+b\n\
                    diff --git a/new.c b/new.c\nnew file mode 100644\n--- /dev/null\n+++ b/new.c\n";
        let got: Vec<String> = paths(text).into_iter().collect();
        assert_eq!(
            got,
            [
                "fs/a.c",
                "fs/b.c",
                "fs/open.c",
                "include/linux/fs.h",
                "new.c",
                "run.sh"
            ]
        );
        assert!(paths("no diff\n").is_empty());
    }

    #[test]
    fn a_diffstat_counts_files_and_lines_as_git_does() {
        let two = "diff --git a/fs/open.c b/fs/open.c\nindex 1..2 100644\n--- a/fs/open.c\n\
                   +++ b/fs/open.c\n@@ -10,3 +10,4 @@ int f(void)\n ctx\n-old\n+new\n+more\n ctx\n\
                   -- \n2.39.5\n\
                   diff --git a/run.sh b/run.sh\nold mode 100644\nnew mode 100755\n";
        let stat = diffstat(two);
        assert_eq!(
            stat,
            DiffStat {
                files: 2,
                insertions: 2,
                deletions: 1
            }
        );
        assert_eq!(
            stat.to_string(),
            "2 files changed, 2 insertions(+), 1 deletion(-)"
        );
        // A removed line that reads like a header is still a line.
        let tricky = "--- a/x\n+++ b/x\n@@ -1,2 +1 @@\n--- a\n keep\n";
        assert_eq!(
            diffstat(tricky),
            DiffStat {
                files: 1,
                insertions: 0,
                deletions: 1
            }
        );
        assert_eq!(diffstat("no diff here\n"), DiffStat::default());
    }

    /// Each seed patch says what `git format-patch` counted; we count the
    /// same.
    #[test]
    fn the_seed_patches_count_as_git_counted_them() {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../examples/patches");
        let mut checked = 0;
        for entry in std::fs::read_dir(dir).unwrap() {
            let path = entry.unwrap().path();
            if path.extension().is_none_or(|e| e != "patch") {
                continue;
            }
            let text = std::fs::read_to_string(&path).unwrap();
            let said = text
                .lines()
                .find(|l| l.contains(" changed, ") && l.trim_start().starts_with(char::is_numeric))
                .unwrap_or_else(|| panic!("{}: no summary line", path.display()));
            assert_eq!(
                diffstat(&text).to_string(),
                said.trim(),
                "{}",
                path.display()
            );
            checked += 1;
        }
        assert_eq!(checked, 5);
    }

    #[test]
    fn git_and_plain_unified_diffs_count() {
        assert!(has_diff(
            "diff --git a/x b/x\n--- a/x\n+++ b/x\n@@ -1 +1 @@\n-a\n+b\n"
        ));
        assert!(has_diff("words\n--- a/x\n+++ b/x\n@@ -1 +1 @@\n-a\n+b\n"));
    }

    #[test]
    fn mode_only_and_rename_only_git_diffs_count() {
        assert!(has_diff(
            "diff --git a/run.sh b/run.sh\nold mode 100644\nnew mode 100755\n"
        ));
        assert!(has_diff(
            "diff --git a/a.c b/b.c\nsimilarity index 100%\nrename from a.c\nrename to b.c\n"
        ));
    }

    #[test]
    fn words_and_half_diffs_do_not_count() {
        assert!(!has_diff("just words\n-- \n2.39.5\n"));
        assert!(!has_diff("--- a/x\n+++ b/x\nno hunk\n"));
        assert!(!has_diff("--- a/x\nwords\n+++ b/x\n@@ -1 +1 @@\n"));
        assert!(!has_diff(" diff --git a/x b/x\n"));
    }

    proptest::proptest! {
        #[test]
        fn any_text_yields_only_c_identifiers(text in "(@@ -[0-9,]{1,6} \\+[0-9,]{1,6} @@[ -~]{0,60}\n|\\+\\+\\+ b/[a-z/.]{1,20}\n|[ -~]{0,40}\n){0,30}") {
            for (file, names) in functions(&text) {
                proptest::prop_assert!(!file.is_empty());
                for name in names {
                    proptest::prop_assert!(name.len() <= 140, "{name}");
                    proptest::prop_assert!(name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_'), "{name}");
                }
            }
        }
    }
}
