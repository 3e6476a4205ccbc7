//! The catalogue of will-it-scale-style workloads: their names as users type
//! them and a one-line description each. The runner implements them; the
//! server validates submitted workload names against this list.

/// One workload known to patchperf.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct WorkloadInfo {
    /// Name as used on the command line, in the API and in `will-it-scale.workload` reports.
    pub name: &'static str,
    /// What the loop body does, in kernel terms.
    pub description: &'static str,
}

/// Every workload, in the order `runner bench --list` prints them.
pub const WORKLOADS: &[WorkloadInfo] = &[
    WorkloadInfo {
        name: "open1",
        description: "open(own tmpfs file, O_RDWR) + close",
    },
    WorkloadInfo {
        name: "open2",
        description: "open + close of an own file, each task in its own directory",
    },
    WorkloadInfo {
        name: "open3",
        description: "open + close of one file shared by all tasks",
    },
    WorkloadInfo {
        name: "open-enoent",
        description: "open of a path that does not exist (fails with ENOENT)",
    },
    WorkloadInfo {
        name: "open-creat",
        description: "open(existing own file, O_RDWR|O_CREAT) + close",
    },
    WorkloadInfo {
        name: "dup1",
        description: "dup + close of an fd",
    },
    WorkloadInfo {
        name: "fstat",
        description: "the native fstat syscall (raw syscall, not libc)",
    },
    WorkloadInfo {
        name: "fstatat-empty",
        description: "newfstatat(fd, \"\", AT_EMPTY_PATH): what glibc issues for fstat",
    },
    WorkloadInfo {
        name: "statx-empty",
        description: "statx(fd, \"\", AT_EMPTY_PATH)",
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
