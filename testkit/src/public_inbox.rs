//! A real public-inbox archive for the tests of list mail, laid out and
//! served as lore.kernel.org serves one, so the server's reading of lore is
//! tested against the real thing rather than a fake of our own.
//!
//! The archive is a public-inbox **v2** inbox written by ezpi (PyPI
//! `ezpi`, by the kernel.org admins; `./patchperf test` installs the
//! pinned [`EZPI_VERSION`] into `target/ezpi-venv`): each message is one
//! commit on `refs/heads/master` of the newest epoch `git/<N>.git`, its
//! tree one blob `m`, the message. It is served by Debian's
//! `public-inbox-httpd` (package `public-inbox`) on a loopback port. What
//! a client of `Served::url` (`http://127.0.0.1:<port>/<name>`) finds,
//! as on lore:
//!
//! - `<url>/git/<N>.git`: epoch N over git's smart HTTP (clone, fetch,
//!   ls-remote; `<url>/<N>` and `<url>/<N>.git` are the same repository,
//!   the dumb protocol is not served).
//! - `<url>/manifest.js.gz`: the inbox's grokmirror manifest, gzipped JSON
//!   keyed `/<name>/git/<N>.git`, each with a `fingerprint` that changes
//!   with the epoch's refs; an epoch is listed once it has a commit. It is
//!   how a reader finds new epochs (also `/manifest.js.gz` for all inboxes).
//! - `<url>/_/text/mirror/`: mirroring instructions, one `git clone
//!   --mirror <url>/<N>` per epoch (HTML). `<url>/_/text/config/raw` is
//!   only a config snippet for mirrors: it names no epoch.
//!
//! The git epochs need no index: messages added after `serve` are seen by
//! the next fetch (and in the manifest) at once. The web views of messages
//! (`<url>/<Message-ID>/raw`, `t.mbox.gz`, `new.html`) need
//! `public-inbox-index`, which [`Archive::index`] runs; they show what was
//! indexed last.
//!
//! ezpi does not keep a message's bytes: it parses the message with
//! Python's `email` and writes it back out (`Name:value` gains a space
//! after the colon, an empty header value a trailing space; a text part
//! without a charset gains MIME headers; a missing `Date:` or `Message-ID:`
//! is made up). [`Archive::add`] returns what was stored; a message
//! already written as Python writes it (`seed003.eml`) is stored byte for
//! byte.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use crate::free_port;

/// The ezpi `./patchperf` installs (its `EZPI_VERSION`).
pub const EZPI_VERSION: &str = "0.7.0";

/// Each command run here (ezpi, git, public-inbox-index) is killed after
/// this long, so a hung one fails its test instead of stalling the run.
const COMMAND_TIMEOUT: &str = "60";

/// How long `serve` waits for the daemon to answer.
const SERVE_TIMEOUT: Duration = Duration::from_secs(30);

/// A public-inbox v2 archive in a directory of the test's.
#[derive(Debug)]
pub struct Archive {
    dir: PathBuf,
    inbox: PathBuf,
    config: PathBuf,
    name: String,
}

/// One message as the archive holds it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Stored {
    /// The epoch, `git/<epoch>.git`.
    pub epoch: u32,
    /// The commit that added it.
    pub commit: String,
    /// Blob `m` of that commit: the message as ezpi wrote it.
    pub raw: Vec<u8>,
}

impl Archive {
    /// An empty v2 inbox `<dir>/<name>` made by ezpi (epoch `git/0.git`,
    /// no commit yet), and the public-inbox config naming it with
    /// `address` (`<dir>/pi_config`, what `public-inbox-init -V2` would
    /// write: public-inbox needs no more to serve the git epochs).
    pub fn create(dir: &Path, name: &str, address: &str) -> Archive {
        // public-inbox's pattern for inbox names in URLs.
        assert!(
            name.starts_with(|c: char| c.is_ascii_alphanumeric() || "_-".contains(c))
                && name
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || "_-.+".contains(c)),
            "public-inbox cannot serve an inbox named {name:?}"
        );
        let dir = std::path::absolute(dir).unwrap();
        let inbox = dir.join(name);
        let config = dir.join("pi_config");
        // ezpi makes the inbox only as a side effect of the first message,
        // so its own init is called; the version is checked so a stale
        // venv fails here, saying what to do.
        let version = run(
            bounded(ezpi_python())
                .args([
                    "-c",
                    "import ezpi, sys; ezpi.init_v2_inbox(sys.argv[1]); print(ezpi.__VERSION__)",
                ])
                .arg(&inbox),
            &dir,
            None,
        );
        assert_eq!(
            String::from_utf8_lossy(&version).trim(),
            EZPI_VERSION,
            "target/ezpi-venv has another ezpi (./patchperf test installs {EZPI_VERSION})"
        );
        // Shown by the web pages and the manifest, as lore's are.
        std::fs::write(
            inbox.join("description"),
            format!("{name}: a patchperf test archive\n"),
        )
        .unwrap();
        let section = format!("publicinbox.{name}");
        for (key, value) in [("inboxdir", inbox.to_str().unwrap()), ("address", address)] {
            run(
                bounded("git")
                    .arg("config")
                    .arg("--file")
                    .arg(&config)
                    .arg(format!("{section}.{key}"))
                    .arg(value),
                &dir,
                None,
            );
        }
        Archive {
            dir,
            inbox,
            config,
            name: name.to_string(),
        }
    }

    /// The inbox's directory (`all.git`, `git/<N>.git`, `inbox.lock`).
    pub fn inbox_dir(&self) -> &Path {
        &self.inbox
    }

    /// The inbox's name, the last part of its URL.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Appends `raw` (one RFC 822 message, with `From:` and `Subject:`,
    /// which ezpi requires) as a new commit of the newest epoch, as ezpi's
    /// command does (`ezpi --v2-path <inbox> --rfc822`); returns what was
    /// stored, which is not always `raw` (see the module's doc).
    pub fn add(&self, raw: &[u8]) -> Stored {
        run(
            bounded(ezpi_python().with_file_name("ezpi"))
                .args(["--quiet", "--rfc822", "--v2-path"])
                .arg(&self.inbox),
            &self.dir,
            Some(raw),
        );
        let epoch = *self.epochs().last().unwrap();
        let commit = self.git(epoch, &["rev-parse", "refs/heads/master"]);
        let commit = String::from_utf8(commit).unwrap().trim().to_string();
        let raw = self.git(epoch, &["cat-file", "blob", &format!("{commit}:m")]);
        Stored { epoch, commit, raw }
    }

    /// Appends `messages` to epoch `epoch` with one `git fast-import`, each
    /// a commit whose tree is the one blob `m`, as public-inbox writes a
    /// v2 epoch; how many. For archives of the size of a lore list's
    /// (benchmarks), which ezpi, a process a message, would take hours to
    /// write; unlike [`add`](Self::add) the bytes are stored as given.
    pub fn import(&self, epoch: u32, messages: impl IntoIterator<Item = Vec<u8>>) -> usize {
        let tip = self.git(
            epoch,
            &[
                "for-each-ref",
                "--format=%(objectname)",
                "refs/heads/master",
            ],
        );
        let mut parent = String::from_utf8(tip).unwrap().trim().to_string();
        let mut stream = Vec::new();
        let mut count = 0;
        for (k, raw) in messages.into_iter().enumerate() {
            let subject = raw
                .split(|&b| b == b'\n')
                .find_map(|line| line.strip_prefix(b"Subject: "))
                .map(|s| String::from_utf8_lossy(s).into_owned())
                .unwrap_or_default();
            let when = 1_700_000_000 + k;
            stream.extend_from_slice(
                format!(
                    "commit refs/heads/master\nauthor A U Thor <a@example.org> {when} +0000\n\
                     committer {name} <{name}@archive> {when} +0000\ndata {}\n{subject}\n",
                    subject.len() + 1,
                    name = self.name
                )
                .as_bytes(),
            );
            if !parent.is_empty() {
                stream.extend_from_slice(format!("from {parent}\n").as_bytes());
                parent.clear();
            }
            stream.extend_from_slice(
                format!("deleteall\nM 100644 inline m\ndata {}\n", raw.len()).as_bytes(),
            );
            stream.extend_from_slice(&raw);
            stream.extend_from_slice(b"\n\n");
            count += 1;
        }
        let git_dir = self.inbox.join(format!("git/{epoch}.git"));
        run(
            bounded("git")
                .arg("--git-dir")
                .arg(git_dir)
                .args(["fast-import", "--quiet"]),
            &self.dir,
            Some(&stream),
        );
        count
    }

    /// Starts a new epoch with ezpi (which rotates by itself only at 1 GiB
    /// or a new year), so the next [`add`](Self::add) goes into it; returns
    /// its number.
    pub fn new_epoch(&self) -> u32 {
        let next = self.epochs().last().map_or(0, |e| e + 1);
        run(
            bounded(ezpi_python())
                .args([
                    "-c",
                    "import ezpi, sys; ezpi.init_epoch(sys.argv[1], int(sys.argv[2]))",
                ])
                .arg(&self.inbox)
                .arg(next.to_string()),
            &self.dir,
            None,
        );
        next
    }

    /// The epochs there are, ascending (`git/<N>.git`).
    pub fn epochs(&self) -> Vec<u32> {
        let mut epochs: Vec<u32> = std::fs::read_dir(self.inbox.join("git"))
            .unwrap()
            .filter_map(|e| {
                let name = e.unwrap().file_name();
                name.to_str()?.strip_suffix(".git")?.parse().ok()
            })
            .collect();
        epochs.sort_unstable();
        epochs
    }

    /// Every message, oldest first, epoch by epoch.
    pub fn messages(&self) -> Vec<Stored> {
        let mut all = Vec::new();
        for epoch in self.epochs() {
            let heads = self.git(epoch, &["for-each-ref", "refs/heads/master"]);
            if heads.is_empty() {
                continue; // a new epoch without a commit yet
            }
            let log = self.git(epoch, &["rev-list", "--reverse", "refs/heads/master"]);
            for commit in String::from_utf8(log).unwrap().lines() {
                let raw = self.git(epoch, &["cat-file", "blob", &format!("{commit}:m")]);
                let commit = commit.to_string();
                all.push(Stored { epoch, commit, raw });
            }
        }
        all
    }

    /// Indexes the inbox (`public-inbox-index -L basic`: no full-text
    /// search), for the web views of messages; needed again after more
    /// messages for them to show there. Git never needs it.
    pub fn index(&self) {
        run(
            bounded("public-inbox-index")
                .args(["-L", "basic"])
                .arg(&self.inbox)
                .env("PI_CONFIG", &self.config),
            &self.dir,
            None,
        );
    }

    /// `public-inbox-httpd` serving this archive on a free loopback port,
    /// once it answers; stopped when the [`Served`] is dropped.
    pub fn serve(&self) -> Served {
        let mut failures = String::new();
        // Another process may take the free port before the daemon binds
        // it; then the daemon exits and another port is tried.
        for _ in 0..3 {
            let port = free_port();
            let log_path = self.dir.join(format!("httpd-{port}.log"));
            let log = std::fs::File::create(&log_path).unwrap();
            let child = Command::new("public-inbox-httpd")
                // One process, no workers: what is killed is all there is
                // (but for the git processes it spawns, in its group).
                .arg("-W0")
                .arg("-l")
                .arg(format!("http://127.0.0.1:{port}"))
                .env("PI_CONFIG", &self.config)
                .current_dir(&self.dir)
                .stdin(Stdio::null())
                .stdout(log.try_clone().unwrap())
                .stderr(log)
                .process_group(0)
                .spawn()
                .expect("public-inbox-httpd (apt-get install public-inbox)");
            let mut served = Served {
                child,
                port,
                url: format!("http://127.0.0.1:{port}/{}", self.name),
            };
            let deadline = Instant::now() + SERVE_TIMEOUT;
            loop {
                if served.child.try_wait().unwrap().is_some() {
                    let log = std::fs::read_to_string(&log_path).unwrap_or_default();
                    failures.push_str(&format!("port {port}: exited: {log}\n"));
                    break;
                }
                // The manifest answers once the config is read and the
                // inbox found, not merely once the port is bound.
                if http_get(port, &format!("/{}/manifest.js.gz", self.name))
                    .is_some_and(|(status, _)| status == 200)
                {
                    return served;
                }
                assert!(
                    Instant::now() < deadline,
                    "public-inbox-httpd on port {port} did not serve {} in {SERVE_TIMEOUT:?}: {}",
                    self.name,
                    std::fs::read_to_string(&log_path).unwrap_or_default()
                );
                std::thread::sleep(Duration::from_millis(50));
            }
        }
        panic!("public-inbox-httpd did not start:\n{failures}");
    }

    /// `git <args>` in epoch `epoch`'s repository; its output.
    /// Rewrites epoch `epoch`'s history as a purge does: its branch goes
    /// back to `commit`, and the next [`add`](Self::add) writes a new
    /// history from there; what came after `commit` is no longer in it.
    pub fn rewrite_from(&self, epoch: u32, commit: &str) {
        self.git(epoch, &["update-ref", "refs/heads/master", commit]);
    }

    fn git(&self, epoch: u32, args: &[&str]) -> Vec<u8> {
        let git_dir = self.inbox.join(format!("git/{epoch}.git"));
        run(
            bounded("git").arg("--git-dir").arg(git_dir).args(args),
            &self.dir,
            None,
        )
    }
}

/// A running `public-inbox-httpd`; killed, with its children, on drop.
#[derive(Debug)]
pub struct Served {
    child: Child,
    /// The port it listens on, on 127.0.0.1.
    pub port: u16,
    /// The inbox's URL, `http://127.0.0.1:<port>/<name>` (no trailing
    /// slash): epochs at `<url>/git/<N>.git`, the manifest at
    /// `<url>/manifest.js.gz`.
    pub url: String,
}

impl Served {
    /// `GET <url><path>` (`path` starting with `/`): the status and body.
    pub fn get(&self, path: &str) -> (u16, Vec<u8>) {
        let inbox = self.url.rsplit('/').next().unwrap();
        http_get(self.port, &format!("/{inbox}{path}"))
            .unwrap_or_else(|| panic!("GET {}{path} failed", self.url))
    }
}

impl Drop for Served {
    fn drop(&mut self) {
        // SAFETY: killpg only sends a signal. The daemon leads its own
        // process group (process_group(0)) and is not reaped yet, so the
        // group id is still its and no other process's.
        unsafe {
            libc::killpg(self.child.id() as libc::pid_t, libc::SIGKILL);
        }
        let _ = self.child.wait();
    }
}

/// The ezpi virtualenv's Python (`./patchperf test` makes it).
fn ezpi_python() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../target/ezpi-venv/bin/python3")
}

/// `program`, killed after [`COMMAND_TIMEOUT`] (coreutils' `timeout`).
fn bounded(program: impl AsRef<std::ffi::OsStr>) -> Command {
    let mut cmd = Command::new("timeout");
    cmd.args(["--kill-after=5", COMMAND_TIMEOUT]).arg(program);
    cmd
}

/// Runs `cmd` in `dir` with `input` on stdin; its stdout. Panics saying
/// what failed, with its stderr.
fn run(cmd: &mut Command, dir: &Path, input: Option<&[u8]>) -> Vec<u8> {
    let what = format!("{cmd:?}");
    let mut child = cmd
        .current_dir(dir)
        .stdin(if input.is_some() {
            Stdio::piped()
        } else {
            Stdio::null()
        })
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("{what}: {e} (./patchperf test installs what is missing)"));
    if let Some(input) = input {
        // Messages are small and nothing here answers before reading all
        // of stdin, so writing it all first cannot deadlock.
        child.stdin.take().unwrap().write_all(input).unwrap();
    }
    let out = child.wait_with_output().unwrap();
    assert!(
        out.status.success(),
        "{what}: {}: {}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    out.stdout
}

/// `GET <path>` on 127.0.0.1:`port` over HTTP/1.0 (the server closes the
/// connection after the body); `None` if it cannot connect or answers
/// nothing.
fn http_get(port: u16, path: &str) -> Option<(u16, Vec<u8>)> {
    let mut stream = TcpStream::connect(("127.0.0.1", port)).ok()?;
    stream
        .set_read_timeout(Some(Duration::from_secs(30)))
        .ok()?;
    let request = format!("GET {path} HTTP/1.0\r\nHost: 127.0.0.1:{port}\r\n\r\n");
    stream.write_all(request.as_bytes()).ok()?;
    let mut response = Vec::new();
    stream.read_to_end(&mut response).ok()?;
    let end = response.windows(4).position(|w| w == b"\r\n\r\n")?;
    let head = std::str::from_utf8(&response[..end]).ok()?;
    let status = head.split(' ').nth(1)?.parse().ok()?;
    Some((status, response[end + 4..].to_vec()))
}

#[cfg(test)]
mod tests;
