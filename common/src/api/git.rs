//! What a git base may name. Its URL and commit end up as arguments of
//! `git clone` and `git rev-parse` on a lab machine, so a value git would
//! read as an option (`--upload-pack=…`, `--output=…`), a transport that
//! runs a command (`ext::…`) or a host name that ssh would read as an option
//! (`ssh://-oProxyCommand=…`) must never get that far. The server refuses
//! such a base at submission and the runner again before fetching, both with
//! these two checks.

/// Longest URL or commit accepted; a real one is far shorter.
const MAX_LEN: usize = 1024;

/// Checks a clone URL: `https://`, `http://`, `git://`, `ssh://` or
/// `file://` followed by a host (or, for `file://`, an absolute path), the
/// scp form `[user@]host:path`, or an absolute local path; no whitespace or
/// control characters, nothing starting with `-`. On refusal, says why.
pub fn check_url(url: &str) -> Result<(), String> {
    check_plain(url)?;
    if let Some((scheme, rest)) = url.split_once("://") {
        return match scheme {
            "file" if rest.starts_with('/') => Ok(()),
            "file" => Err("a file:// URL must name an absolute path".into()),
            "https" | "http" | "git" | "ssh" => check_authority(rest),
            _ => Err(format!(
                "scheme `{scheme}://` is not one a lab fetches from"
            )),
        };
    }
    if url.starts_with('/') {
        return Ok(());
    }
    // The scp form: git reads it so when a colon comes before any slash.
    match url.split_once(':') {
        Some((host, path)) if !host.contains('/') => {
            let host = host.rsplit_once('@').map_or(
                host,
                |(user, host)| {
                    if user.is_empty() { "" } else { host }
                },
            );
            if !is_host(host) {
                Err(format!("`{host}` is not a host name"))
            } else if path.is_empty() || path.starts_with(':') {
                // `name::address` asks git for a remote helper, such as ext.
                Err("the path after `host:` is missing".into())
            } else {
                Ok(())
            }
        }
        _ => Err(
            "expected https://, http://, git://, ssh://, file://, user@host:path \
             or an absolute path"
                .into(),
        ),
    }
}

/// Checks a commit: an object id (4 to 64 hex digits) or a branch or tag
/// name as `git check-ref-format --allow-onelevel` accepts it, not starting
/// with `-`. On refusal, says why.
pub fn check_commit(commit: &str) -> Result<(), String> {
    check_plain(commit)?;
    if (4..=64).contains(&commit.len()) && commit.bytes().all(|b| b.is_ascii_hexdigit()) {
        return Ok(());
    }
    check_ref_name(commit)
}

/// Reads a range `A..B` (both ends commits as [`check_commit`] accepts
/// them, two dots: the symmetric difference `A...B` is no line of commits).
/// On refusal, says why.
pub fn parse_range(range: &str) -> Result<(&str, &str), String> {
    let Some((from, to)) = range.split_once("..") else {
        return Err("no `..` between the two ends".into());
    };
    if to.starts_with('.') {
        return Err("`A...B` is a symmetric difference, not a line of commits".into());
    }
    check_commit(from).map_err(|why| format!("`{from}`: {why}"))?;
    check_commit(to).map_err(|why| format!("`{to}`: {why}"))?;
    Ok((from, to))
}

/// What both values share: present, short, one word, not an option.
fn check_plain(value: &str) -> Result<(), String> {
    if value.is_empty() {
        return Err("it is empty".into());
    }
    if value.len() > MAX_LEN {
        return Err(format!("it is longer than {MAX_LEN} bytes"));
    }
    if value.starts_with('-') {
        return Err("it starts with `-`, which git would read as an option".into());
    }
    if value.chars().any(|c| c.is_whitespace() || c.is_control()) {
        return Err("it contains whitespace or a control character".into());
    }
    Ok(())
}

/// The part after `scheme://`: `[user@]host[:port]/path`, neither user nor
/// host starting with `-` (ssh would take it for an option).
fn check_authority(rest: &str) -> Result<(), String> {
    let authority = rest.split('/').next().unwrap_or("");
    let host = match authority.rsplit_once('@') {
        Some((user, _)) if user.is_empty() || user.starts_with('-') => {
            return Err("the user name before `@` is empty or starts with `-`".into());
        }
        Some((_, host)) => host,
        None => authority,
    };
    // A port, or an IPv6 address in brackets.
    let name = match host.strip_prefix('[') {
        Some(v6) => v6.split_once(']').map_or("", |(addr, _)| addr),
        None => host.split(':').next().unwrap_or(""),
    };
    let bracketed_v6 =
        host.starts_with('[') && name.bytes().all(|b| b.is_ascii_hexdigit() || b == b':');
    if name.is_empty() || !(bracketed_v6 || is_host(name)) {
        return Err(format!("`{host}` is not a host name"));
    }
    Ok(())
}

/// A DNS name or IPv4 address as a lab would write it.
fn is_host(host: &str) -> bool {
    !host.is_empty()
        && !host.starts_with(['-', '.'])
        && host
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_'))
}

/// The rules of `git check-ref-format` (see its manual), one-level names
/// allowed since `v6.1` and `master` are what people submit.
fn check_ref_name(name: &str) -> Result<(), String> {
    let bad = |why: &str| Err(format!("not an object id, and not a valid ref name: {why}"));
    if name == "@" {
        return bad("`@` alone");
    }
    if name.starts_with('/') || name.ends_with('/') || name.contains("//") {
        return bad("an empty path component");
    }
    if name.ends_with('.') {
        return bad("it ends with `.`");
    }
    if name.contains("..") || name.contains("@{") {
        return bad("`..` or `@{`");
    }
    if let Some(c) = name
        .chars()
        .find(|c| matches!(c, '~' | '^' | ':' | '?' | '*' | '[' | '\\') || c.is_ascii_control())
    {
        return bad(&format!("{c:?}"));
    }
    for part in name.split('/') {
        if part.starts_with('.') || part.ends_with(".lock") {
            return bad("a component starts with `.` or ends with `.lock`");
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;

    #[test]
    fn lab_urls_are_accepted() {
        for url in [
            "https://git.kernel.org/pub/scm/linux/kernel/git/torvalds/linux.git",
            "http://git.example.org:8080/linux.git",
            "git://git.example.org/linux.git",
            "ssh://git@git.example.org:2222/linux.git",
            "ssh://[::1]/srv/linux.git",
            "git@github.com:torvalds/linux.git",
            "lab-git:linux.git",
            "/srv/git/linux.git",
            "file:///srv/git/linux.git",
        ] {
            assert_eq!(check_url(url), Ok(()), "{url}");
        }
    }

    #[test]
    fn options_helpers_and_odd_forms_are_refused() {
        for url in [
            "",
            "--upload-pack=touch /tmp/x",
            "-u",
            "ssh://-oProxyCommand=x/linux",
            "ssh://-u@host/linux",
            "ssh://git@-oProxyCommand=x/linux",
            "ext::sh -c x",
            "ext::sh",
            "fd::3",
            "host::path",
            "ftp://example.org/linux.git",
            "file://relative/linux.git",
            "linux.git",
            "../linux",
            "https://example.org/linux.git\n",
            "https://example.org/a b",
            "https:///linux.git",
            "@host:path",
        ] {
            assert!(check_url(url).is_err(), "{url:?} accepted");
        }
    }

    #[test]
    fn object_ids_and_ref_names_are_accepted() {
        for commit in [
            "deadbeef",
            "830b3c68c1fb1e9176028d02ef86f3cf76aa2476",
            "v6.1",
            "master",
            "refs/heads/for-next",
            "linux-6.1.y",
            "v6.1-rc1",
        ] {
            assert_eq!(check_commit(commit), Ok(()), "{commit}");
        }
    }

    #[test]
    fn a_range_is_two_commits_and_two_dots() {
        assert_eq!(parse_range("v6.1..vfs.all"), Ok(("v6.1", "vfs.all")));
        assert_eq!(parse_range("1a2b3c4d..HEAD"), Ok(("1a2b3c4d", "HEAD")));
        for bad in [
            "v6.1",
            "v6.1...vfs.all",
            "..vfs.all",
            "v6.1..",
            "-x..y",
            "a..--upload-pack=z",
        ] {
            assert!(parse_range(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn options_and_bad_ref_names_are_refused() {
        for commit in [
            "",
            "--output=/tmp/x",
            "-1",
            "v6.1..master",
            "HEAD~1",
            "HEAD^",
            "HEAD@{1}",
            "@",
            "a:b",
            "ref/",
            "/ref",
            "a//b",
            ".hidden",
            "a/.b",
            "x.lock",
            "end.",
            "a b",
            "a\tb",
            "a*",
            "a?",
            "a[1]",
            "a\\b",
            "a\u{7f}",
        ] {
            assert!(check_commit(commit).is_err(), "{commit:?} accepted");
        }
    }

    proptest! {
        #[test]
        fn the_checks_never_panic(s in ".{0,80}") {
            let _ = parse_range(&s);
            let _ = check_url(&s);
            let _ = check_commit(&s);
        }

        #[test]
        fn anything_starting_with_a_dash_is_refused(s in "-.{0,80}") {
            prop_assert!(check_url(&s).is_err());
            prop_assert!(check_commit(&s).is_err());
        }

        #[test]
        fn object_ids_pass(s in "[0-9a-fA-F]{4,64}") {
            prop_assert_eq!(check_commit(&s), Ok(()));
        }

        #[test]
        fn whitespace_anywhere_is_refused(
            head in "[a-z/]{0,20}", ws in "[ \t\r\n\u{b}\u{c}]", tail in "[a-z/]{0,20}",
        ) {
            let url = format!("https://example.org/{head}{ws}{tail}");
            let commit = format!("{head}{ws}{tail}");
            prop_assert!(check_url(&url).is_err());
            prop_assert!(check_commit(&commit).is_err());
        }

        #[test]
        fn ssh_hosts_starting_with_a_dash_are_refused(
            user in "([a-z]{1,8}@)?", host in "-[a-zA-Z=]{0,20}", path in "[a-z/]{0,20}",
        ) {
            let ssh = format!("ssh://{user}{host}/{path}");
            let scp = format!("{user}{host}:{path}");
            prop_assert!(check_url(&ssh).is_err());
            prop_assert!(check_url(&scp).is_err());
        }
    }
}
