//! The catalogue of will-it-scale-style workloads: their names as users type
//! them and a one-line description each. The runner implements them; the
//! server validates submitted workload names against this list. Also how a
//! workload's tasks run ([`TaskMode`]), which metric names spell out, so
//! `metric` need not reach up into `run` for it. Which source files each
//! workload's system calls run code from is [`map`]'s.

use serde::{Deserialize, Serialize};

pub mod map;

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
const READ: Syscall = Syscall {
    name: "read",
    entry: "read",
};
const WRITE: Syscall = Syscall {
    name: "write",
    entry: "write",
};
const POLL: &[Syscall] = &[Syscall {
    name: "poll",
    entry: "poll",
}];
const LSEEK: &[Syscall] = &[Syscall {
    name: "lseek",
    entry: "lseek",
}];
const FCNTL: &[Syscall] = &[Syscall {
    name: "fcntl",
    entry: "fcntl",
}];
const CREATE_UNLINK: &[Syscall] = &[
    OPENAT,
    CLOSE,
    Syscall {
        name: "unlink",
        entry: "unlink",
    },
];

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
    WorkloadInfo {
        name: "poll1",
        description: "poll of 1 fd of an own file for POLLOUT, no wait",
        syscalls: POLL,
    },
    WorkloadInfo {
        name: "poll2",
        description: "poll of 128 fds of an own file for POLLOUT, no wait",
        syscalls: POLL,
    },
    WorkloadInfo {
        name: "pipe1",
        description: "write + read of 1 byte through an own pipe",
        syscalls: &[WRITE, READ],
    },
    WorkloadInfo {
        name: "read1",
        description: "read of 4 KiB from an own 1 MiB file, lseek to 0 at its end",
        syscalls: &[READ],
    },
    WorkloadInfo {
        name: "read2",
        description: "read1 on one 1 MiB file all tasks read, each through its own fd",
        syscalls: &[READ],
    },
    WorkloadInfo {
        name: "write1",
        description: "write of 4 KiB to an own file, lseek to 0 every 1 MiB",
        syscalls: &[WRITE],
    },
    WorkloadInfo {
        name: "pread1",
        description: "pread of the first 4 KiB of an own file",
        syscalls: &[Syscall {
            name: "pread64",
            entry: "pread64",
        }],
    },
    WorkloadInfo {
        name: "pwrite1",
        description: "pwrite of 4 KiB at offset 0 of an own file",
        syscalls: &[Syscall {
            name: "pwrite64",
            entry: "pwrite64",
        }],
    },
    WorkloadInfo {
        name: "lseek1",
        description: "lseek to 0 of an fd of an own file",
        syscalls: LSEEK,
    },
    WorkloadInfo {
        name: "lseek2",
        description: "lseek1 on one file all tasks seek in, each through its own fd",
        syscalls: LSEEK,
    },
    WorkloadInfo {
        name: "unlink1",
        description: "open(O_CREAT) + close + unlink of an own file, all in one directory",
        syscalls: CREATE_UNLINK,
    },
    WorkloadInfo {
        name: "unlink2",
        description: "unlink1 with each task's file in its own directory",
        syscalls: CREATE_UNLINK,
    },
    WorkloadInfo {
        name: "lock1",
        description: "fcntl(F_SETLKW) write lock + unlock of byte 0 of an own file (2 ops)",
        syscalls: FCNTL,
    },
    WorkloadInfo {
        name: "lock2",
        description: "lock1 on one file all tasks lock, each through its own fd",
        syscalls: FCNTL,
    },
    WorkloadInfo {
        name: "eventfd1",
        description: "write + read of 8 bytes through an own eventfd",
        syscalls: &[WRITE, READ],
    },
    WorkloadInfo {
        name: "getppid1",
        description: "getppid: a bare syscall and no fs/ code, the floor",
        syscalls: &[Syscall {
            name: "getppid",
            entry: "getppid",
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
    fn the_workloads_are_known_by_will_it_scale_s_names() {
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
                "statx-empty",
                "poll1",
                "poll2",
                "pipe1",
                "read1",
                "read2",
                "write1",
                "pread1",
                "pwrite1",
                "lseek1",
                "lseek2",
                "unlink1",
                "unlink2",
                "lock1",
                "lock2",
                "eventfd1",
                "getppid1"
            ]
        );
        assert!(find("dup1").is_some());
        assert!(find("dup2").is_none());
    }
}
