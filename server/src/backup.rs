//! Backups of a server's data: the database as pg_dump writes it (custom
//! format, restorable into any Postgres at least as new) and a manifest
//! naming the repositories the server mirrors, so that a restore can clone
//! them again, in one tar file. [`write`] makes one, [`open`] reads one
//! back, [`restore`] loads its database into an empty one. pg_dump and
//! pg_restore reach the database as a [`Target`]: the private cluster's
//! socket, or `DATABASE_URL` with its password passed in the environment,
//! never on a command line `ps` shows.
//!
//! Blocking: run from `spawn_blocking`.

use std::ffi::OsString;
use std::io::Read;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

use crate::Error;
use crate::postgres::{self, PrivatePostgres};

/// The manifest's name in the archive.
pub const MANIFEST: &str = "patchperf-backup.json";
/// The database dump's name in the archive.
pub const DUMP: &str = "database.pgdump";
/// Largest manifest read back: a list of URLs.
const MANIFEST_LIMIT: u64 = 1 << 20;
/// This layout.
const FORMAT: u32 = 1;

/// What a backup holds besides the dump.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Manifest {
    /// Layout of the archive (1).
    pub format: u32,
    /// When it was made.
    pub created_at: DateTime<Utc>,
    /// The `patchperf-server` that made it.
    pub server_version: String,
    /// The newest migration applied to the database dumped.
    pub schema_version: Option<i64>,
    /// The URLs of the repositories mirrored under the git directory.
    pub git_mirrors: Vec<String>,
}

/// How pg_dump and pg_restore reach a database.
#[derive(Debug, Clone)]
pub struct Target {
    args: Vec<OsString>,
    env: Vec<(&'static str, String)>,
}

impl Target {
    /// Database `database` of the private cluster.
    pub fn private(pg: &PrivatePostgres, database: &str) -> Target {
        Target {
            args: pg.libpq_args(database),
            env: Vec::new(),
        }
    }

    /// The database of a `postgres://` URL; its password goes to
    /// `PGPASSWORD`.
    pub fn url(url: &str) -> Result<Target, Error> {
        let mut parsed = url::Url::parse(url)
            .map_err(|e| Error::Setup(format!("DATABASE_URL is not a URL: {e}")))?;
        let mut env = Vec::new();
        if let Some(password) = parsed.password() {
            let password = percent_encoding::percent_decode_str(password)
                .decode_utf8()
                .map_err(|_| Error::Setup("DATABASE_URL's password is not UTF-8".into()))?;
            env.push(("PGPASSWORD", password.into_owned()));
            parsed
                .set_password(None)
                .map_err(|()| Error::Setup("DATABASE_URL has no host".into()))?;
        }
        Ok(Target {
            args: vec![format!("--dbname={parsed}").into()],
            env,
        })
    }

    fn command(&self, tool: &str) -> Command {
        let mut cmd = Command::new(postgres::find_tool(tool));
        cmd.args(&self.args)
            .envs(self.env.iter().map(|(k, v)| (k, v)))
            .stdin(Stdio::null());
        cmd
    }
}

/// Runs `cmd` to its end; its standard error's last lines when it fails.
fn run(mut cmd: Command, what: &str) -> Result<(), Error> {
    let out = cmd
        .output()
        .map_err(|e| Error::Setup(format!("{what}: cannot run {:?}: {e}", cmd.get_program())))?;
    if out.status.success() {
        return Ok(());
    }
    let err = String::from_utf8_lossy(&out.stderr);
    let tail: Vec<&str> = err.lines().rev().take(10).collect();
    let tail: Vec<&str> = tail.into_iter().rev().collect();
    Err(Error::Setup(format!(
        "{what} failed ({}): {}",
        out.status,
        tail.join("\n")
    )))
}

/// Dumps `target` and writes the backup with `manifest` to `file`,
/// atomically: the file appears complete or not at all.
pub fn write(file: &Path, target: &Target, manifest: &Manifest) -> Result<(), Error> {
    let io = |what: &str, e: std::io::Error| Error::Setup(format!("{what}: {e}"));
    let dir = file
        .parent()
        .filter(|d| !d.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    let work = tempfile::Builder::new()
        .prefix(".patchperf-backup.")
        .tempdir_in(dir)
        .map_err(|e| io(&format!("a scratch directory in {}", dir.display()), e))?;
    let dump = work.path().join(DUMP);
    let mut pg_dump = target.command("pg_dump");
    pg_dump.args(["--format=custom", "--no-owner", "--no-privileges", "--file"]);
    pg_dump.arg(&dump);
    run(pg_dump, "pg_dump")?;

    let partial = work.path().join("backup.tar");
    // The database within holds webhook credentials and token hashes:
    // readable by its owner only, whatever the umask.
    let out = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(&partial)
        .map_err(|e| io("creating the backup", e))?;
    let mut tar = tar::Builder::new(out);
    let json = serde_json::to_vec_pretty(manifest)
        .map_err(|e| Error::Internal(format!("encoding the manifest: {e}")))?;
    let mut header = tar::Header::new_gnu();
    header.set_size(json.len() as u64);
    header.set_mode(0o600);
    header.set_mtime(manifest.created_at.timestamp().max(0) as u64);
    header.set_cksum();
    tar.append_data(&mut header, MANIFEST, json.as_slice())
        .and_then(|()| tar.append_path_with_name(&dump, DUMP))
        .and_then(|()| tar.into_inner())
        .and_then(|f| f.sync_all())
        .map_err(|e| io("writing the backup", e))?;
    std::fs::rename(&partial, file).map_err(|e| io(&format!("keeping {}", file.display()), e))
}

/// A backup read back: its manifest, and its dump unpacked into a
/// scratch directory that lives as long as this.
#[derive(Debug)]
pub struct Opened {
    /// The manifest.
    pub manifest: Manifest,
    /// The unpacked dump.
    pub dump: PathBuf,
    _scratch: tempfile::TempDir,
}

/// Reads the backup `file`: its manifest (refused if it is not one this
/// server knows) and its dump, unpacked beside it.
pub fn open(file: &Path) -> Result<Opened, Error> {
    let bad = |why: String| Error::Setup(format!("{}: {why}", file.display()));
    let f = std::fs::File::open(file).map_err(|e| bad(e.to_string()))?;
    let dir = file
        .parent()
        .filter(|d| !d.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    let scratch = tempfile::Builder::new()
        .prefix(".patchperf-restore.")
        .tempdir_in(dir)
        .or_else(|_| tempfile::tempdir())
        .map_err(|e| bad(format!("no scratch directory: {e}")))?;
    let dump = scratch.path().join(DUMP);
    let mut manifest = None;
    let mut dumped = false;
    let mut archive = tar::Archive::new(f);
    for entry in archive.entries().map_err(|e| bad(e.to_string()))? {
        let mut entry = entry.map_err(|e| bad(format!("not a patchperf backup: {e}")))?;
        let name = entry.path().map_err(|e| bad(e.to_string()))?.into_owned();
        if name == Path::new(MANIFEST) {
            let mut text = String::new();
            (&mut entry)
                .take(MANIFEST_LIMIT)
                .read_to_string(&mut text)
                .map_err(|e| bad(format!("its manifest: {e}")))?;
            let m: Manifest =
                serde_json::from_str(&text).map_err(|e| bad(format!("its manifest: {e}")))?;
            if m.format != FORMAT {
                return Err(bad(format!(
                    "backup format {} (this server reads {FORMAT})",
                    m.format
                )));
            }
            manifest = Some(m);
        } else if name == Path::new(DUMP) {
            let mut out = std::fs::File::create(&dump).map_err(|e| bad(e.to_string()))?;
            std::io::copy(&mut entry, &mut out).map_err(|e| bad(format!("its dump: {e}")))?;
            dumped = true;
        }
    }
    match (manifest, dumped) {
        (Some(manifest), true) => Ok(Opened {
            manifest,
            dump,
            _scratch: scratch,
        }),
        _ => Err(bad(format!(
            "not a patchperf backup (no {MANIFEST} and {DUMP})"
        ))),
    }
}

/// Loads `dump` into the empty database `target`, in one transaction:
/// on any error nothing is left half restored.
pub fn restore(target: &Target, dump: &Path) -> Result<(), Error> {
    let mut pg_restore = target.command("pg_restore");
    pg_restore.args([
        "--no-owner",
        "--no-privileges",
        "--exit-on-error",
        "--single-transaction",
    ]);
    pg_restore.arg(dump);
    run(pg_restore, "pg_restore")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_url_password_goes_to_the_environment_decoded_and_off_the_command_line() {
        let t =
            Target::url("postgres://pp:s%40cr%3At@db.example.org:5433/patchperf?sslmode=require")
                .unwrap();
        assert_eq!(
            t.args,
            [OsString::from(
                "--dbname=postgres://pp@db.example.org:5433/patchperf?sslmode=require"
            )]
        );
        assert_eq!(t.env, [("PGPASSWORD", "s@cr:t".to_string())]);
        let t = Target::url("postgres://pp@localhost/db").unwrap();
        assert!(t.env.is_empty());
        assert!(Target::url("not a url").is_err());
    }

    #[test]
    fn a_file_that_is_not_a_backup_is_refused_naming_it() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("x.tar");
        std::fs::write(&file, b"hello").unwrap();
        let e = open(&file).unwrap_err().to_string();
        assert!(
            e.contains("x.tar") && e.contains("not a patchperf backup"),
            "{e}"
        );
        // A tar without the dump.
        let mut tar = tar::Builder::new(std::fs::File::create(&file).unwrap());
        let json = br#"{"format":1,"created_at":"2026-12-02T00:00:00Z","server_version":"0.1.0","schema_version":null,"git_mirrors":[]}"#;
        let mut header = tar::Header::new_gnu();
        header.set_size(json.len() as u64);
        header.set_cksum();
        tar.append_data(&mut header, MANIFEST, &json[..]).unwrap();
        tar.into_inner().unwrap();
        let e = open(&file).unwrap_err().to_string();
        assert!(e.contains("not a patchperf backup"), "{e}");
    }

    /// A valid backup of a made-up dump, as bytes.
    fn valid() -> Vec<u8> {
        let mut tar = tar::Builder::new(Vec::new());
        let json = serde_json::to_vec(&Manifest {
            format: 1,
            created_at: "2026-12-02T00:00:00Z".parse().unwrap(),
            server_version: "0.1.0".into(),
            schema_version: Some(20261202100000),
            git_mirrors: vec!["https://git.example.org/linux.git".into()],
        })
        .unwrap();
        for (name, data) in [(MANIFEST, json.as_slice()), (DUMP, b"PGDMP....".as_slice())] {
            let mut header = tar::Header::new_gnu();
            header.set_size(data.len() as u64);
            header.set_cksum();
            tar.append_data(&mut header, name, data).unwrap();
        }
        tar.into_inner().unwrap()
    }

    proptest::proptest! {
        /// A backup file cut short, bytes changed, or arbitrary bytes: read
        /// or refused, never a panic; what is read is what was written.
        #[test]
        fn fuzz_backup_file(
            cut in proptest::prelude::any::<proptest::sample::Index>(),
            flips in proptest::collection::vec(
                (proptest::prelude::any::<proptest::sample::Index>(), proptest::prelude::any::<u8>()),
                0..4,
            ),
            arbitrary in proptest::collection::vec(proptest::prelude::any::<u8>(), 0..2048),
            which in 0..3u8,
        ) {
            let mut bytes = valid();
            match which {
                0 => bytes.truncate(cut.index(bytes.len() + 1)),
                1 => {
                    for (at, b) in &flips {
                        let i = at.index(bytes.len());
                        bytes[i] = *b;
                    }
                }
                _ => bytes = arbitrary,
            }
            let dir = tempfile::tempdir().unwrap();
            let file = dir.path().join("b.ppbackup");
            std::fs::write(&file, &bytes).unwrap();
            if let Ok(opened) = open(&file) {
                proptest::prop_assert!(opened.dump.is_file());
                proptest::prop_assert_eq!(opened.manifest.format, 1);
            }
        }
    }
}
