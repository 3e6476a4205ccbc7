//! The KVM probe's verdict, remembered per host boot in the cache file
//! `kvm-probe`: whether a probe boot showed KVM running at hardware speed
//! (nested KVM can be 1000× slower than TCG, so `/dev/kvm` opening is not
//! enough). The pipeline probes and writes it; the agent's inventory reads
//! it. This module is the only one that knows the file's format:
//!
//! ```text
//! <boot id of the host>
//! yes|no <why>
//! ```

use std::path::PathBuf;

use crate::kernel::cache::Cache;

/// The file, under the cache directory.
pub const PROBE_FILE: &str = "kvm-probe";

/// Where the host's boot id is: a verdict holds for one host boot.
const BOOT_ID: &str = "/proc/sys/kernel/random/boot_id";

/// What a probe boot found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KvmVerdict {
    /// KVM runs at hardware speed here.
    pub usable: bool,
    /// Why (or why not), as the probe put it.
    pub why: String,
}

/// The probe file of one cache.
#[derive(Debug, Clone)]
pub struct KvmProbeFile {
    path: PathBuf,
}

impl KvmProbeFile {
    /// The probe file of `cache`.
    pub fn of(cache: &Cache) -> KvmProbeFile {
        KvmProbeFile {
            path: cache.root().join(PROBE_FILE),
        }
    }

    /// The verdict of a probe during this host boot, if there was one.
    pub fn read(&self) -> Option<KvmVerdict> {
        let text = std::fs::read_to_string(&self.path).ok()?;
        parse(&text, &boot_id())
    }

    /// Remembers `verdict` for this host boot (best effort: without it the
    /// next job probes again).
    pub fn write(&self, verdict: &KvmVerdict) {
        let _ = std::fs::write(&self.path, format(verdict, &boot_id()));
    }
}

fn boot_id() -> String {
    std::fs::read_to_string(BOOT_ID)
        .unwrap_or_default()
        .trim()
        .to_string()
}

fn parse(text: &str, boot_id: &str) -> Option<KvmVerdict> {
    let (id, rest) = text.split_once('\n')?;
    if id.trim().is_empty() || id.trim() != boot_id {
        return None;
    }
    let (answer, why) = rest.split_once(' ').unwrap_or((rest, ""));
    Some(KvmVerdict {
        usable: answer.trim() == "yes",
        why: why.trim().to_string(),
    })
}

fn format(verdict: &KvmVerdict, boot_id: &str) -> String {
    let answer = if verdict.usable { "yes" } else { "no" };
    format!("{boot_id}\n{answer} {}\n", verdict.why)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_verdict_holds_for_the_host_boot_that_wrote_it() {
        let verdict = KvmVerdict {
            usable: false,
            why: "probe boot took 9.1 s (nested KVM?)".into(),
        };
        let text = format(&verdict, "3f2a");
        assert_eq!(text, "3f2a\nno probe boot took 9.1 s (nested KVM?)\n");
        assert_eq!(parse(&text, "3f2a"), Some(verdict));
        assert_eq!(parse(&text, "77aa"), None);
        assert_eq!(parse("\nyes fast\n", ""), None);
        assert_eq!(
            parse("3f2a\nyes\n", "3f2a"),
            Some(KvmVerdict {
                usable: true,
                why: String::new()
            })
        );
    }

    #[test]
    fn the_file_round_trips_in_a_cache() {
        let dir = tempfile::tempdir().unwrap();
        let file = KvmProbeFile::of(&Cache::at(dir.path()));
        assert_eq!(file.read(), None);
        let verdict = KvmVerdict {
            usable: true,
            why: "probe boot took 0.4 s".into(),
        };
        file.write(&verdict);
        if boot_id().is_empty() {
            // No boot id (not Linux /proc): a verdict holds for no boot.
            assert_eq!(file.read(), None);
        } else {
            assert_eq!(file.read(), Some(verdict));
        }
    }
}
