//! Applying is not enough for a hand port: the ported seed patches in
//! `examples/patches/` must also compile against Debian's linux-source-6.1.
//! This configures an x86_64 `defconfig` out of tree once, then for the
//! pristine tree, for each patch alone and for the whole series builds the
//! VFS objects the patches touch with `-Werror`. It takes a minute or two on
//! two cores (the first run also unpacks the tarball and runs `make
//! prepare`), so it is its own test binary: `cargo test --test
//! seed_patches_compile`, or set `PATCHPERF_SKIP_KERNEL_COMPILE=1` to skip it.

mod seed_patches_support;

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use patchperf_runner::proc::Cmd;
use seed_patches_support::{Mbox, SourceTree, copy_files, patch_p1, source_tree, touched_by_any};

/// Set (to anything) to skip this test.
const SKIP_ENV: &str = "PATCHPERF_SKIP_KERNEL_COMPILE";

/// What every build compiles: the VFS objects behind open/close/dup/stat,
/// whether or not a patch touches them, so that a header change shows up.
const VFS_OBJECTS: [&str; 5] = [
    "fs/open.o",
    "fs/file_table.o",
    "fs/namei.o",
    "fs/stat.o",
    "fs/file.o",
];

/// Programs a kernel build needs from the host.
const BUILD_TOOLS: [&str; 6] = ["make", "gcc", "flex", "bison", "bc", "perl"];

fn on_path(program: &str) -> bool {
    std::env::var_os("PATH")
        .is_some_and(|path| std::env::split_paths(&path).any(|dir| dir.join(program).is_file()))
}

/// Why this test cannot run here, if it cannot.
fn skip_reason() -> Option<String> {
    if std::env::var_os(SKIP_ENV).is_some() {
        return Some(format!("{SKIP_ENV} is set"));
    }
    let missing: Vec<&str> = BUILD_TOOLS.into_iter().filter(|p| !on_path(p)).collect();
    if !missing.is_empty() {
        return Some(format!(
            "kernel build tools missing: {}",
            missing.join(", ")
        ));
    }
    None
}

/// A build area: `src` is a hard-link farm of the pristine tree (cheap, and
/// `make O=` never writes into it); the files the patches touch are real
/// copies, replaced before every apply so the pristine tree is never written.
#[derive(Debug)]
struct BuildArea {
    pristine: PathBuf,
    src: PathBuf,
    out: PathBuf,
    touched: Vec<String>,
    objects: Vec<String>,
    make_flags: Vec<String>,
}

impl BuildArea {
    fn new(tree: &SourceTree, patches: &[Mbox]) -> BuildArea {
        let area = Path::new(env!("CARGO_TARGET_TMPDIR"))
            .join("seed-compile")
            .join(&tree.key);
        let src = area.join("src");
        if !src.join("Makefile").is_file() {
            std::fs::create_dir_all(&area).expect("creating the build area");
            let partial = area.join("src.partial");
            let _ = std::fs::remove_dir_all(&partial);
            Cmd::new("cp")
                .arg("-al")
                .arg(&tree.path)
                .arg(&partial)
                .timeout(Duration::from_secs(600))
                .run()
                .expect("hard-linking the source tree");
            std::fs::rename(&partial, &src).expect("moving the hard-link farm in place");
        }
        let touched = touched_by_any(patches);
        let mut objects: Vec<String> = VFS_OBJECTS.iter().map(|o| o.to_string()).collect();
        for file in &touched {
            if let Some(stem) = file.strip_suffix(".c") {
                let object = format!("{stem}.o");
                if !objects.contains(&object) {
                    objects.push(object);
                }
            }
        }
        let jobs = std::thread::available_parallelism().map_or(2, |n| n.get());
        let mut make_flags = vec![
            format!("-j{jobs}"),
            format!("O={}", area.join("out").display()),
        ];
        if on_path("ccache") {
            make_flags.push("CC=ccache gcc".to_string());
        }
        let build = BuildArea {
            pristine: tree.path.clone(),
            src,
            out: area.join("out"),
            touched,
            objects,
            make_flags,
        };
        build.restore();
        build
    }

    /// Puts back the pristine version of every file any patch touches.
    fn restore(&self) {
        copy_files(&self.pristine, &self.src, &self.touched);
    }

    fn make(&self) -> Cmd {
        Cmd::new("make")
            .current_dir(&self.src)
            .args(&self.make_flags)
            .timeout(Duration::from_secs(3600))
    }

    /// `defconfig` and `make prepare`, once per build area.
    fn configure(&self) {
        if !self.out.join(".config").is_file() {
            self.make()
                .arg("defconfig")
                .run()
                .unwrap_or_else(|e| panic!("make defconfig: {e}"));
        }
        self.make()
            .arg("prepare")
            .run()
            .unwrap_or_else(|e| panic!("make prepare: {e}"));
    }

    /// Builds the objects with warnings as errors; `Err` holds make's tail.
    fn build_objects(&self) -> Result<Duration, String> {
        let started = Instant::now();
        self.make()
            .arg("KCFLAGS=-Werror")
            .args(&self.objects)
            .run()
            .map(|_| started.elapsed())
            .map_err(|e| e.to_string())
    }
}

#[test]
fn every_seed_patch_compiles_on_linux_6_1_alone_and_as_a_series() {
    if let Some(reason) = skip_reason() {
        eprintln!("skipping: {reason}");
        return;
    }
    let tree = match source_tree() {
        Ok(tree) => tree,
        Err(reason) => {
            eprintln!("skipping: {reason}");
            return;
        }
    };
    let patches = Mbox::all();
    let area = BuildArea::new(&tree, &patches);
    area.configure();

    // A failure here is the toolchain's, not a patch's: say so.
    let took = area.build_objects().unwrap_or_else(|e| {
        panic!("pristine 6.1 does not build warning-free with this compiler: {e}")
    });
    eprintln!("pristine: {} built in {took:.1?}", area.objects.join(" "));

    let mut failures = Vec::new();
    for mbox in &patches {
        area.restore();
        if let Err(e) = patch_p1(&area.src, mbox).run() {
            failures.push(format!("{}: does not apply: {e}", mbox.name));
            continue;
        }
        match area.build_objects() {
            Ok(took) => eprintln!("{}: built in {took:.1?}", mbox.name),
            Err(e) => failures.push(format!("{}: does not compile: {e}", mbox.name)),
        }
    }

    area.restore();
    let applied = patches
        .iter()
        .all(|mbox| match patch_p1(&area.src, mbox).run() {
            Ok(_) => true,
            Err(e) => {
                failures.push(format!("series: {} does not apply: {e}", mbox.name));
                false
            }
        });
    if applied {
        match area.build_objects() {
            Ok(took) => eprintln!("series: built in {took:.1?}"),
            Err(e) => failures.push(format!("series: does not compile: {e}")),
        }
    }
    area.restore();

    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
}
