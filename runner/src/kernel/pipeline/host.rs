//! What the jobs one runner executes at once share: the cache (one
//! `flock` for all of them, taken by the first and let go after the last,
//! so that taking it never clears a running job's scratch trees), kernel
//! preparation (one job fetches, patches and builds at a time: they share
//! base build trees and git worktrees), and the host's CPUs.
//!
//! The CPUs are shared by a rule of what may run beside what. Under
//! `tcg-icount` a guest's numbers count instructions, so guests (up to
//! `--parallel`) and builds may run side by side; a wall-clock boot (kvm,
//! plain tcg) measures time the host shares with whatever runs beside it,
//! so its boots run alone: it waits until every guest and build has ended,
//! and nothing new starts until its boots are done (it goes before guests
//! and builds that ask after it, so it never starves).

use std::sync::{Arc, Condvar, Mutex, MutexGuard, Weak};

use crate::Error;
use crate::kernel::cache::{Cache, CacheLock};

/// The shared part; cloned pipelines share one.
#[derive(Debug, Default)]
pub struct Host {
    lock: Mutex<Weak<CacheLock>>,
    prepare: Mutex<()>,
    cpus: Mutex<Use>,
    changed: Condvar,
}

/// What runs on the host's CPUs now.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct Use {
    /// tcg-icount guests running.
    pub guests: usize,
    /// Kernel preparations (fetch, apply, build) running.
    pub builds: usize,
    /// A wall-clock job is booting.
    pub alone: bool,
    /// Wall-clock jobs waiting to boot.
    pub waiting_alone: usize,
}

impl std::fmt::Display for Use {
    /// `2 guests and 1 kernel preparation`, `a wall-clock job's boots`.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.alone {
            return f.write_str("a wall-clock job's boots");
        }
        let plural = |n: usize, one: &str| format!("{n} {one}{}", if n == 1 { "" } else { "s" });
        let mut parts = Vec::new();
        if self.guests > 0 {
            parts.push(plural(self.guests, "guest"));
        }
        if self.builds > 0 {
            parts.push(plural(self.builds, "kernel preparation"));
        }
        if self.waiting_alone > 0 {
            parts.push(plural(self.waiting_alone, "wall-clock job") + " waiting to boot alone");
        }
        if parts.is_empty() {
            return f.write_str("nothing");
        }
        f.write_str(&parts.join(" and "))
    }
}

/// What a holder runs; let go when dropped.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Guest,
    Build,
    Alone,
}

/// A place on the host's CPUs, given back when dropped.
#[must_use = "the place is given back when dropped"]
#[derive(Debug)]
pub struct Place<'a> {
    host: &'a Host,
    kind: Kind,
}

impl Drop for Place<'_> {
    fn drop(&mut self) {
        let mut cpus = self.host.cpus();
        match self.kind {
            Kind::Guest => cpus.guests -= 1,
            Kind::Build => cpus.builds -= 1,
            Kind::Alone => cpus.alone = false,
        }
        drop(cpus);
        self.host.changed.notify_all();
    }
}

impl Host {
    /// The cache for one job: the lock this process holds already when
    /// another job runs, else taken now (waiting for another runner).
    pub fn cache_lock(&self, cache: &Cache) -> Result<Arc<CacheLock>, Error> {
        let mut held = self.lock.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(lock) = held.upgrade() {
            return Ok(lock);
        }
        let lock = Arc::new(cache.lock()?);
        *held = Arc::downgrade(&lock);
        Ok(lock)
    }

    /// Preparing kernels, one job at a time; the guard lets the next in.
    /// `waits` is called first when another job prepares.
    pub fn prepare(&self, waits: impl FnOnce()) -> MutexGuard<'_, ()> {
        match self.prepare.try_lock() {
            Ok(guard) => guard,
            Err(std::sync::TryLockError::Poisoned(e)) => e.into_inner(),
            Err(std::sync::TryLockError::WouldBlock) => {
                waits();
                self.prepare.lock().unwrap_or_else(|e| e.into_inner())
            }
        }
    }

    /// A build's place: beside guests, never beside a wall-clock boot.
    pub fn build(&self, waits: impl FnOnce(Use)) -> Place<'_> {
        self.take(Kind::Build, waits, |u| !u.alone && u.waiting_alone == 0)
    }

    /// A tcg-icount guest's place: one of `at_most`, never beside a
    /// wall-clock boot.
    pub fn guest(&self, at_most: usize, waits: impl FnOnce(Use)) -> Place<'_> {
        self.take(Kind::Guest, waits, |u| {
            !u.alone && u.waiting_alone == 0 && u.guests < at_most.max(1)
        })
    }

    /// The whole host, for a wall-clock job's boots.
    pub fn alone(&self, waits: impl FnOnce(Use)) -> Place<'_> {
        self.cpus().waiting_alone += 1;
        // What the others run: this job's own wait left out.
        let waits = |mut now: Use| {
            now.waiting_alone -= 1;
            waits(now);
        };
        let place = self.take(Kind::Alone, waits, |u| {
            !u.alone && u.guests == 0 && u.builds == 0
        });
        self.cpus().waiting_alone -= 1;
        place
    }

    /// What runs now.
    pub fn now(&self) -> Use {
        *self.cpus()
    }

    /// Takes a place of `kind` once `free`; `waits` is told what runs
    /// when it cannot be taken at once (outside the lock: it may report).
    fn take(&self, kind: Kind, waits: impl FnOnce(Use), free: impl Fn(&Use) -> bool) -> Place<'_> {
        let mut cpus = self.cpus();
        if !free(&cpus) {
            let now = *cpus;
            drop(cpus);
            waits(now);
            cpus = self.cpus();
        }
        while !free(&cpus) {
            cpus = self.changed.wait(cpus).unwrap_or_else(|e| e.into_inner());
        }
        match kind {
            Kind::Guest => cpus.guests += 1,
            Kind::Build => cpus.builds += 1,
            Kind::Alone => cpus.alone = true,
        }
        Place { host: self, kind }
    }

    fn cpus(&self) -> MutexGuard<'_, Use> {
        self.cpus.lock().unwrap_or_else(|e| e.into_inner())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    /// Waits until `host` shows `want`, at most 5 s.
    fn until(host: &Host, want: impl Fn(&Use) -> bool) -> Use {
        for _ in 0..500 {
            let now = host.now();
            if want(&now) {
                return now;
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        panic!("never reached; now {:?}", host.now());
    }

    #[test]
    fn guests_and_builds_run_side_by_side_up_to_the_guest_bound() {
        let host = Host::default();
        let at_once = |_| panic!("a free place is taken at once");
        let a = host.guest(2, at_once);
        let b = host.guest(2, at_once);
        let build = host.build(at_once);
        assert_eq!(
            host.now(),
            Use {
                guests: 2,
                builds: 1,
                alone: false,
                waiting_alone: 0
            }
        );
        std::thread::scope(|s| {
            let third = s.spawn(|| {
                let mut told = None;
                let _c = host.guest(2, |now| told = Some(now.to_string()));
                (told, host.now().guests)
            });
            std::thread::sleep(Duration::from_millis(50));
            assert!(!third.is_finished(), "a third guest waits for a place");
            drop(a);
            assert_eq!(
                third.join().unwrap(),
                (Some("2 guests and 1 kernel preparation".to_string()), 2),
                "a wait is told what runs"
            );
        });
        drop((b, build));
        assert_eq!(host.now(), Use::default());
    }

    #[test]
    fn a_wall_clock_boot_waits_for_everything_and_goes_before_what_asks_after_it() {
        let host = Host::default();
        let guest = host.guest(4, |_| {});
        let build = host.build(|_| {});
        std::thread::scope(|s| {
            let wall = s.spawn(|| {
                let place = host.alone(|_| {});
                let alone = host.now();
                std::thread::sleep(Duration::from_millis(50));
                drop(place);
                alone
            });
            until(&host, |u| u.waiting_alone == 1);
            // Asked after the wall-clock job: waits for its boots.
            let later = s.spawn(|| {
                let _g = host.guest(4, |_| {});
                host.now()
            });
            std::thread::sleep(Duration::from_millis(50));
            assert!(!wall.is_finished() && !later.is_finished());
            drop(guest);
            std::thread::sleep(Duration::from_millis(20));
            assert!(!wall.is_finished(), "a build still runs");
            drop(build);
            let alone = wall.join().unwrap();
            assert_eq!(
                alone,
                Use {
                    guests: 0,
                    builds: 0,
                    alone: true,
                    waiting_alone: 0
                }
            );
            let after = later.join().unwrap();
            assert!(!after.alone && after.guests == 1, "{after:?}");
        });
        assert_eq!(host.now(), Use::default());
    }

    #[test]
    fn the_cache_is_locked_once_for_the_jobs_that_run_at_once() {
        let dir = tempfile::tempdir().unwrap();
        let cache = Cache::at(dir.path());
        let host = Host::default();
        let first = host.cache_lock(&cache).unwrap();
        // A running job's scratch tree survives a second job's start.
        let scratch = first.scratch("job").unwrap();
        let second = host.cache_lock(&cache).unwrap();
        assert!(Arc::ptr_eq(&first, &second));
        assert!(scratch.path().is_dir());
        drop(scratch);
        drop((first, second));
        // Let go after the last: another process may take it now.
        let other = cache.lock().unwrap();
        drop(other);
        let again = host.cache_lock(&cache).unwrap();
        drop(again);
    }
}
