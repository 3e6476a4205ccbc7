//! Prepare: fetch → apply → configure → build, from a job to its two
//! [`BuiltKernel`]s. The pristine kernel comes from the cache when this
//! source, config and compiler were built before; a kernel with patches
//! (the patched side, and the base side of a per-patch step) builds on top
//! of the pristine kernel's build tree, so only what its series touches is
//! recompiled. Each step is a function of what the previous one produced
//! ([`BuildSetup`], [`PatchedTree`]), and its failure names the step.

use std::path::Path;

use patchperf_common::protocol::{FailureReason, JobSpec, JobState};
use patchperf_common::run::Side;

use super::Events;
use super::failure::{JobFailure, failure};
use crate::Error;
use patchperf_common::digest::sha256_hex;

use crate::kernel::apply::patch::{self, Applied, ApplyError};
use crate::kernel::build::built::{self, BuiltKernel, Finished};
use crate::kernel::build::make::{self, Make, Toolchain};
use crate::kernel::cache::CacheLock;
use crate::kernel::configure::config::{self, ConfigRecipe};
use crate::kernel::fetch::source::{self, Pristine, Tree};
use crate::kernel::fetch::tree_view::{self, View};
use crate::proc::{Event, Flow};

/// The two built kernels of a job.
#[derive(Debug, Clone)]
pub struct Kernels {
    /// Without the series.
    pub base: BuiltKernel,
    /// With the series.
    pub patched: BuiltKernel,
}

impl Kernels {
    /// The kernel of one side.
    pub fn side(&self, side: Side) -> &BuiltKernel {
        match side {
            Side::Base => &self.base,
            Side::Patched => &self.patched,
        }
    }
}

/// What every kernel of a job is built from: the fetched source, the
/// configuration recipe and the compiler, and the base kernel's cache key
/// they make.
#[derive(Debug)]
pub struct BuildSetup {
    /// The fetched, never patched source tree.
    pub pristine: Pristine,
    /// The job's configuration.
    pub recipe: ConfigRecipe,
    /// The compiler.
    pub toolchain: Toolchain,
    /// Cache key of the base kernel.
    pub base_key: String,
}

/// A patched tree (an overlay or a copy) in a scratch directory; the tree
/// goes first (a copy that is a git worktree unregisters itself), then the
/// directory.
#[derive(Debug)]
pub struct PatchedTree {
    tree: Tree,
    applied: Applied,
    patches_sha256: String,
    _scratch: tempfile::TempDir,
}

/// One side before building: the pristine kernel, a kernel in the cache
/// already, or a tree with its patches applied.
enum Pending {
    Pristine,
    Cached(BuiltKernel),
    Applied(PatchedTree),
}

/// Fetch, apply, configure and build the job's two kernels. A side without
/// patches is the pristine kernel (from the cache when this source, config
/// and compiler were built before); a side with patches (the patched side,
/// and the base side of a step of a per-patch comparison, which carries
/// patches 1..k-1) is built on top of the pristine kernel's build tree and
/// cached by its series, so the kernel one step builds for its patched
/// side is the one the next step finds for its base side.
pub fn kernels(
    lock: &CacheLock,
    job: &JobSpec,
    events: &mut dyn Events,
) -> Result<Kernels, JobFailure> {
    let setup = fetch(lock, job, events)?;
    if job.aa {
        // A/A: the "patched" boots boot the base kernel too.
        let base = base_kernel(lock, &setup, events)?;
        events.state(
            JobState::Building,
            "A/A comparison: both sides boot the base kernel",
        );
        return Ok(Kernels {
            patched: base.clone(),
            base,
        });
    }
    // Apply before building anything: a series that does not apply fails
    // the job in seconds, not after a cold build.
    let base = pending(lock, &setup, &job.base_mbox, Side::Base, events)?;
    let patched = pending(lock, &setup, &job.mbox, Side::Patched, events)?;
    let pristine = match (&base, &patched) {
        (Pending::Cached(_), Pending::Cached(_)) => None,
        _ => Some(base_kernel(lock, &setup, events)?),
    };
    let mut built = |side: Side, p: Pending| -> Result<BuiltKernel, JobFailure> {
        match p {
            Pending::Pristine => pristine
                .clone()
                .ok_or_else(|| JobFailure::new(FailureReason::Other, "no pristine kernel")),
            Pending::Cached(k) => {
                events.state(
                    JobState::Building,
                    &format!("{} kernel found in the cache", side.as_str()),
                );
                Ok(k)
            }
            Pending::Applied(tree) => build_patched(lock, &setup, tree, side, events),
        }
    };
    Ok(Kernels {
        base: built(Side::Base, base)?,
        patched: built(Side::Patched, patched)?,
    })
}

/// One side before building: `mbox` empty is the pristine kernel; else its
/// kernel from the cache, or a tree with `mbox` applied.
fn pending(
    lock: &CacheLock,
    setup: &BuildSetup,
    mbox: &str,
    side: Side,
    events: &mut dyn Events,
) -> Result<Pending, JobFailure> {
    if mbox.is_empty() && side == Side::Base {
        return Ok(Pending::Pristine);
    }
    let patches_sha256 = sha256_hex(mbox.as_bytes());
    let key = built::patched_key(&setup.base_key, &patches_sha256);
    Ok(match BuiltKernel::find(lock, &key) {
        Some(k) => Pending::Cached(k),
        None => Pending::Applied(apply(lock, setup, mbox, patches_sha256, side, events)?),
    })
}

/// Fetch step: the job's base source, with what its kernels are built with.
pub fn fetch(
    lock: &CacheLock,
    job: &JobSpec,
    events: &mut dyn Events,
) -> Result<BuildSetup, JobFailure> {
    events.state(
        JobState::Fetching,
        &format!("fetching {}", job.base.describe()),
    );
    let pristine = source::fetch(lock, &job.base)
        .map_err(|e| failure(FailureReason::FetchFailed, "fetch", e))?;
    let toolchain =
        Toolchain::detect().map_err(|e| failure(FailureReason::BuildFailed, "finding gcc", e))?;
    let recipe = ConfigRecipe::new(job.config_fragment.clone())
        .map_err(|e| failure(FailureReason::BuildFailed, "config fragment", e))?;
    let base_key = built::base_key(&pristine.source_id, &recipe, &toolchain);
    Ok(BuildSetup {
        pristine,
        recipe,
        toolchain,
        base_key,
    })
}

/// Apply step: a fresh tree on the pristine one (an overlay, else a copy)
/// with the series `mbox` (whose sha256 is `patches_sha256`) on it, for the
/// kernel of `side`.
pub fn apply(
    lock: &CacheLock,
    setup: &BuildSetup,
    mbox: &str,
    patches_sha256: String,
    side: Side,
    events: &mut dyn Events,
) -> Result<PatchedTree, JobFailure> {
    let pristine = &setup.pristine;
    let scratch = lock
        .scratch(side.as_str())
        .map_err(|e| failure(FailureReason::Other, "apply", e))?;
    let tree = patched_tree(pristine, scratch.path(), events)?;
    let mbox_path = scratch.path().join("series.mbox");
    std::fs::write(&mbox_path, mbox).map_err(|e| {
        failure(
            FailureReason::Other,
            "apply",
            Error::io("writing the mbox", e),
        )
    })?;
    events.state(
        JobState::Applying,
        &format!("applying the {} kernel's patch series", side.as_str()),
    );
    match patch::apply(&tree, &mbox_path, scratch.path()) {
        Ok(applied) => Ok(PatchedTree {
            tree,
            applied,
            patches_sha256,
            _scratch: scratch,
        }),
        Err(ApplyError::DoesNotApply { patch, detail }) => Err(JobFailure {
            reason: FailureReason::PatchDoesNotApply,
            detail: format!(
                "patch {patch} does not apply to {} (for the {} kernel):\n{detail}",
                pristine.source_id,
                side.as_str()
            ),
            log_tail: detail,
        }),
        Err(ApplyError::NoPatches) => Err(JobFailure::new(
            FailureReason::PatchDoesNotApply,
            "the mbox holds no patch (no unified diff in any message)",
        )),
        Err(ApplyError::Machine(m)) => Err(JobFailure::new(FailureReason::Other, m)),
    }
}

/// The patched side's tree: an overlay on the pristine tree (a tarball's
/// or a git worktree) where overlayfs works (nothing copied), else a full
/// copy.
fn patched_tree(
    pristine: &Pristine,
    scratch: &Path,
    events: &mut dyn Events,
) -> Result<Tree, JobFailure> {
    let dest = scratch.join("linux");
    match tree_view::overlay_works(&pristine.dir, scratch) {
        Ok(()) => {
            return Tree::overlay_on(pristine, &dest)
                .map_err(|e| failure(FailureReason::Other, "apply", e));
        }
        Err(why) => events.line(&format!(
            "patchperf: overlayfs not usable here ({why}); copying the tree instead"
        )),
    }
    events.state(
        JobState::Applying,
        "copying the source tree for the patched kernel",
    );
    Tree::copy_of(pristine, &dest)
        .map_err(|e| failure(FailureReason::Other, "copying the source tree", e))
}

/// The base kernel: from the cache, else configured and built in the
/// pristine tree (whose build tree then stays for patched builds).
pub fn base_kernel(
    lock: &CacheLock,
    setup: &BuildSetup,
    events: &mut dyn Events,
) -> Result<BuiltKernel, JobFailure> {
    if let Some(k) = BuiltKernel::find(lock, &setup.base_key) {
        return Ok(k);
    }
    let key = &setup.base_key;
    let make = base_make(lock, setup);
    events.state(JobState::Building, "configuring the base kernel");
    let config_sha256 = configure(&make, &setup.recipe, events)?;
    events.state(JobState::Building, "building the base kernel");
    let build_seconds = make_bzimage(&make, events)?;
    let finished = Finished {
        key,
        source: &setup.pristine.source_id,
        patches_sha256: None,
        patches: None,
        config_sha256,
        build_seconds,
    };
    BuiltKernel::store(lock, &make, finished)
        .map_err(|e| failure(FailureReason::BuildFailed, "storing the base kernel", e))
}

/// Whether the base build tree `base_build` was built at another path (a
/// cache copied or moved): objtool's build records its absolute output
/// path, and where that is not this tree's, make rebuilds every object of
/// every patched kernel (from ccache, ~45 s on 2 CPUs instead of ~9 s). A
/// tree without objtool's record says nothing.
fn built_elsewhere(base_build: &Path) -> bool {
    let Ok(record) = std::fs::read_to_string(base_build.join("tools/objtool/.fixdep.o.cmd")) else {
        return false;
    };
    // make sees the tree by its real path (getcwd resolves links).
    let here = base_build
        .canonicalize()
        .unwrap_or_else(|_| base_build.to_path_buf());
    !record.contains(&format!("{}/", here.display()))
}

/// Rebuilds the base build tree in place, once, so that patched builds on
/// top of it are incremental again; the base kernel it makes is the one
/// cached (same source, config, compiler and version string).
fn settle_base_tree(
    lock: &CacheLock,
    setup: &BuildSetup,
    events: &mut dyn Events,
) -> Result<(), JobFailure> {
    events.state(
        JobState::Building,
        "rebuilding the base build tree where it now is (it was built at another path)",
    );
    make_bzimage(&base_make(lock, setup), events).map(|_| ())
}

/// The base kernel's build tree (`vmlinux`, the objects), kept in the
/// cache beside its source.
pub fn base_build_dir(lock: &CacheLock, setup: &BuildSetup) -> std::path::PathBuf {
    base_make(lock, setup).build_dir()
}

/// Make for the base kernel, in the pristine tree.
fn base_make(lock: &CacheLock, setup: &BuildSetup) -> Make {
    Make::new(
        &View::plain(&setup.pristine.dir),
        &built::build_dir_name(&setup.base_key),
        &setup.toolchain,
        &lock.cache().ccache_dir(),
        &setup.base_key[..12],
    )
}

/// Build step of a patched tree, the kernel of `side`: on top of the
/// pristine kernel's build tree when there is one (only what the series
/// touched is rebuilt), else configured from scratch.
pub fn build_patched(
    lock: &CacheLock,
    setup: &BuildSetup,
    patched: PatchedTree,
    side: Side,
    events: &mut dyn Events,
) -> Result<BuiltKernel, JobFailure> {
    let key = built::patched_key(&setup.base_key, &patched.patches_sha256);
    let tree = &patched.tree;
    let applied = &patched.applied;
    let dir_name = built::build_dir_name(&setup.base_key);
    let base_build = setup.pristine.dir.join(&dir_name);
    let make = Make::new(
        &tree.view,
        &dir_name,
        &setup.toolchain,
        &lock.cache().ccache_dir(),
        &key[..12],
    );
    if base_build.join(".config").is_file() {
        if built_elsewhere(&base_build) {
            settle_base_tree(lock, setup, events)?;
        }
        // Start from the base's objects: only what the series touched is
        // rebuilt. An overlay has them in its lower layer already; a copy
        // gets a copy.
        if let Some(copy) = tree.copy_dir() {
            events.state(JobState::Building, "copying the base build tree");
            source::copy_dir(&base_build, &copy.join(&dir_name))
                .map_err(|e| failure(FailureReason::Other, "copying the base build tree", e))?;
        }
        // The series went on before the base was built (to fail fast), so
        // the base's objects can be newer than the patched sources: make
        // would keep them and build the base kernel again under the
        // patched kernel's name. Touched now, the patched files are newer
        // than anything built.
        if !applied.files.is_empty() {
            tree.view
                .cmd("touch")
                .args(["--no-create", "--"])
                .args(&applied.files)
                .run()
                .map_err(|e| failure(FailureReason::Other, "touching the patched files", e))?;
        }
    } else {
        events.state(
            JobState::Building,
            &format!("configuring the {} kernel", side.as_str()),
        );
        configure(&make, &setup.recipe, events)?;
    }
    events.state(
        JobState::Building,
        &format!(
            "building the {} kernel ({} patch{}, {} file{})",
            side.as_str(),
            applied.patches,
            if applied.patches == 1 { "" } else { "es" },
            applied.files.len(),
            if applied.files.len() == 1 { "" } else { "s" },
        ),
    );
    let build_seconds = make_bzimage(&make, events)?;
    // The series may change Kconfig; what counts is the .config it built.
    let config_sha256 = config::verify(&make, &setup.recipe)
        .map_err(|e| failure(FailureReason::BuildFailed, "the patched tree's config", e))?;
    let finished = Finished {
        key: &key,
        source: &setup.pristine.source_id,
        patches_sha256: Some(&patched.patches_sha256),
        patches: u32::try_from(applied.patches).ok(),
        config_sha256,
        build_seconds,
    };
    BuiltKernel::store(lock, &make, finished)
        .map_err(|e| failure(FailureReason::BuildFailed, "storing a patched kernel", e))
}

/// Configure step: keeps a build tree's `.config` when it is still what
/// the recipe makes; says in the build log what fitting the recipe to the
/// tree changed.
fn configure(
    make: &Make,
    recipe: &ConfigRecipe,
    events: &mut dyn Events,
) -> Result<String, JobFailure> {
    if make.has(".config") {
        if let Ok(sha) = config::verify(make, recipe) {
            return Ok(sha);
        }
    }
    let configured = config::configure(make, recipe)
        .map_err(|e| failure(FailureReason::BuildFailed, "configure", e))?;
    for note in &configured.notes {
        events.line(&format!("configure: {note}"));
    }
    Ok(configured.sha256)
}

/// `make bzImage`, its output passed on as lines; returns the seconds.
fn make_bzimage(make: &Make, events: &mut dyn Events) -> Result<f64, JobFailure> {
    let mut watcher = |ev: Event<'_>| {
        if let Event::Line(l) = ev {
            events.line(l);
        }
        if events.cancelled() {
            Flow::Stop
        } else {
            Flow::Continue
        }
    };
    match make.bzimage(&mut watcher) {
        Ok(d) => Ok(d.as_secs_f64()),
        Err(e) => {
            let first = e.log_tail().and_then(make::first_error).map(str::to_string);
            let mut f = failure(FailureReason::BuildFailed, "make bzImage", e);
            if let Some(first) = first {
                f.detail = format!("build failed: {first}");
            }
            Err(f)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kernel::build::make::tests::toolchain;
    use crate::kernel::cache::Cache;
    use crate::kernel::fetch::source::SourceKind;
    use patchperf_common::mbox;

    #[test]
    fn a_base_build_tree_built_at_another_path_is_told_apart() {
        let dir = tempfile::tempdir().unwrap();
        let build = dir.path().join(".build-abc");
        std::fs::create_dir_all(build.join("tools/objtool")).unwrap();
        let record = build.join("tools/objtool/.fixdep.o.cmd");
        assert!(!built_elsewhere(&build), "no record: nothing to say");
        let real = build.canonicalize().unwrap();
        std::fs::write(
            &record,
            format!(
                "cmd_{0}/tools/objtool/fixdep.o := gcc -Wp,-MD,{0}/tools/objtool/.fixdep.o.d\n",
                real.display()
            ),
        )
        .unwrap();
        assert!(!built_elsewhere(&build));
        std::fs::write(
            &record,
            "cmd_/var/cache/elsewhere/sources/linux/.build-abc/tools/objtool/fixdep.o := gcc\n",
        )
        .unwrap();
        assert!(built_elsewhere(&build));
    }

    struct Quiet;
    impl Events for Quiet {
        fn state(&mut self, _: JobState, _: &str) {}
        fn line(&mut self, _: &str) {}
        fn result(
            &mut self,
            _: patchperf_common::protocol::BootSlot,
            _: patchperf_common::run::RunResult,
        ) -> Result<(), Error> {
            Ok(())
        }
        fn cancelled(&self) -> bool {
            false
        }
    }

    /// A 3-patch series, patch n changing file `fn` of the tree.
    fn series() -> String {
        (1..=3)
            .map(|n| {
                format!(
                    "{}From: A <a@example.org>\nSubject: [PATCH {n}/3] f{n}\n\n---\n\
                     --- a/f{n}\n+++ b/f{n}\n@@ -1 +1 @@\n-a\n+b\n\n",
                    mbox::SEPARATOR
                )
            })
            .collect()
    }

    /// A pristine "tree" of files f1..f3 (each `a`), in a cache under `root`.
    fn setup(root: &Path) -> (Cache, BuildSetup) {
        let dir = root.join("source");
        std::fs::create_dir_all(&dir).unwrap();
        for n in 1..=3 {
            std::fs::write(dir.join(format!("f{n}")), "a\n").unwrap();
        }
        let recipe = ConfigRecipe::new(None).unwrap();
        let toolchain = toolchain("gcc (Debian 12.2.0-14) 12.2.0");
        let source_id = "tiny sha256:00".to_string();
        let base_key = built::base_key(&source_id, &recipe, &toolchain);
        let setup = BuildSetup {
            pristine: Pristine {
                dir,
                source_id,
                kind: SourceKind::Tarball,
            },
            recipe,
            toolchain,
            base_key,
        };
        (Cache::at(root.join("cache")), setup)
    }

    /// Stores a kernel record as [`BuiltKernel::store`] would.
    fn cached(cache: &Cache, key: &str) {
        let dir = cache.kernels_dir().join(key);
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join("bzImage"), "image").unwrap();
        let k = BuiltKernel {
            key: key.into(),
            source: "tiny sha256:00".into(),
            patches_sha256: None,
            patches: Some(1),
            config_sha256: "cf".into(),
            compiler: "gcc".into(),
            build_seconds: 1.0,
            image_bytes: 5,
            dir: dir.clone(),
        };
        std::fs::write(dir.join("kernel.json"), serde_json::to_string(&k).unwrap()).unwrap();
    }

    #[test]
    fn a_base_with_patches_is_built_like_a_patched_kernel_and_found_by_the_next_step() {
        let root = tempfile::tempdir().unwrap();
        let (cache, setup) = setup(root.path());
        let lock = cache.lock().unwrap();
        let prefixes = mbox::prefixes(&series());
        // No patches: the pristine kernel.
        let base = pending(&lock, &setup, "", Side::Base, &mut Quiet).unwrap();
        assert!(matches!(base, Pending::Pristine));
        // Step 2's base carries patch 1: applied on a copy of the tree, as
        // a patched side is, and built on the pristine build tree.
        let base = pending(&lock, &setup, &prefixes[0], Side::Base, &mut Quiet).unwrap();
        let Pending::Applied(tree) = base else {
            panic!("patch 1 should go on a fresh tree");
        };
        assert_eq!(tree.applied.patches, 1);
        assert_eq!(tree.applied.files, ["f1"]);
        assert_eq!(tree.patches_sha256, sha256_hex(prefixes[0].as_bytes()));
        // Once step 1 built its patched kernel (patch 1), step 2 finds it
        // for its base side: same key.
        let step1_patched =
            built::patched_key(&setup.base_key, &sha256_hex(prefixes[0].as_bytes()));
        cached(&cache, &step1_patched);
        match pending(&lock, &setup, &prefixes[0], Side::Base, &mut Quiet).unwrap() {
            Pending::Cached(k) => assert_eq!(k.key, step1_patched),
            _ => panic!("step 2's base kernel is step 1's patched kernel"),
        }
        // A prefix that does not apply names its patch.
        std::fs::write(setup.pristine.dir.join("f2"), "changed\n").unwrap();
        let Err(f) = pending(&lock, &setup, &prefixes[1], Side::Patched, &mut Quiet) else {
            panic!("patch 2 should not apply");
        };
        assert_eq!(f.reason, FailureReason::PatchDoesNotApply);
        assert!(
            f.detail.starts_with("patch 2/2 \"[PATCH 2/3] f2\""),
            "{}",
            f.detail
        );
    }
}
