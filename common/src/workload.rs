//! The catalogue of will-it-scale-style workloads: their names as users type
//! them and a one-line description each. The runner implements them; the
//! server validates submitted workload names against this list. Also how a
//! workload's tasks run ([`TaskMode`]), which metric names spell out, so
//! `metric` need not reach up into `run` for it.

use serde::{Deserialize, Serialize};

/// Processes (will-it-scale's default) or threads.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, Default)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "lowercase")]
pub enum TaskMode {
    /// Each task is a forked process.
    #[default]
    Process,
    /// Each task is a thread of one process.
    Thread,
}

impl TaskMode {
    /// `process` / `thread`, as in 0-day's `mode:` parameter.
    pub fn as_str(self) -> &'static str {
        match self {
            TaskMode::Process => "process",
            TaskMode::Thread => "thread",
        }
    }

    /// `processes` / `threads`, as in `will-it-scale.<N>.processes`.
    pub fn plural(self) -> &'static str {
        match self {
            TaskMode::Process => "processes",
            TaskMode::Thread => "threads",
        }
    }
}

/// One workload known to patchperf.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct WorkloadInfo {
    /// Name as used on the command line, in the API and in `will-it-scale.workload` reports.
    pub name: &'static str,
    /// What the loop body does, in kernel terms.
    pub description: &'static str,
    /// The system calls one operation of the loop makes, in order.
    pub syscalls: &'static [Syscall],
}

/// A system call as its manual page and the kernel's x86-64 entry point
/// name it: `fstat(2)` enters the kernel at `__x64_sys_newfstat`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Syscall {
    /// The name of its manual page (`fstat`).
    pub name: &'static str,
    /// Its entry point without `__x64_sys_` (`newfstat`).
    pub entry: &'static str,
}

impl Syscall {
    /// The entry point's symbol, as perf's profile names it:
    /// `__x64_sys_newfstat`.
    pub fn entry_symbol(&self) -> String {
        format!("__x64_sys_{}", self.entry)
    }
}

const OPENAT: Syscall = Syscall {
    name: "openat",
    entry: "openat",
};
const CLOSE: Syscall = Syscall {
    name: "close",
    entry: "close",
};
const OPEN_CLOSE: &[Syscall] = &[OPENAT, CLOSE];

/// Every workload, in the order `runner bench --list` prints them.
pub const WORKLOADS: &[WorkloadInfo] = &[
    WorkloadInfo {
        name: "open1",
        description: "open(own tmpfs file, O_RDWR) + close",
        syscalls: OPEN_CLOSE,
    },
    WorkloadInfo {
        name: "open2",
        description: "open + close of an own file, each task in its own directory",
        syscalls: OPEN_CLOSE,
    },
    WorkloadInfo {
        name: "open3",
        description: "open + close of one file shared by all tasks",
        syscalls: OPEN_CLOSE,
    },
    WorkloadInfo {
        name: "open-enoent",
        description: "open of a path that does not exist (fails with ENOENT)",
        syscalls: &[OPENAT],
    },
    WorkloadInfo {
        name: "open-creat",
        description: "open(existing own file, O_RDWR|O_CREAT) + close",
        syscalls: OPEN_CLOSE,
    },
    WorkloadInfo {
        name: "dup1",
        description: "dup + close of an fd",
        syscalls: &[
            Syscall {
                name: "dup",
                entry: "dup",
            },
            CLOSE,
        ],
    },
    WorkloadInfo {
        name: "fstat",
        description: "the native fstat syscall (raw syscall, not libc)",
        syscalls: &[Syscall {
            name: "fstat",
            entry: "newfstat",
        }],
    },
    WorkloadInfo {
        name: "fstatat-empty",
        description: "newfstatat(fd, \"\", AT_EMPTY_PATH): what glibc issues for fstat",
        syscalls: &[Syscall {
            name: "newfstatat",
            entry: "newfstatat",
        }],
    },
    WorkloadInfo {
        name: "statx-empty",
        description: "statx(fd, \"\", AT_EMPTY_PATH)",
        syscalls: &[Syscall {
            name: "statx",
            entry: "statx",
        }],
    },
];

/// Looks a workload up by name.
pub fn find(name: &str) -> Option<&'static WorkloadInfo> {
    WORKLOADS.iter().find(|w| w.name == name)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_nine_workloads_of_the_design_are_known_by_name() {
        let names: Vec<_> = WORKLOADS.iter().map(|w| w.name).collect();
        assert_eq!(
            names,
            [
                "open1",
                "open2",
                "open3",
                "open-enoent",
                "open-creat",
                "dup1",
                "fstat",
                "fstatat-empty",
                "statx-empty"
            ]
        );
        assert!(find("dup1").is_some());
        assert!(find("dup2").is_none());
    }
}
