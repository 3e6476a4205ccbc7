//! Which source files each workload exercises, and so which workloads a
//! change to a file is measured on.
//!
//! Derived, not guessed: `patchperf-runner workload-map` boots a base
//! kernel built with line tables, profiles every workload, keeps the
//! samples taken inside the workload's own system calls (its entry point
//! on the stack, interrupt handlers cut off), and maps each function on
//! those stacks to the files its machine code comes from (`addr2line -i`
//! over the function's bytes in `vmlinux`: the `.c` file that defines it
//! and every header whose inline code it holds). The result is the data
//! file `map.tsv` beside this one, one line per workload and file, with
//! the share of the workload's syscall samples that pass through that
//! file's code (the largest share of one function holding it), and the
//! kernel releases it was seen on. `README.md`'s workload table is the
//! same data in words.
//!
//! `functions.tsv` keeps the same at the grain of functions: each
//! workload's functions (clone suffixes dropped, as 0-day names them),
//! their share and the files their code comes from.
//!
//! A change to a file is measured on the workloads with the largest
//! shares of it ([`WorkloadMap::chosen_for`]): at most
//! [`MAX_WORKLOADS_PER_FILE`], each with at least [`MIN_SHARE`] % (or the
//! one with most, where none has that much), so that a header every path
//! inlines calls for a few workloads, not all of them. Where the patch's
//! hunk headers name functions of the file that workloads run (the unlink
//! path of `fs/namei.c`, not its open path), the same rule picks among
//! the workloads running those functions instead
//! ([`WorkloadMap::select`]). A file no workload exercises calls for
//! none: such a change is not measured on a stand-in.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::OnceLock;

use crate::workload;

mod text;

/// The map derived for Debian's linux-source-6.1 and -6.12: files.
pub const DERIVED: &str = include_str!("map.tsv");

/// The same: functions.
pub const DERIVED_FUNCTIONS: &str = include_str!("functions.tsv");

/// A file's workloads are those with at least this share (%) of it...
pub const MIN_SHARE: f64 = 1.0;

/// ...and at most this many.
pub const MAX_WORKLOADS_PER_FILE: usize = 4;

/// One workload running code of one file.
#[derive(Debug, Clone, PartialEq)]
pub struct Exercised {
    /// The workload.
    pub workload: String,
    /// The file, relative to the tree's top (`fs/select.c`).
    pub file: String,
    /// Share of the workload's syscall samples through a function with
    /// code of the file, in %: the largest over those functions.
    pub share: f64,
    /// The kernel releases it was seen on (`6.12.118`).
    pub seen_on: Vec<String>,
}

/// One workload running one kernel function.
#[derive(Debug, Clone, PartialEq)]
pub struct RunsThrough {
    /// The workload.
    pub workload: String,
    /// The function, as 0-day names it (`do_sys_poll`, not
    /// `do_sys_poll.isra.0`).
    pub function: String,
    /// The files its code comes from: where it is defined, and the
    /// headers whose inline functions it holds.
    pub files: Vec<String>,
    /// Share of the workload's syscall samples with it on the stack, in %.
    pub share: f64,
    /// The kernel releases it was seen on.
    pub seen_on: Vec<String>,
}

/// The whole map.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct WorkloadMap {
    /// How it was derived, one line each (`#` lines of the data).
    pub notes: Vec<String>,
    /// By workload in catalogue order, then by share, largest first.
    pub entries: Vec<Exercised>,
    /// The same at the grain of functions, in the same order.
    pub functions: Vec<RunsThrough>,
}

/// The workloads a set of touched files calls for, and the files no
/// workload exercises.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Selection {
    /// In catalogue order.
    pub workloads: Vec<String>,
    /// Touched files the map has no workload for, in the order given.
    pub unexercised: Vec<String>,
    /// Nothing matched: the workloads are a list's own for such series.
    pub fallback: bool,
}

impl Selection {
    /// `not measured: no workload exercises fs/a.c, fs/b.c`, where nothing
    /// is measured.
    pub fn not_measured(&self) -> Option<String> {
        (self.workloads.is_empty() && !self.unexercised.is_empty()).then(|| {
            format!(
                "not measured: no workload exercises {}",
                self.unexercised.join(", ")
            )
        })
    }
}

/// Why a series gets no workloads from the map.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Unmapped {
    /// It touches files, none of them exercised by a workload; the words
    /// name them ([`Selection::not_measured`]).
    NotMeasured(String),
    /// It touches no file.
    NoFile,
}

impl std::fmt::Display for Unmapped {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Unmapped::NotMeasured(why) => f.write_str(why),
            Unmapped::NoFile => {
                f.write_str("the series touches no file; name the workloads to measure it on")
            }
        }
    }
}

/// The workloads the derived map gives the files and functions the series
/// `mbox` touches: what a submission or `runner job` that names none
/// measures.
pub fn for_series(mbox: &str) -> Result<Vec<String>, Unmapped> {
    let touched: Vec<String> = crate::mbox::diff::paths(mbox).into_iter().collect();
    let selection = WorkloadMap::derived().select(&touched, &crate::mbox::diff::functions(mbox));
    match selection.not_measured() {
        Some(why) => Err(Unmapped::NotMeasured(why)),
        None if selection.workloads.is_empty() => Err(Unmapped::NoFile),
        None => Ok(selection.workloads),
    }
}

impl WorkloadMap {
    /// The derived map ([`DERIVED`], [`DERIVED_FUNCTIONS`]), read once.
    pub fn derived() -> &'static WorkloadMap {
        static MAP: OnceLock<WorkloadMap> = OnceLock::new();
        MAP.get_or_init(|| {
            // A test reads the same texts and fails on any error.
            WorkloadMap::parse(DERIVED, DERIVED_FUNCTIONS).unwrap_or_default()
        })
    }

    /// Puts the entries in their order: workloads as the catalogue lists
    /// them, each one's files by share, largest first, then by name.
    pub fn sort(&mut self) {
        let rank = |w: &str| workload::WORKLOADS.iter().position(|x| x.name == w);
        self.entries.sort_by(|a, b| {
            rank(&a.workload)
                .cmp(&rank(&b.workload))
                .then(b.share.total_cmp(&a.share))
                .then(a.file.cmp(&b.file))
        });
        self.functions.sort_by(|a, b| {
            rank(&a.workload)
                .cmp(&rank(&b.workload))
                .then(b.share.total_cmp(&a.share))
                .then(a.function.cmp(&b.function))
        });
    }

    /// What `workload` exercises, largest share first.
    pub fn files_of<'a>(&'a self, workload: &'a str) -> impl Iterator<Item = &'a Exercised> {
        self.entries.iter().filter(move |e| e.workload == workload)
    }

    /// The workloads a change to `file` is measured on, largest share
    /// first (see the module's text).
    pub fn chosen_for(&self, file: &str) -> Vec<&str> {
        choose(
            self.entries
                .iter()
                .filter(|e| e.file == file)
                .map(|e| (e.workload.as_str(), e.share)),
        )
    }

    /// The workloads a change to `function` (code of `file`) is measured
    /// on, as [`WorkloadMap::chosen_for`] picks for a file; none where no
    /// workload runs it.
    pub fn chosen_for_function(&self, function: &str, file: &str) -> Vec<&str> {
        // A syscall's body `__do_sys_lseek` is inlined into the entry
        // point the profile sees, `__x64_sys_lseek`.
        let entry = function
            .strip_prefix("__do_sys_")
            .map(|call| format!("__x64_sys_{call}"));
        choose(
            self.functions
                .iter()
                .filter(|f| f.function == function || Some(&f.function) == entry.as_ref())
                .filter(|f| f.files.iter().any(|x| x == file))
                .map(|f| (f.workload.as_str(), f.share)),
        )
    }

    /// The workloads a series touching `touched` is measured on, and the
    /// touched files no workload exercises; `functions` are the functions
    /// its hunk headers name, by file (`mbox::diff::functions`).
    pub fn select(
        &self,
        touched: &[String],
        functions: &BTreeMap<String, BTreeSet<String>>,
    ) -> Selection {
        let mut selection = Selection::default();
        let mut chosen: Vec<&str> = Vec::new();
        for file in touched {
            // The functions its hunks are in that workloads run; where a
            // hunk is in none of those (outside any function, or in one no
            // profile shows, such as a static function inlined into its
            // caller), the file's own workloads as well.
            let mut workloads: Vec<&str> = Vec::new();
            let mut whole_file = true;
            if let Some(named) = functions.get(file) {
                whole_file = false;
                for f in named {
                    let chosen = self.chosen_for_function(f, file);
                    whole_file |= chosen.is_empty();
                    workloads.extend(chosen);
                }
            }
            if whole_file {
                workloads.extend(self.chosen_for(file));
            }
            if workloads.is_empty() {
                selection.unexercised.push(file.clone());
            }
            chosen.extend(workloads);
        }
        selection.workloads = workload::WORKLOADS
            .iter()
            .map(|w| w.name)
            .filter(|w| chosen.contains(w))
            .map(str::to_string)
            .collect();
        selection
    }

    /// Every file some workload is measured on, sorted.
    pub fn files(&self) -> Vec<&str> {
        let mut files: Vec<&str> = self.entries.iter().map(|e| e.file.as_str()).collect();
        files.sort_unstable();
        files.dedup();
        files
    }
}

/// At most [`MAX_WORKLOADS_PER_FILE`] of `(workload, share)`, each with at
/// least [`MIN_SHARE`], largest share first; else the one with most.
fn choose<'a>(candidates: impl Iterator<Item = (&'a str, f64)>) -> Vec<&'a str> {
    let mut all: Vec<(&str, f64)> = candidates.collect();
    all.sort_by(|a, b| b.1.total_cmp(&a.1));
    let enough: Vec<&str> = all
        .iter()
        .filter(|(_, share)| *share >= MIN_SHARE)
        .take(MAX_WORKLOADS_PER_FILE)
        .map(|(w, _)| *w)
        .collect();
    if enough.is_empty() {
        all.first().map(|(w, _)| *w).into_iter().collect()
    } else {
        enough
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    pub(super) const SMALL: &str = "\
# a test map
workload\tfile\tshare\tseen_on
dup1\tfs/file.c\t60.00\t6.12.118
open1\tinclude/linux/fs.h\t0.40\t6.1.192,6.12.118
dup1\tinclude/linux/fs.h\t0.20\t6.12.118
fstat\tinclude/linux/fs.h\t0.10\t6.12.118
open1\tfs/namei.c\t70.00\t6.1.192
open2\tfs/namei.c\t71.00\t6.1.192
open3\tfs/namei.c\t72.00\t6.1.192
open-creat\tfs/namei.c\t40.00\t6.1.192
unlink1\tfs/namei.c\t30.00\t6.1.192
open-enoent\tfs/namei.c\t0.50\t6.1.192
";

    const SMALL_FUNCTIONS: &str = "\
workload\tfunction\tfiles\tshare\tseen_on
unlink1\tdo_unlinkat\tfs/namei.c,include/linux/fs.h\t22.50\t6.1.192
unlink1\t__x64_sys_unlink\tfs/namei.c\t50.00\t6.1.192
unlink1\tpath_openat\tfs/namei.c\t40.00\t6.1.192
open1\tpath_openat\tfs/namei.c\t60.00\t6.1.192
";

    fn small() -> WorkloadMap {
        WorkloadMap::parse(SMALL, SMALL_FUNCTIONS).unwrap()
    }

    fn no_functions() -> BTreeMap<String, BTreeSet<String>> {
        BTreeMap::new()
    }

    #[test]
    fn a_map_reads_back_as_it_was_written_in_catalogue_order() {
        let map = small();
        assert_eq!(map.notes, ["a test map"]);
        let order: Vec<(&str, &str)> = map
            .entries
            .iter()
            .map(|e| (e.workload.as_str(), e.file.as_str()))
            .collect();
        assert_eq!(order[0], ("open1", "fs/namei.c"));
        assert_eq!(order[1], ("open1", "include/linux/fs.h"));
        assert_eq!(
            WorkloadMap::parse(&map.render(), &map.render_functions()).unwrap(),
            map
        );
        assert_eq!(map.functions[0].workload, "open1");
    }

    #[test]
    fn a_file_calls_for_the_workloads_that_run_most_of_it() {
        let map = small();
        // At most four, each with at least 1%, largest first.
        assert_eq!(
            map.chosen_for("fs/namei.c"),
            ["open3", "open2", "open1", "open-creat"]
        );
        // A header only inlined a little: the one that runs most of it.
        assert_eq!(map.chosen_for("include/linux/fs.h"), ["open1"]);
        assert!(map.chosen_for("fs/ext4/inode.c").is_empty());
        let touched =
            |files: &[&str]| -> Vec<String> { files.iter().map(|s| s.to_string()).collect() };
        let s = map.select(
            &touched(&["fs/file.c", "include/linux/fs.h", "fs/xyz.c"]),
            &no_functions(),
        );
        assert_eq!(s.workloads, ["open1", "dup1"]);
        assert_eq!(s.unexercised, ["fs/xyz.c"]);
        assert_eq!(s.not_measured(), None);
        let s = map.select(&touched(&["fs/xyz.c", "fs/ext4/inode.c"]), &no_functions());
        assert!(s.workloads.is_empty());
        assert_eq!(
            s.not_measured().as_deref(),
            Some("not measured: no workload exercises fs/xyz.c, fs/ext4/inode.c")
        );
    }

    #[test]
    fn a_change_to_one_function_calls_for_the_workloads_that_run_it() {
        let map = small();
        let touched = vec!["fs/namei.c".to_string()];
        let named = |f: &[&str]| -> BTreeMap<String, BTreeSet<String>> {
            [(
                "fs/namei.c".to_string(),
                f.iter().map(|s| s.to_string()).collect(),
            )]
            .into()
        };
        // The unlink path of fs/namei.c: unlink1, not the open family.
        assert_eq!(
            map.select(&touched, &named(&["do_unlinkat"])).workloads,
            ["unlink1"]
        );
        assert_eq!(
            map.select(&touched, &named(&["path_openat"])).workloads,
            ["open1", "unlink1"]
        );
        // A function no workload runs: the file's workloads.
        assert_eq!(
            map.select(&touched, &named(&["do_mknodat"])).workloads,
            ["open1", "open2", "open3", "open-creat"]
        );
        // A hunk in the unlink path and one outside any function: both.
        assert_eq!(
            map.select(&touched, &named(&["do_unlinkat", ""])).workloads,
            ["open1", "open2", "open3", "open-creat", "unlink1"]
        );
        // A function counts in every file its code comes from (do_unlinkat
        // holds inline code of fs.h), and in no other.
        assert_eq!(
            map.chosen_for_function("do_unlinkat", "include/linux/fs.h"),
            ["unlink1"]
        );
        assert!(
            map.chosen_for_function("do_unlinkat", "fs/open.c")
                .is_empty()
        );
        // SYSCALL_DEFINE1(unlink, …) is __do_sys_unlink in a hunk header,
        // __x64_sys_unlink in a profile.
        assert_eq!(
            map.chosen_for_function("__do_sys_unlink", "fs/namei.c"),
            ["unlink1"]
        );
    }

    #[test]
    fn the_derived_map_reads_and_covers_every_workload() {
        let map = WorkloadMap::parse(DERIVED, DERIVED_FUNCTIONS).unwrap();
        assert_eq!(&map, WorkloadMap::derived());
        assert!(!map.functions.is_empty());
        for w in workload::WORKLOADS {
            assert!(
                map.files_of(w.name).next().is_some(),
                "{} exercises nothing in the map",
                w.name
            );
        }
    }

    /// What a kernel developer knows each workload's system calls run
    /// through: the map derived from profiles must agree, or the
    /// derivation is broken.
    #[test]
    fn the_derived_map_names_the_file_each_workload_is_about() {
        let map = WorkloadMap::derived();
        let expect = [
            ("open1", "fs/namei.c"),
            ("open1", "fs/open.c"),
            ("open-enoent", "fs/namei.c"),
            ("dup1", "fs/file.c"),
            ("fstat", "fs/stat.c"),
            ("fstatat-empty", "fs/stat.c"),
            ("statx-empty", "fs/stat.c"),
            ("poll1", "fs/select.c"),
            ("poll2", "fs/select.c"),
            ("pipe1", "fs/pipe.c"),
            ("read1", "fs/read_write.c"),
            ("read2", "fs/read_write.c"),
            ("write1", "fs/read_write.c"),
            ("pread1", "fs/read_write.c"),
            ("pwrite1", "fs/read_write.c"),
            ("lseek1", "fs/read_write.c"),
            ("lseek2", "fs/read_write.c"),
            ("unlink1", "fs/namei.c"),
            ("unlink2", "fs/namei.c"),
            ("lock1", "fs/locks.c"),
            ("lock2", "fs/locks.c"),
            ("eventfd1", "fs/eventfd.c"),
        ];
        for (workload, file) in expect {
            assert!(
                map.files_of(workload).any(|e| e.file == file),
                "{workload} does not exercise {file} in the derived map"
            );
        }
        // The floor runs no file system code.
        assert!(
            !map.files_of("getppid1").any(|e| e.file.starts_with("fs/")),
            "{:?}",
            map.files_of("getppid1").collect::<Vec<_>>()
        );
        // Each fs/ file of the series calls for its own family.
        for (file, family) in [
            ("fs/select.c", "poll"),
            ("fs/pipe.c", "pipe"),
            ("fs/locks.c", "lock"),
            ("fs/eventfd.c", "eventfd"),
        ] {
            let chosen = map.chosen_for(file);
            assert!(
                chosen.iter().any(|w| w.starts_with(family)),
                "{file}: {chosen:?}"
            );
        }
    }
}
