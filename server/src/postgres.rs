//! A private Postgres cluster under the server's data directory, for when no
//! `DATABASE_URL` is given: `patchperf-server serve` then works on a fresh
//! Debian machine with nothing configured.
//!
//! Layout under `<data-dir>/pg/`: `data/` (the cluster, made by `initdb`),
//! `run/` (its Unix socket), `log` (its server log). The cluster listens on
//! no TCP address at all, only on a socket in a 0700 directory, which is why
//! `trust` authentication is safe: only its owner (and root) can connect.
//! As root, Debian's binaries must run as the `postgres` user (initdb
//! refuses root), so the directory is handed to that user.
//!
//! `owner.pid` names the process that stops the cluster on shutdown: the
//! one that started it, or the next one to find it running after that
//! process died without stopping it.

use std::path::{Path, PathBuf};
use std::process::Command;

use sqlx::postgres::PgConnectOptions;

use crate::Error;

/// Database the server keeps its tables in, inside the private cluster.
pub const DATABASE: &str = "patchperf";
/// Port number in the socket's name (`.s.PGSQL.<port>`); no TCP port is
/// opened.
const PORT: u16 = 5432;

/// A running private cluster; stopped on [`PrivatePostgres::stop`] or drop
/// when this process owns it.
#[derive(Debug)]
pub struct PrivatePostgres {
    bin: PathBuf,
    data: PathBuf,
    run: PathBuf,
    /// `<root>/owner.pid`: the process that must stop the cluster.
    owner_file: PathBuf,
    /// Whether this process owns it (and so must stop it): it started it,
    /// or adopted it from an owner that is gone (a crashed `serve`).
    /// Another patchperf process (a `token create` beside a running
    /// `serve`) may find it running under a live owner and just use it.
    owned: bool,
    /// Who runs it when we are root (see [`cluster_user`]).
    user: Option<String>,
}

/// Whether the postmaster of `pid_file` ([`PrivatePostgres::pid_file`])
/// runs: the file is there and names a live process. Read, never spawned,
/// so a watcher may ask every few seconds.
pub fn postmaster_alive(pid_file: &Path) -> bool {
    std::fs::read_to_string(pid_file)
        .ok()
        .and_then(|text| text.lines().next()?.trim().parse::<u32>().ok())
        .is_some_and(|pid| Path::new(&format!("/proc/{pid}")).exists())
}

/// The Postgres `bin/` directory for the cluster in `data`: `$PATCHPERF_PG_BIN`;
/// else the version that created the cluster (its `PG_VERSION`), whose
/// binaries must be there (a distribution upgrade brings a newer Postgres,
/// which cannot start an older cluster); else, for a new cluster, Debian's
/// newest (`/usr/lib/postgresql/<v>/bin`).
pub fn find_bin(data: &Path) -> Result<PathBuf, Error> {
    if let Some(dir) = std::env::var_os("PATCHPERF_PG_BIN") {
        return Ok(PathBuf::from(dir));
    }
    bin_for(data, Path::new("/usr/lib/postgresql"))
}

/// The Postgres a new cluster would be made with: `$PATCHPERF_PG_BIN`, else
/// Debian's newest; an error saying what to install when there is none.
pub fn newest_installed() -> Result<PathBuf, Error> {
    if let Some(dir) = std::env::var_os("PATCHPERF_PG_BIN") {
        return Ok(PathBuf::from(dir));
    }
    newest_bin(Path::new("/usr/lib/postgresql"))
}

fn bin_for(data: &Path, root: &Path) -> Result<PathBuf, Error> {
    if let Ok(version) = std::fs::read_to_string(data.join("PG_VERSION")) {
        let version = version.trim();
        if version.parse::<u32>().is_err() {
            return Err(Error::Setup(format!(
                "{}: {version:?} is no Postgres version",
                data.join("PG_VERSION").display()
            )));
        }
        let bin = root.join(version).join("bin");
        if bin.join("pg_ctl").exists() {
            return Ok(bin);
        }
        return Err(Error::Setup(format!(
            "the database under {} was created by Postgres {version}, whose programs are not \
             installed ({}): install Debian's `postgresql-{version}` (then `pg_upgradecluster` \
             can move the data to a newer one), or set PATCHPERF_PG_BIN",
            data.display(),
            bin.display()
        )));
    }
    newest_bin(root)
}

fn newest_bin(root: &Path) -> Result<PathBuf, Error> {
    let mut versions: Vec<(u32, PathBuf)> = std::fs::read_dir(root)
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|e| {
            let v: u32 = e.file_name().to_str()?.parse().ok()?;
            let bin = e.path().join("bin");
            bin.join("initdb").exists().then_some((v, bin))
        })
        .collect();
    versions.sort();
    versions.pop().map(|(_, bin)| bin).ok_or_else(|| {
        Error::Setup(
            "no DATABASE_URL and no Postgres binaries under /usr/lib/postgresql/*/bin; \
             install Debian's `postgresql` package or set DATABASE_URL"
                .into(),
        )
    })
}

/// A Postgres client program (`pg_dump`, `pg_restore`): from
/// `$PATCHPERF_PG_BIN`, else Debian's newest `/usr/lib/postgresql/<v>/bin`
/// that has it (with only `postgresql-client` installed there is no
/// `initdb` beside it), else the one on `PATH`.
pub fn find_tool(name: &str) -> PathBuf {
    if let Some(dir) = std::env::var_os("PATCHPERF_PG_BIN") {
        return PathBuf::from(dir).join(name);
    }
    let mut versions: Vec<(u32, PathBuf)> = std::fs::read_dir("/usr/lib/postgresql")
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|e| {
            let v: u32 = e.file_name().to_str()?.parse().ok()?;
            let tool = e.path().join("bin").join(name);
            tool.exists().then_some((v, tool))
        })
        .collect();
    versions.sort();
    versions
        .pop()
        .map_or_else(|| PathBuf::from(name), |(_, tool)| tool)
}

fn is_root() -> bool {
    // The effective uid of this process; `id -u` keeps this file free of
    // unsafe code.
    Command::new("id")
        .arg("-u")
        .output()
        .map(|o| String::from_utf8_lossy(&o.stdout).trim() == "0")
        .unwrap_or(false)
}

/// Runs a Postgres binary, as `user` when we are root (`None`: as we are).
fn pg_command(bin: &Path, program: &str, user: Option<&str>) -> Command {
    let path = bin.join(program);
    match user {
        Some(user) => {
            let mut c = Command::new("runuser");
            c.args(["-u", user, "--"]).arg(path);
            c
        }
        None => Command::new(path),
    }
}

/// Who the cluster in `data` runs as when we are root: the owner of an
/// existing cluster (the service's user, say `patchperf`: an admin command
/// run as root must not hand the cluster to anyone else, or the service
/// cannot start it again), else `postgres` for a new one. `None` when we
/// are not root: the cluster runs as we are.
fn cluster_user(data: &Path) -> Result<Option<String>, Error> {
    if !is_root() {
        return Ok(None);
    }
    if !data.join("PG_VERSION").exists() {
        return Ok(Some("postgres".to_string()));
    }
    let owner = run(
        {
            let mut stat = Command::new("stat");
            stat.args(["-c", "%U"]).arg(data);
            stat
        },
        "reading who owns the cluster",
    )?;
    let owner = owner.trim();
    if owner.is_empty() || owner == "UNKNOWN" || owner == "root" {
        return Err(Error::Setup(format!(
            "{} belongs to {owner:?}; Postgres runs as the user that owns its cluster (not \
             root): give it to the server's user",
            data.display()
        )));
    }
    Ok(Some(owner.to_string()))
}

fn run(mut cmd: Command, what: &str) -> Result<String, Error> {
    let out = cmd
        .output()
        .map_err(|e| Error::Setup(format!("{what}: cannot run {cmd:?}: {e}")))?;
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    if out.status.success() {
        Ok(text)
    } else {
        Err(Error::Setup(format!(
            "{what} failed ({}): {}",
            out.status,
            text.trim()
        )))
    }
}

/// The pid in `owner_file` if that process (not this one) is still alive;
/// `None` when the file is missing or its process is gone (or a zombie), so
/// the running cluster has no owner left. Any live process with that pid
/// counts: mistaking a recycled pid for the owner only leaves the cluster
/// running, while mistaking a live owner for a dead one would stop its
/// cluster under it.
fn live_owner(owner_file: &Path) -> Option<u32> {
    let pid: u32 = std::fs::read_to_string(owner_file)
        .ok()?
        .trim()
        .parse()
        .ok()?;
    if pid == std::process::id() {
        return None;
    }
    // `/proc/<pid>/stat` is `pid (comm) state …`; comm may hold spaces or
    // parentheses, so the state is read after the last `)`.
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let state = stat.rsplit_once(')')?.1.trim_start().chars().next()?;
    (state != 'Z').then_some(pid)
}

/// Whether [`PrivatePostgres::start`] may create a cluster that is not there.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Create {
    /// `serve` and `restore`: a new server starts from nothing.
    IfMissing,
    /// Every other command works on the server's existing data.
    Never,
}

impl PrivatePostgres {
    /// Starts the cluster under `<data_dir>/pg` unless it is running
    /// already, creating it first only when `create` allows: an admin
    /// command pointed at the wrong directory must fail, not make an empty
    /// database the real server never reads. Blocking: call at startup.
    pub fn start(data_dir: &Path, create: Create) -> Result<Self, Error> {
        let root = data_dir.join("pg");
        let bin = find_bin(&root.join("data"))?;
        if create == Create::Never && !root.join("data").join("PG_VERSION").exists() {
            return Err(Error::Setup(format!(
                "no patchperf database under {}: give the server's --data-dir (or set \
                 PATCHPERF_DATA_DIR, or DATABASE_URL); only `patchperf-server serve` and \
                 `restore` create one",
                root.display()
            )));
        }
        let data = root.join("data");
        let run_dir = root.join("run");
        for dir in [&data, &run_dir] {
            std::fs::create_dir_all(dir)
                .map_err(|e| Error::Setup(format!("cannot create {}: {e}", dir.display())))?;
        }
        let root = root
            .canonicalize()
            .map_err(|e| Error::Setup(format!("{}: {e}", root.display())))?;
        let data = root.join("data");
        let run_dir = root.join("run");
        let socket = run_dir.join(format!(".s.PGSQL.{PORT}"));
        if socket.as_os_str().len() > 100 {
            return Err(Error::Setup(format!(
                "data directory path too long for a Unix socket ({}); choose a shorter --data-dir",
                socket.display()
            )));
        }
        if root.to_string_lossy().contains('\'') {
            return Err(Error::Setup(
                "data directory path must not contain a quote".into(),
            ));
        }
        let user = cluster_user(&data)?;
        if let Some(user) = &user {
            // Everything under pg/ to the cluster's user (what root may have
            // made just now: run/, a new data/), never to another one.
            let mut chown = Command::new("chown");
            chown.arg("-R").arg(format!("{user}:")).arg(&root);
            run(chown, "handing the cluster directory to its user")?;
            let mut probe = Command::new("runuser");
            probe.args(["-u", user, "--", "test", "-w"]).arg(&data);
            if !probe.status().map(|s| s.success()).unwrap_or(false) {
                return Err(Error::Setup(format!(
                    "the {user} user cannot reach {}; make its parent directories \
                     traversable (chmod o+x) or choose another --data-dir",
                    data.display()
                )));
            }
        }
        std::fs::set_permissions(
            &run_dir,
            std::os::unix::fs::PermissionsExt::from_mode(0o700),
        )
        .map_err(|e| Error::Setup(format!("{}: {e}", run_dir.display())))?;

        if !data.join("PG_VERSION").exists() {
            tracing::info!(dir = %data.display(), "creating a private Postgres cluster");
            let mut initdb = pg_command(&bin, "initdb", user.as_deref());
            initdb.arg("-D").arg(&data).args([
                "-U",
                "postgres",
                "-A",
                "trust",
                "-E",
                "UTF8",
                "--locale=C",
            ]);
            run(initdb, "initdb")?;
        }
        let mut status = pg_command(&bin, "pg_ctl", user.as_deref());
        status.arg("status").arg("-D").arg(&data);
        let running = status.output().map(|o| o.status.success()).unwrap_or(false);
        let owner_file = root.join("owner.pid");
        let live_owner = running.then(|| live_owner(&owner_file)).flatten();
        let owned = live_owner.is_none();
        if owned {
            // Written before starting, so that another patchperf process
            // finding the cluster running meanwhile sees a live owner.
            std::fs::write(&owner_file, std::process::id().to_string())
                .map_err(|e| Error::Setup(format!("{}: {e}", owner_file.display())))?;
        }
        if let Some(pid) = live_owner {
            tracing::info!(dir = %data.display(), owner = pid, "private Postgres already running; using it");
        } else if running {
            // Its owner died without stopping it (killed, crashed, power
            // cut): nobody else will ever stop it, so this process must.
            tracing::warn!(dir = %data.display(), "private Postgres left running by a process that is gone; adopting it (it stops on shutdown)");
        } else {
            tracing::info!(dir = %data.display(), "starting private Postgres");
            let mut start = pg_command(&bin, "pg_ctl", user.as_deref());
            start
                .arg("start")
                .arg("-D")
                .arg(&data)
                .args(["-w", "-t", "120", "-l"])
                .arg(root.join("log"))
                .arg("-o")
                .arg(format!(
                    "-c listen_addresses='' -c unix_socket_directories='{}' \
                     -c unix_socket_permissions=0700 -p {PORT}",
                    run_dir.display()
                ));
            run(
                start,
                "starting the private Postgres (see <data-dir>/pg/log)",
            )?;
        }
        Ok(PrivatePostgres {
            bin,
            data,
            run: run_dir,
            owner_file,
            owned,
            user,
        })
    }

    /// How to connect to database `database` of the cluster.
    pub fn connect_options(&self, database: &str) -> PgConnectOptions {
        PgConnectOptions::new()
            .socket(&self.run)
            .port(PORT)
            .username("postgres")
            .database(database)
    }

    /// How a libpq client program (pg_dump, pg_restore) reaches database
    /// `database` of the cluster: its socket directory, port and user.
    pub fn libpq_args(&self, database: &str) -> Vec<std::ffi::OsString> {
        let mut args: Vec<std::ffi::OsString> = vec!["--host".into(), self.run.clone().into()];
        for arg in [
            "--port",
            &PORT.to_string(),
            "--username",
            "postgres",
            "--dbname",
            database,
        ] {
            args.push(arg.into());
        }
        args
    }

    /// Where the running cluster's postmaster writes its pid: what
    /// [`postmaster_alive`] reads.
    pub fn pid_file(&self) -> PathBuf {
        self.data.join("postmaster.pid")
    }

    /// Stops the cluster (fast shutdown: open sessions are ended, data is
    /// flushed) if this process owns it. Safe to call twice.
    pub fn stop(&mut self) {
        if !self.owned {
            return;
        }
        self.owned = false;
        let mut stop = pg_command(&self.bin, "pg_ctl", self.user.as_deref());
        stop.arg("stop")
            .arg("-D")
            .arg(&self.data)
            .args(["-m", "fast", "-w"]);
        match run(stop, "stopping the private Postgres") {
            Ok(_) => {
                let _ = std::fs::remove_file(&self.owner_file);
                tracing::info!(dir = %self.data.display(), "private Postgres stopped");
            }
            Err(e) => tracing::error!(error = %e, "private Postgres did not stop cleanly"),
        }
    }
}

impl Drop for PrivatePostgres {
    fn drop(&mut self) {
        self.stop();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A cluster is started by the Postgres that created it, never by a
    /// newer one a distribution upgrade brought; without its programs,
    /// the error says what to install.
    #[test]
    fn a_cluster_is_run_by_the_version_that_made_it() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join("usr-lib-postgresql");
        for v in ["15", "17"] {
            let bin = root.join(v).join("bin");
            std::fs::create_dir_all(&bin).unwrap();
            std::fs::write(bin.join("pg_ctl"), "").unwrap();
            std::fs::write(bin.join("initdb"), "").unwrap();
        }
        let data = dir.path().join("data");
        std::fs::create_dir_all(&data).unwrap();
        // New: the newest.
        assert_eq!(bin_for(&data, &root).unwrap(), root.join("17/bin"));
        std::fs::write(data.join("PG_VERSION"), "15\n").unwrap();
        assert_eq!(bin_for(&data, &root).unwrap(), root.join("15/bin"));
        std::fs::write(data.join("PG_VERSION"), "13\n").unwrap();
        let Err(Error::Setup(why)) = bin_for(&data, &root) else {
            panic!("a cluster of a version not installed was started");
        };
        assert!(why.contains("created by Postgres 13"), "{why}");
        assert!(why.contains("install Debian's `postgresql-13`"), "{why}");
    }
}
