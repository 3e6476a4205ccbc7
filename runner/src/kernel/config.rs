//! Configure: one benchmark config for both sides of a comparison —
//! `make tinyconfig`, then patchperf's fragment (`runner/kernel/patchperf.config`)
//! and the comparison's own fragment appended and resolved with
//! `make olddefconfig`. Every option a fragment sets must survive into the
//! final `.config`: Kconfig silently drops an option whose dependencies are
//! missing, and a kernel without 9p or tmpfs fails much later and less
//! clearly.

use crate::Error;
use crate::kernel::make::Make;
use patchperf_common::digest::sha256_hex;

/// patchperf's benchmark fragment, merged on top of `tinyconfig`.
pub const BENCHMARK_FRAGMENT: &str = include_str!("../../kernel/patchperf.config");

/// What decides a kernel's configuration, short of the source and compiler.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConfigRecipe {
    /// The comparison's own Kconfig lines, applied after ours.
    pub user_fragment: Option<String>,
}

impl ConfigRecipe {
    /// A recipe, checking the user fragment's lines (each must be
    /// `CONFIG_X=…`, `# CONFIG_X is not set`, a comment or blank).
    pub fn new(user_fragment: Option<String>) -> Result<Self, Error> {
        if let Some(f) = &user_fragment {
            for (i, line) in f.lines().enumerate() {
                if parse_line(line).is_none() && !is_comment_or_blank(line) {
                    return Err(Error::Usage(format!(
                        "config fragment line {}: {line:?} is not `CONFIG_X=value` or `# CONFIG_X is not set`",
                        i + 1
                    )));
                }
            }
        }
        Ok(ConfigRecipe { user_fragment })
    }

    /// Everything appended to the tinyconfig `.config`, ours first.
    pub fn fragment(&self) -> String {
        let mut s = BENCHMARK_FRAGMENT.to_string();
        if let Some(user) = &self.user_fragment {
            s.push_str("\n# comparison's own fragment\n");
            s.push_str(user);
            s.push('\n');
        }
        s
    }
}

/// Runs `make tinyconfig`, appends the recipe's fragment, resolves it and
/// checks that every requested option ended up as asked. Returns the
/// sha256 of the final `.config`.
pub fn configure(make: &Make, recipe: &ConfigRecipe) -> Result<String, Error> {
    make.cmd(&["tinyconfig"]).run()?;
    let mut text = config_text(make)?;
    text.push_str("\n# patchperf\n");
    text.push_str(&recipe.fragment());
    make.write(".config", text.as_bytes())?;
    make.cmd(&["olddefconfig"]).run()?;
    verify(make, recipe)
}

fn config_text(make: &Make) -> Result<String, Error> {
    String::from_utf8(make.read(".config")?).map_err(|_| {
        Error::Config(format!(
            "{}/.config is not text",
            make.build_dir().display()
        ))
    })
}

/// Checks the final `.config` against the recipe and hashes it.
pub fn verify(make: &Make, recipe: &ConfigRecipe) -> Result<String, Error> {
    let text = config_text(make)?;
    let missing = unmet(&recipe.fragment(), &text);
    if !missing.is_empty() {
        return Err(Error::Config(format!(
            "Kconfig did not take these options (missing dependencies?): {}",
            missing.join(", ")
        )));
    }
    Ok(sha256_hex(text.as_bytes()))
}

/// An option line of a fragment: `CONFIG_X=value` → ("CONFIG_X", Some(value)),
/// `# CONFIG_X is not set` → ("CONFIG_X", None).
fn parse_line(line: &str) -> Option<(&str, Option<&str>)> {
    let line = line.trim();
    if let Some(rest) = line.strip_prefix("# ") {
        let name = rest.strip_suffix(" is not set")?;
        return valid_name(name).then_some((name, None));
    }
    let (name, value) = line.split_once('=')?;
    (valid_name(name) && !value.is_empty()).then_some((name, Some(value)))
}

fn valid_name(name: &str) -> bool {
    name.strip_prefix("CONFIG_")
        .is_some_and(|n| !n.is_empty() && n.chars().all(|c| c.is_ascii_alphanumeric() || c == '_'))
}

fn is_comment_or_blank(line: &str) -> bool {
    let t = line.trim();
    t.is_empty() || t.starts_with('#')
}

/// The fragment's requests that `config` does not meet, as `CONFIG_X=y`
/// (or `CONFIG_X=n`); a later line for the same option wins, as in Kconfig.
pub fn unmet(fragment: &str, config: &str) -> Vec<String> {
    let mut wanted: Vec<(&str, Option<&str>)> = Vec::new();
    for line in fragment.lines() {
        if let Some((name, value)) = parse_line(line) {
            wanted.retain(|(n, _)| *n != name);
            wanted.push((name, value));
        }
    }
    let mut have = std::collections::HashMap::new();
    for line in config.lines() {
        if let Some((name, value)) = parse_line(line) {
            have.insert(name, value);
        }
    }
    wanted
        .into_iter()
        .filter(|(name, value)| {
            let got = have.get(name).copied().flatten();
            match value {
                Some("n") | None => got.is_some(),
                Some(v) => got != Some(*v),
            }
        })
        .map(|(name, value)| format!("{name}={}", value.unwrap_or("n")))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn options_that_kconfig_dropped_are_named() {
        let fragment =
            "CONFIG_INET=y\nCONFIG_9P_FS=y\n# CONFIG_SLOB is not set\nCONFIG_NR_CPUS=4\n";
        let config = "CONFIG_INET=y\n# CONFIG_9P_FS is not set\nCONFIG_SLOB=y\nCONFIG_NR_CPUS=64\n";
        assert_eq!(
            unmet(fragment, config),
            ["CONFIG_9P_FS=y", "CONFIG_SLOB=n", "CONFIG_NR_CPUS=4"]
        );
        let good = "CONFIG_INET=y\nCONFIG_9P_FS=y\nCONFIG_NR_CPUS=4\n";
        assert!(unmet(fragment, good).is_empty());
    }

    #[test]
    fn a_later_line_for_the_same_option_wins() {
        let fragment = "CONFIG_KALLSYMS=y\n# CONFIG_KALLSYMS is not set\n";
        assert!(unmet(fragment, "# CONFIG_KALLSYMS is not set\n").is_empty());
        assert_eq!(
            unmet(fragment, "CONFIG_KALLSYMS=y\n"),
            ["CONFIG_KALLSYMS=n"]
        );
    }

    #[test]
    fn the_benchmark_fragment_asks_for_what_the_guest_needs() {
        let f = ConfigRecipe::new(None).unwrap().fragment();
        for opt in [
            "CONFIG_64BIT=y",
            "CONFIG_SMP=y",
            "CONFIG_ACPI=y",
            "CONFIG_INET=y",
            "CONFIG_SLUB=y",
            "CONFIG_CC_OPTIMIZE_FOR_PERFORMANCE=y",
            "CONFIG_KERNEL_LZ4=y",
            "CONFIG_SERIAL_8250_CONSOLE=y",
            "CONFIG_VIRTIO_PCI=y",
            "CONFIG_NET_9P_VIRTIO=y",
            "CONFIG_9P_FS=y",
            "CONFIG_TMPFS=y",
            "CONFIG_DEVTMPFS=y",
            "CONFIG_PROC_FS=y",
            "CONFIG_SYSFS=y",
            "CONFIG_PERF_EVENTS=y",
            "CONFIG_KALLSYMS_ALL=y",
            "CONFIG_FUTEX=y",
            "CONFIG_EPOLL=y",
        ] {
            assert!(f.lines().any(|l| l == opt), "{opt} missing");
        }
    }

    #[test]
    fn user_fragments_are_checked_line_by_line() {
        let ok = ConfigRecipe::new(Some(
            "# mine\nCONFIG_HZ_1000=y\n# CONFIG_KVM_GUEST is not set\n".into(),
        ));
        assert!(
            ok.unwrap()
                .fragment()
                .ends_with("# CONFIG_KVM_GUEST is not set\n\n")
        );
        let bad = ConfigRecipe::new(Some("CONFIG_HZ_1000=y\nrm -rf /\n".into()));
        match bad {
            Err(Error::Usage(m)) => assert!(m.contains("line 2"), "{m}"),
            other => panic!("unexpected {other:?}"),
        }
    }
}
