//! A real SMTP server for the tests of mail: Debian's aiosmtpd
//! (`python3-aiosmtpd`) on a loopback port, each message it receives
//! written to a Maildir the test reads back, and kept as the bytes that
//! came in SMTP `DATA` (Python's mail parser, which writes the Maildir,
//! reads a bare CR as a line break, so only the raw bytes show one).

use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// aiosmtpd on a loopback port, writing what it receives to a Maildir;
/// stopped when dropped.
#[derive(Debug)]
pub struct Relay {
    child: Child,
    maildir: PathBuf,
    raw: PathBuf,
    /// The port it listens on.
    pub port: u16,
}

/// aiosmtpd's Maildir handler that also keeps each message's `DATA` as
/// it came (after dot-unstuffing), one file per message in arrival order.
const HANDLER: &str = r#"
import os
from aiosmtpd.handlers import Mailbox

class Keeping(Mailbox):
    def __init__(self, maildir, raw):
        super().__init__(maildir)
        self.raw = raw
        os.makedirs(raw, exist_ok=True)

    async def handle_DATA(self, server, session, envelope):
        name = os.path.join(self.raw, "%06d" % len(os.listdir(self.raw)))
        with open(name + ".tmp", "wb") as f:
            f.write(envelope.original_content)
        os.rename(name + ".tmp", name + ".eml")
        return await super().handle_DATA(server, session, envelope)

    @classmethod
    def from_cli(cls, parser, *args):
        return cls(*args)
"#;

impl Relay {
    /// aiosmtpd on `port`, its Maildir under `dir`; waits until it answers.
    pub fn start(port: u16, dir: &Path) -> Relay {
        let maildir = dir.join("maildir");
        let raw = dir.join(format!("raw-{port}"));
        std::fs::write(dir.join("patchperf_smtp.py"), HANDLER).unwrap();
        let child = Command::new("/usr/bin/python3")
            .args(["-m", "aiosmtpd", "-n", "-l"])
            .arg(format!("127.0.0.1:{port}"))
            .args(["-c", "patchperf_smtp.Keeping"])
            .arg(&maildir)
            .arg(&raw)
            .env("PYTHONPATH", dir)
            .stdout(Stdio::null())
            .spawn()
            .expect("python3-aiosmtpd (apt-get install python3-aiosmtpd)");
        let deadline = Instant::now() + Duration::from_secs(20);
        while TcpStream::connect(("127.0.0.1", port)).is_err() {
            assert!(Instant::now() < deadline, "aiosmtpd did not come up");
            std::thread::sleep(Duration::from_millis(50));
        }
        Relay {
            child,
            maildir,
            raw,
            port,
        }
    }

    /// Each message's bytes as they came in `DATA`, in arrival order.
    pub fn raw_mails(&self) -> Vec<Vec<u8>> {
        let Ok(dir) = std::fs::read_dir(&self.raw) else {
            return Vec::new();
        };
        let mut names: Vec<PathBuf> = dir
            .map(|e| e.unwrap().path())
            .filter(|p| p.extension().is_some_and(|x| x == "eml"))
            .collect();
        names.sort();
        names.iter().map(|p| std::fs::read(p).unwrap()).collect()
    }

    /// The mails received so far: (headers, unfolded, and body).
    pub fn mails(&self) -> Vec<(Vec<(String, String)>, String)> {
        let Ok(dir) = std::fs::read_dir(self.maildir.join("new")) else {
            return Vec::new();
        };
        dir.map(|e| {
            let text = std::fs::read_to_string(e.unwrap().path()).unwrap();
            let (head, body) = text.split_once("\n\n").unwrap();
            let head = head.replace("\n ", " ").replace("\n\t", " ");
            let headers = head
                .lines()
                .map(|l| {
                    let (k, v) = l.split_once(':').unwrap();
                    (k.to_ascii_lowercase(), v.trim().to_string())
                })
                .collect();
            (headers, body.to_string())
        })
        .collect()
    }
}

impl Drop for Relay {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The value of header `name` (lower case) among `headers`, or "".
pub fn header<'a>(headers: &'a [(String, String)], name: &str) -> &'a str {
    headers
        .iter()
        .find(|(k, _)| k == name)
        .map_or("", |(_, v)| v.as_str())
}
