//! A real SMTP server for the tests of mail: Debian's aiosmtpd
//! (`python3-aiosmtpd`) on a loopback port, each message it receives
//! written to a Maildir the test reads back.

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
    /// The port it listens on.
    pub port: u16,
}

impl Relay {
    /// aiosmtpd on `port`, its Maildir under `dir`; waits until it answers.
    pub fn start(port: u16, dir: &Path) -> Relay {
        let maildir = dir.join("maildir");
        let child = Command::new("/usr/bin/python3")
            .args(["-m", "aiosmtpd", "-n", "-l"])
            .arg(format!("127.0.0.1:{port}"))
            .args(["-c", "aiosmtpd.handlers.Mailbox"])
            .arg(&maildir)
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
            port,
        }
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
