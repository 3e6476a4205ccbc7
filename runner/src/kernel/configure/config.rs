//! Configure: one benchmark config for both sides of a comparison —
//! `make tinyconfig`, then patchperf's fragment (`runner/kernel/patchperf.config`)
//! and the comparison's own fragment appended and resolved with
//! `make olddefconfig`.
//!
//! The fragment is fitted to the tree first, from the tree's own Kconfig
//! files, so that one fragment serves every tree from Linux 6.1 on: an
//! option the tree names differently (the speculation mitigations renamed
//! in 6.9) is taken under the tree's name; one
//! it does not have at all is left out if the fragment only wants it, and
//! fails the step, naming it and why the guest needs it, if the guest
//! cannot run without it. After `olddefconfig`, every option the guest
//! needs or the comparison asked for must have survived: Kconfig silently
//! drops an option whose dependencies are missing, and a kernel without
//! 9p or tmpfs fails much later and less clearly.

use std::collections::HashSet;

use crate::Error;
use crate::kernel::build::make::Make;
use patchperf_common::digest::sha256_hex;

/// patchperf's benchmark fragment, merged on top of `tinyconfig`.
pub const BENCHMARK_FRAGMENT: &str = include_str!("../../../kernel/patchperf.config");

/// Options Linux renamed, older name first (without `CONFIG_`). A
/// fragment written for either side of a rename works on both.
const RENAMED: &[(&str, &str)] = &[
    // 6.9 gave the x86 speculation mitigations one prefix.
    ("RETPOLINE", "MITIGATION_RETPOLINE"),
    ("RETHUNK", "MITIGATION_RETHUNK"),
    ("PAGE_TABLE_ISOLATION", "MITIGATION_PAGE_TABLE_ISOLATION"),
    ("CPU_UNRET_ENTRY", "MITIGATION_UNRET_ENTRY"),
    ("CPU_IBPB_ENTRY", "MITIGATION_IBPB_ENTRY"),
    ("CPU_IBRS_ENTRY", "MITIGATION_IBRS_ENTRY"),
    ("CPU_SRSO", "MITIGATION_SRSO"),
    ("SLS", "MITIGATION_SLS"),
];

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

    /// Everything appended to the tinyconfig `.config`, ours first, before
    /// it is fitted to a tree (the kernel cache's key is made from it).
    pub fn fragment(&self) -> String {
        let mut s = BENCHMARK_FRAGMENT.to_string();
        if let Some(user) = &self.user_fragment {
            s.push_str("\n# comparison's own fragment\n");
            s.push_str(user);
            s.push('\n');
        }
        s
    }

    /// Every option the recipe sets, with how much it matters; a later
    /// line for the same option wins, as in Kconfig.
    fn requests(&self) -> Vec<Request> {
        let mut out: Vec<Request> = Vec::new();
        let mut push = |request: Request| {
            out.retain(|r| r.name != request.name);
            out.push(request);
        };
        let mut need = Need::Needed("the benchmark guest".to_string());
        for line in BENCHMARK_FRAGMENT.lines() {
            if let Some(marker) = line.trim().strip_prefix("#@") {
                need = Need::from_marker(marker);
            } else if let Some((name, value)) = parse_line(line) {
                push(Request::new(name, value, need.clone()));
            }
        }
        for line in self.user_fragment.iter().flat_map(|f| f.lines()) {
            if let Some((name, value)) = parse_line(line) {
                push(Request::new(name, value, Need::Asked));
            }
        }
        out
    }
}

/// How much an option of the recipe matters.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Need {
    /// The guest cannot run without it; the text says what for.
    Needed(String),
    /// The benchmark is better with it; a tree without it does without.
    Wanted(String),
    /// The comparison's own fragment set it.
    Asked,
}

impl Need {
    /// `needed: why` or `wanted: why`, after a fragment's `#@`; anything
    /// else counts as needed, the safe side.
    fn from_marker(marker: &str) -> Need {
        let marker = marker.trim();
        match marker.split_once(':') {
            Some(("wanted", why)) => Need::Wanted(why.trim().to_string()),
            Some(("needed", why)) => Need::Needed(why.trim().to_string()),
            _ => Need::Needed(marker.to_string()),
        }
    }
}

/// One option as the recipe wants it.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Request {
    /// `CONFIG_X`.
    name: String,
    /// The value, `None` for "is not set".
    value: Option<String>,
    need: Need,
}

impl Request {
    fn new(name: &str, value: Option<&str>, need: Need) -> Request {
        Request {
            name: name.to_string(),
            value: value.filter(|v| *v != "n").map(str::to_string),
            need,
        }
    }

    /// The line that asks for it.
    fn line(&self) -> String {
        match &self.value {
            Some(v) => format!("{}={v}", self.name),
            None => format!("# {} is not set", self.name),
        }
    }

    /// How it reads in a message: `CONFIG_X=y`, `CONFIG_X=n`.
    fn wanted(&self) -> String {
        format!("{}={}", self.name, self.value.as_deref().unwrap_or("n"))
    }

    /// What a failure says of why it matters.
    fn why(&self) -> String {
        match &self.need {
            Need::Needed(why) => format!("the guest needs it: {why}"),
            Need::Wanted(why) => format!("wanted: {why}"),
            Need::Asked => "the comparison's config fragment asks for it".to_string(),
        }
    }
}

/// The recipe fitted to one tree's Kconfig: what to append, and what was
/// changed or left out, in words for the build log.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Fitted {
    requests: Vec<Request>,
    /// Renamed and left-out options, one sentence each.
    pub notes: Vec<String>,
}

impl Fitted {
    /// The fragment appended to the tinyconfig `.config`.
    fn text(&self) -> String {
        let mut s = String::from("\n# patchperf, fitted to this tree's Kconfig\n");
        for r in &self.requests {
            s.push_str(&r.line());
            s.push('\n');
        }
        s
    }
}

/// Fits `recipe` to a tree whose Kconfig files define `symbols` (names
/// with `CONFIG_`). Fails naming every option the guest needs, or the
/// comparison asked for, that the tree does not have.
pub fn fit(recipe: &ConfigRecipe, symbols: &HashSet<String>) -> Result<Fitted, Error> {
    let mut fitted = Fitted {
        requests: Vec::new(),
        notes: Vec::new(),
    };
    let mut missing = Vec::new();
    for mut request in recipe.requests() {
        if symbols.contains(&request.name) {
            fitted.requests.push(request);
            continue;
        }
        if let Some(other) = renamed(&request.name).filter(|o| symbols.contains(o)) {
            fitted.notes.push(format!(
                "{} is {other} in this tree: set under that name",
                request.name
            ));
            request.name = other;
            fitted.requests.push(request);
            continue;
        }
        match (&request.need, &request.value) {
            // Nothing to turn off.
            (Need::Needed(_) | Need::Wanted(_), None) => {}
            (Need::Asked, None) => fitted.notes.push(format!(
                "{} is not in this tree's Kconfig: nothing to turn off",
                request.name
            )),
            (Need::Wanted(why), Some(_)) => fitted.notes.push(format!(
                "{} is not in this tree's Kconfig: built without it ({why})",
                request.name
            )),
            (Need::Needed(_) | Need::Asked, Some(_)) => {
                missing.push(format!("{} ({})", request.wanted(), request.why()));
            }
        }
    }
    if missing.is_empty() {
        Ok(fitted)
    } else {
        Err(Error::Config(format!(
            "this tree's Kconfig has no {}",
            missing.join("; no ")
        )))
    }
}

/// The other name of a renamed option, with `CONFIG_`.
fn renamed(name: &str) -> Option<String> {
    let bare = name.strip_prefix("CONFIG_")?;
    RENAMED.iter().find_map(|(old, new)| {
        (bare == *old)
            .then_some(new)
            .or((bare == *new).then_some(old))
            .map(|other| format!("CONFIG_{other}"))
    })
}

/// The options a tree's Kconfig files define (`config X`, `menuconfig X`),
/// as `CONFIG_X`: read through the make's view, so a series that adds or
/// renames an option is seen.
pub fn kconfig_symbols(make: &Make) -> Result<HashSet<String>, Error> {
    let out = make
        .tree_cmd("grep")
        .args([
            "-rhoE",
            "--include=Kconfig*",
            r"^[[:space:]]*(menu)?config[[:space:]]+[A-Za-z0-9_]+",
            ".",
        ])
        .capture_stdout()
        .stdout_string()?;
    let symbols: HashSet<String> = out
        .lines()
        .filter_map(|l| l.split_whitespace().nth(1))
        .map(|name| format!("CONFIG_{name}"))
        .collect();
    if symbols.is_empty() {
        return Err(Error::Config(format!(
            "{}: no Kconfig option found: not a kernel tree?",
            make.build_dir().display()
        )));
    }
    Ok(symbols)
}

/// A configured tree: the final `.config`'s sha256 and what fitting the
/// recipe to the tree changed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Configured {
    /// sha256 of the final `.config`.
    pub sha256: String,
    /// The recipe's options renamed or left out for this tree, and wanted
    /// ones Kconfig did not take.
    pub notes: Vec<String>,
}

/// Runs `make tinyconfig`, appends the recipe's fragment fitted to the
/// tree, resolves it and checks that every option the guest needs ended
/// up as asked.
pub fn configure(make: &Make, recipe: &ConfigRecipe) -> Result<Configured, Error> {
    let fitted = fit(recipe, &kconfig_symbols(make)?)?;
    make.cmd(&["tinyconfig"]).run()?;
    let mut text = config_text(make)?;
    text.push_str(&fitted.text());
    make.write(".config", text.as_bytes())?;
    make.cmd(&["olddefconfig"]).run()?;
    let mut configured = check(make, &fitted)?;
    configured.notes.splice(0..0, fitted.notes);
    Ok(configured)
}

fn config_text(make: &Make) -> Result<String, Error> {
    String::from_utf8(make.read(".config")?).map_err(|_| {
        Error::Config(format!(
            "{}/.config is not text",
            make.build_dir().display()
        ))
    })
}

/// Checks the tree's `.config` against the recipe fitted to the tree and
/// hashes it.
pub fn verify(make: &Make, recipe: &ConfigRecipe) -> Result<String, Error> {
    let fitted = fit(recipe, &kconfig_symbols(make)?)?;
    check(make, &fitted).map(|c| c.sha256)
}

fn check(make: &Make, fitted: &Fitted) -> Result<Configured, Error> {
    let text = config_text(make)?;
    let (missing, notes) = unmet(fitted, &text);
    if !missing.is_empty() {
        return Err(Error::Config(format!(
            "Kconfig did not take {} (missing dependencies?)",
            missing.join("; nor ")
        )));
    }
    Ok(Configured {
        sha256: sha256_hex(text.as_bytes()),
        notes,
    })
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

/// The fitted requests that `config` does not meet: the ones that fail
/// the step (needed or asked, with why), and wanted ones as notes.
fn unmet(fitted: &Fitted, config: &str) -> (Vec<String>, Vec<String>) {
    let mut have = std::collections::HashMap::new();
    for line in config.lines() {
        if let Some((name, value)) = parse_line(line) {
            have.insert(name, value.filter(|v| *v != "n"));
        }
    }
    let (mut missing, mut notes) = (Vec::new(), Vec::new());
    for r in &fitted.requests {
        let got = have.get(r.name.as_str()).copied().flatten();
        if got == r.value.as_deref() {
            continue;
        }
        match &r.need {
            Need::Wanted(why) => notes.push(format!(
                "Kconfig did not take {}: built without it ({why})",
                r.wanted()
            )),
            _ => missing.push(format!("{} ({})", r.wanted(), r.why())),
        }
    }
    (missing, notes)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The symbols of every option the benchmark fragment names, as a
    /// tree that has them all would define them, plus `extra`.
    fn tree_with(extra: &[&str], without: &[&str]) -> HashSet<String> {
        ConfigRecipe::new(None)
            .unwrap()
            .requests()
            .into_iter()
            .map(|r| r.name)
            .chain(extra.iter().map(|s| (*s).to_string()))
            .filter(|n| !without.contains(&n.as_str()))
            .collect()
    }

    fn recipe(user: &str) -> ConfigRecipe {
        ConfigRecipe::new(Some(user.to_string())).unwrap()
    }

    #[test]
    fn options_that_kconfig_dropped_are_named_with_why() {
        let r = recipe("CONFIG_NR_CPUS=4\n# CONFIG_FOO is not set\n");
        let fitted = fit(&r, &tree_with(&["CONFIG_NR_CPUS", "CONFIG_FOO"], &[])).unwrap();
        let mut config: String = fitted
            .requests
            .iter()
            .map(|r| format!("{}\n", r.line()))
            .collect();
        assert_eq!(unmet(&fitted, &config), (vec![], vec![]));
        config = config
            .replace("CONFIG_9P_FS=y\n", "# CONFIG_9P_FS is not set\n")
            .replace("# CONFIG_FOO is not set\n", "CONFIG_FOO=y\n")
            .replace("CONFIG_NR_CPUS=4\n", "CONFIG_NR_CPUS=64\n")
            .replace("CONFIG_KERNEL_LZ4=y\n", "CONFIG_KERNEL_XZ=y\n");
        let (missing, notes) = unmet(&fitted, &config);
        assert_eq!(
            missing,
            [
                "CONFIG_9P_FS=y (the guest needs it: the host's root over virtio 9p (9P_FS \
                 silently drops out without INET))",
                "CONFIG_NR_CPUS=4 (the comparison's config fragment asks for it)",
                "CONFIG_FOO=n (the comparison's config fragment asks for it)",
            ]
        );
        assert_eq!(
            notes,
            [
                "Kconfig did not take CONFIG_KERNEL_LZ4=y: built without it (the kernel real machines run)"
            ]
        );
    }

    #[test]
    fn a_later_line_for_the_same_option_wins() {
        let r = recipe("CONFIG_KALLSYMS_ALL=y\n# CONFIG_KALLSYMS_ALL is not set\n");
        let requests = r.requests();
        let kallsyms: Vec<_> = requests
            .iter()
            .filter(|q| q.name == "CONFIG_KALLSYMS_ALL")
            .collect();
        assert_eq!(kallsyms.len(), 1);
        assert_eq!(kallsyms[0].line(), "# CONFIG_KALLSYMS_ALL is not set");
        assert_eq!(kallsyms[0].need, Need::Asked);
    }

    #[test]
    fn the_benchmark_fragment_asks_for_what_the_guest_needs() {
        let requests = ConfigRecipe::new(None).unwrap().requests();
        let need = |name: &str| {
            requests
                .iter()
                .find(|r| r.name == name)
                .map(|r| (r.line(), matches!(r.need, Need::Needed(_))))
        };
        for opt in [
            "CONFIG_64BIT",
            "CONFIG_SMP",
            "CONFIG_ACPI",
            "CONFIG_INET",
            "CONFIG_SERIAL_8250_CONSOLE",
            "CONFIG_VIRTIO_PCI",
            "CONFIG_NET_9P_VIRTIO",
            "CONFIG_9P_FS",
            "CONFIG_TMPFS",
            "CONFIG_DEVTMPFS",
            "CONFIG_PROC_FS",
            "CONFIG_SYSFS",
            "CONFIG_PERF_EVENTS",
            "CONFIG_KALLSYMS_ALL",
            "CONFIG_FUTEX",
            "CONFIG_EPOLL",
            "CONFIG_EVENTFD",
            "CONFIG_FILE_LOCKING",
        ] {
            assert_eq!(need(opt), Some((format!("{opt}=y"), true)), "{opt}");
        }
        for (opt, line) in [
            ("CONFIG_SLUB", "CONFIG_SLUB=y"),
            ("CONFIG_SLUB_TINY", "# CONFIG_SLUB_TINY is not set"),
            (
                "CONFIG_CC_OPTIMIZE_FOR_PERFORMANCE",
                "CONFIG_CC_OPTIMIZE_FOR_PERFORMANCE=y",
            ),
            ("CONFIG_KERNEL_LZ4", "CONFIG_KERNEL_LZ4=y"),
            ("CONFIG_IPV6", "# CONFIG_IPV6 is not set"),
        ] {
            assert_eq!(need(opt), Some((line.to_string(), false)), "{opt}");
        }
    }

    #[test]
    fn a_tree_without_an_option_the_guest_needs_fails_naming_it_and_why() {
        let plain = ConfigRecipe::new(None).unwrap();
        match fit(&plain, &tree_with(&[], &["CONFIG_9P_FS", "CONFIG_EVENTFD"])) {
            Err(Error::Config(m)) => assert_eq!(
                m,
                "this tree's Kconfig has no CONFIG_9P_FS=y (the guest needs it: the host's root \
                 over virtio 9p (9P_FS silently drops out without INET)); no CONFIG_EVENTFD=y \
                 (the guest needs it: the guest's init (the runner binary, dynamically linked, \
                 threads) and the workloads' system calls)"
            ),
            other => panic!("unexpected {other:?}"),
        }
        match fit(&recipe("CONFIG_HZ_1000=y\n"), &tree_with(&[], &[])) {
            Err(Error::Config(m)) => assert_eq!(
                m,
                "this tree's Kconfig has no CONFIG_HZ_1000=y (the comparison's config \
                 fragment asks for it)"
            ),
            other => panic!("unexpected {other:?}"),
        }
    }

    #[test]
    fn what_a_tree_lacks_and_the_guest_only_wants_is_left_out_and_said() {
        let plain = ConfigRecipe::new(None).unwrap();
        // Linux 6.1 has no SLUB_TINY (nothing to turn off, nothing said).
        let fitted = fit(
            &plain,
            &tree_with(&["CONFIG_SLOB"], &["CONFIG_SLUB_TINY", "CONFIG_KERNEL_LZ4"]),
        )
        .unwrap();
        assert!(!fitted.text().contains("SLUB_TINY"), "{}", fitted.text());
        assert!(!fitted.text().contains("SLOB"), "{}", fitted.text());
        assert!(!fitted.text().contains("KERNEL_LZ4"));
        assert_eq!(
            fitted.notes,
            [
                "CONFIG_KERNEL_LZ4 is not in this tree's Kconfig: built without it (the kernel \
              real machines run)"
            ]
        );
        // 6.12 has it, and tinyconfig turns it on: the fragment turns it off.
        let fitted = fit(&plain, &tree_with(&[], &[])).unwrap();
        assert!(fitted.text().contains("\n# CONFIG_SLUB_TINY is not set\n"));
        assert!(fitted.notes.is_empty(), "{:?}", fitted.notes);
    }

    #[test]
    fn a_renamed_option_is_set_under_the_tree_s_name_either_way() {
        let old_name = recipe("CONFIG_RETPOLINE=y\n# CONFIG_PAGE_TABLE_ISOLATION is not set\n");
        let new_tree = tree_with(
            &[
                "CONFIG_MITIGATION_RETPOLINE",
                "CONFIG_MITIGATION_PAGE_TABLE_ISOLATION",
            ],
            &[],
        );
        let fitted = fit(&old_name, &new_tree).unwrap();
        assert!(fitted.text().contains("\nCONFIG_MITIGATION_RETPOLINE=y\n"));
        assert!(
            fitted
                .text()
                .contains("\n# CONFIG_MITIGATION_PAGE_TABLE_ISOLATION is not set\n")
        );
        assert_eq!(
            fitted.notes[0],
            "CONFIG_RETPOLINE is CONFIG_MITIGATION_RETPOLINE in this tree: set under that name"
        );
        let new_name = recipe("CONFIG_MITIGATION_RETPOLINE=y\n");
        let fitted = fit(&new_name, &tree_with(&["CONFIG_RETPOLINE"], &[])).unwrap();
        assert!(fitted.text().contains("\nCONFIG_RETPOLINE=y\n"));
        // A tree with both names (a series adding the new one) keeps the asked one.
        let both = tree_with(&["CONFIG_RETPOLINE", "CONFIG_MITIGATION_RETPOLINE"], &[]);
        let fitted = fit(&new_name, &both).unwrap();
        assert!(fitted.text().contains("\nCONFIG_MITIGATION_RETPOLINE=y\n"));
        assert!(fitted.notes.is_empty());
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
