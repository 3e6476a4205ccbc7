//! Which source files a kernel function's machine code comes from, read
//! from a `vmlinux` built with line tables: `nm` gives each text symbol's
//! address and size, `addr2line -i` every byte of it the file and line it
//! was compiled from, inline callers included. So `do_sys_poll` maps to
//! `fs/select.c` and to the headers whose inline functions it holds
//! (`include/linux/poll.h`, `include/linux/file.h`, …). Used by
//! `workload-map`.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::path::Path;
use std::time::Duration;

use crate::Error;
use crate::proc::Cmd;

/// How long `nm` and `addr2line` may take over one `vmlinux`.
const TOOL_LIMIT: Duration = Duration::from_secs(900);

/// Bytes of one function, past which it is not read whole: a kernel
/// function this large is not on a syscall path worth mapping byte by
/// byte (and `addr2line`'s input would grow without bound).
const MAX_FUNCTION_BYTES: u64 = 64 << 10;

/// The top directories of a kernel tree: a path in the line tables is cut
/// to the part from one of these on.
const TOP_DIRS: &[&str] = &[
    "arch", "block", "certs", "crypto", "drivers", "fs", "include", "init", "io_uring", "ipc",
    "kernel", "lib", "mm", "net", "rust", "samples", "security", "sound", "virt",
];

/// A text symbol's code: where it starts and how long it is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Extent {
    /// Its address.
    pub start: u64,
    /// Its size in bytes.
    pub size: u64,
}

/// `nm -S --defined-only` output → text symbols by name (a static name
/// may be defined in several files: each extent is kept).
pub fn parse_nm(text: &str) -> HashMap<String, Vec<Extent>> {
    let mut out: HashMap<String, Vec<Extent>> = HashMap::new();
    for line in text.lines() {
        let fields: Vec<&str> = line.split_whitespace().collect();
        let [address, size, kind, name] = fields[..] else {
            continue;
        };
        if !matches!(kind, "T" | "t" | "W" | "w") {
            continue;
        }
        let (Ok(start), Ok(size)) = (
            u64::from_str_radix(address, 16),
            u64::from_str_radix(size, 16),
        ) else {
            continue;
        };
        if size > 0 {
            out.entry(name.to_string())
                .or_default()
                .push(Extent { start, size });
        }
    }
    out
}

/// The text symbols of `vmlinux`.
pub fn text_symbols(vmlinux: &Path) -> Result<HashMap<String, Vec<Extent>>, Error> {
    let text = Cmd::new("nm")
        .args(["-S", "--defined-only"])
        .arg(vmlinux)
        .timeout(TOOL_LIMIT)
        .capture_stdout()
        .stdout_string()?;
    Ok(parse_nm(&text))
}

/// A line-table path as a tree path: `fs/select.c` from
/// `/c/sources/linux/fs/select.c` or `./include/linux/fs.h`; `None` for
/// what is no source of the tree (`??`, generated files in the build tree,
/// the compiler's own headers).
pub fn tree_path(path: &str, source_root: &Path) -> Option<String> {
    let path = path.split(':').next()?.trim();
    // The compiler's own headers are no source of the tree.
    if path.is_empty() || path.starts_with("??") || path.starts_with("/usr/") {
        return None;
    }
    let rel = match Path::new(path).strip_prefix(source_root) {
        Ok(rel) => rel.to_string_lossy().into_owned(),
        Err(_) => path.trim_start_matches("./").to_string(),
    };
    // `O=` builds name sources from the build tree: `.build-<key>/../fs/x.c`.
    let mut parts: Vec<&str> = Vec::new();
    for part in rel.split('/').filter(|p| !p.is_empty() && *p != ".") {
        if part == ".." {
            parts.pop();
        } else {
            parts.push(part);
        }
    }
    let top = parts.iter().position(|p| TOP_DIRS.contains(p))?;
    // The build tree (`.build-<key>/include/generated/…`) is not source.
    if parts[..top].iter().any(|p| p.starts_with('.')) {
        return None;
    }
    let rel = parts[top..].join("/");
    (!rel.contains("/generated/")).then_some(rel)
}

/// The files each of `functions` holds code of, by `addr2line -i` over
/// every byte of each of its extents in `vmlinux`. Functions `symbols`
/// does not know map to nothing; a static name several files define
/// (`cmp`) maps to the files of each, since a profile names functions, not
/// addresses.
pub fn files_of(
    vmlinux: &Path,
    source_root: &Path,
    symbols: &HashMap<String, Vec<Extent>>,
    functions: &[&str],
) -> Result<BTreeMap<String, BTreeSet<String>>, Error> {
    // Every address once, with the function it belongs to, in order.
    let mut owner: Vec<(u64, &str)> = Vec::new();
    for &f in functions {
        for extent in symbols.get(f).into_iter().flatten() {
            let size = extent.size.min(MAX_FUNCTION_BYTES);
            owner.extend((extent.start..extent.start + size).map(|a| (a, f)));
        }
    }
    // By address: `addr2line` answers in input order, looked up below.
    owner.sort_unstable();
    owner.dedup_by_key(|(a, _)| *a);
    let mut out: BTreeMap<String, BTreeSet<String>> = functions
        .iter()
        .map(|f| (f.to_string(), BTreeSet::new()))
        .collect();
    if owner.is_empty() {
        return Ok(out);
    }
    let input = tempfile::NamedTempFile::new().map_err(|e| Error::io("a temporary file", e))?;
    let addresses: String = owner.iter().map(|(a, _)| format!("{a:#x}\n")).collect();
    std::fs::write(input.path(), addresses).map_err(|e| Error::io("writing addresses", e))?;
    let text = Cmd::new("addr2line")
        .args(["-a", "-i", "-e"])
        .arg(vmlinux)
        .stdin_file(input.path())
        .timeout(TOOL_LIMIT)
        .capture_stdout()
        .stdout_string()?;
    for (address, locations) in parse_addr2line(&text) {
        let Ok(i) = owner.binary_search_by_key(&address, |(a, _)| *a) else {
            continue;
        };
        let files = out.entry(owner[i].1.to_string()).or_default();
        files.extend(locations.iter().filter_map(|l| tree_path(l, source_root)));
    }
    Ok(out)
}

/// `addr2line -a -i` output → each address with its locations, innermost
/// inline frame first: an `0x…` line, then one `file:line` line each.
pub fn parse_addr2line(text: &str) -> Vec<(u64, Vec<String>)> {
    let mut out: Vec<(u64, Vec<String>)> = Vec::new();
    for line in text.lines() {
        if let Some(hex) = line.strip_prefix("0x") {
            if let Ok(address) = u64::from_str_radix(hex.trim(), 16) {
                out.push((address, Vec::new()));
                continue;
            }
        }
        if let Some((_, locations)) = out.last_mut() {
            locations.push(line.trim().to_string());
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nm_lines_give_the_text_symbols_with_their_extents() {
        let nm = "\
ffffffff811d5d80 00000000000002a1 t do_sys_poll
ffffffff811d6a50 0000000000000057 T __x64_sys_poll
ffffffff82a1b000 0000000000000008 D some_data
ffffffff811d7000 0000000000000010 t cmp
ffffffff811e7000 0000000000000020 t cmp
ffffffff81000000 T _text
ffffffff811d8000 0000000000000000 t empty
";
        let symbols = parse_nm(nm);
        assert_eq!(
            symbols["do_sys_poll"],
            [Extent {
                start: 0xffffffff811d5d80,
                size: 0x2a1
            }]
        );
        assert_eq!(symbols["cmp"].len(), 2);
        assert!(!symbols.contains_key("some_data"));
        assert!(!symbols.contains_key("_text"));
        assert!(!symbols.contains_key("empty"));
    }

    #[test]
    fn line_table_paths_become_tree_paths() {
        let root = Path::new("/var/cache/patchperf/sources/linux-source-6.12");
        let t = |p: &str| tree_path(p, root);
        assert_eq!(
            t("/var/cache/patchperf/sources/linux-source-6.12/fs/select.c:1012").as_deref(),
            Some("fs/select.c")
        );
        assert_eq!(
            t("./include/linux/fs.h:2390").as_deref(),
            Some("include/linux/fs.h")
        );
        assert_eq!(
            t("/var/cache/patchperf/sources/linux-source-6.12/.build-12b53e2fed6e/../fs/select.c:975")
                .as_deref(),
            Some("fs/select.c")
        );
        assert_eq!(
            t("/elsewhere/linux/arch/x86/entry/common.c:52 (discriminator 1)").as_deref(),
            Some("arch/x86/entry/common.c")
        );
        assert_eq!(t("??:0"), None);
        assert_eq!(
            t(
                "/var/cache/patchperf/sources/linux-source-6.12/.build-4a67203eb4bd/include/generated/asm-offsets.h:3"
            ),
            None
        );
        assert_eq!(
            t("/usr/lib/gcc/x86_64-linux-gnu/12/include/stddef.h:9"),
            None
        );
    }

    #[test]
    fn addr2line_output_keeps_every_inline_frame() {
        let text = "\
0xffffffff811d5d80
/src/fs/select.c:1001
0xffffffff811d5d81
/src/include/linux/file.h:42
/src/fs/select.c:870
/src/fs/select.c:1012
0xffffffff811d5d82
??:0
";
        let parsed = parse_addr2line(text);
        assert_eq!(parsed.len(), 3);
        assert_eq!(parsed[1].0, 0xffffffff811d5d81);
        assert_eq!(
            parsed[1].1,
            [
                "/src/include/linux/file.h:42",
                "/src/fs/select.c:870",
                "/src/fs/select.c:1012"
            ]
        );
        assert_eq!(parsed[2].1, ["??:0"]);
    }
}
