//! The lore-scale benchmark's client (run by `bench/lore.sh`, which starts
//! the server): a public-inbox v2 archive the size of a busy lore list,
//! `--messages` (100,000) in `--epochs` (3), served by Debian's
//! `public-inbox-httpd` on a loopback port, followed by the server from its
//! first message (`read_history`). It prints how long the server took to
//! store every message (clone of each epoch included: the first read of a
//! list), the messages a second, and the peak memory of the server process
//! (`VmHWM`) and the largest of its Postgres processes'.
//!
//! The archive is written by ezpi (the inbox and each epoch) and
//! `git fast-import` (the messages, one commit each with the blob `m`, as
//! public-inbox writes them; ezpi writing 100,000 messages one process
//! each would take hours). The messages are kernel list traffic: patch
//! series (a cover letter and 1–5 patches of real-looking diffs) and the
//! reviews answering them, 1.5–6 KB each. The list's path filter matches
//! nothing, so no series is measured: the benchmark is the reading.
//!
//! usage: lore URL CI_TOKEN --server-pid PID --postgres-pid PID
//!        [--messages N] [--epochs E]

use std::time::{Duration, Instant};

use patchperf_testkit::public_inbox::Archive;
use serde_json::{Value, json};

/// What the command line asked for.
struct Options {
    url: String,
    ci_token: String,
    server_pid: u32,
    postgres_pid: u32,
    messages: usize,
    epochs: u32,
}

fn options() -> Result<Options, String> {
    let mut args = std::env::args().skip(1);
    let mut positional = Vec::new();
    let (mut server_pid, mut postgres_pid) = (0, 0);
    let (mut messages, mut epochs) = (100_000, 3);
    while let Some(a) = args.next() {
        let mut value = || args.next().ok_or_else(|| format!("{a} needs a value"));
        match a.as_str() {
            "--server-pid" => server_pid = value()?.parse().map_err(|_| "bad --server-pid")?,
            "--postgres-pid" => {
                postgres_pid = value()?.parse().map_err(|_| "bad --postgres-pid")?
            }
            "--messages" => messages = value()?.parse().map_err(|_| "bad --messages")?,
            "--epochs" => epochs = value()?.parse().map_err(|_| "bad --epochs")?,
            _ => positional.push(a),
        }
    }
    let [url, ci_token] = <[String; 2]>::try_from(positional)
        .map_err(|_| "usage: lore URL CI_TOKEN --server-pid PID --postgres-pid PID")?;
    if !(1..=1_000_000).contains(&messages) || !(1..=20).contains(&epochs) {
        return Err("--messages 1..=1000000, --epochs 1..=20".into());
    }
    Ok(Options {
        url,
        ci_token,
        server_pid,
        postgres_pid,
        messages,
        epochs,
    })
}

/// A small deterministic generator (xorshift), so every run reads the same
/// archive.
struct Rng(u64);

impl Rng {
    fn below(&mut self, n: u64) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0 % n
    }
}

const PEOPLE: [&str; 6] = [
    "Jörg Hacker <jh@example.org>",
    "Al Viro <viro@example.org>",
    "Christian Brauner <brauner@example.org>",
    "Jan Kara <jack@example.org>",
    "Mateusz Guzik <mjguzik@example.org>",
    "Amir Goldstein <amir73il@example.org>",
];
const FILES: [&str; 6] = [
    "fs/open.c",
    "fs/namei.c",
    "fs/stat.c",
    "fs/file.c",
    "fs/read_write.c",
    "fs/pipe.c",
];

fn header(from: &str, subject: &str, id: &str, parent: Option<&str>, date: usize) -> String {
    let thread = parent.map_or(String::new(), |p| {
        format!("In-Reply-To: <{p}>\nReferences: <{p}>\n")
    });
    format!(
        "From: {from}\nTo: linux-fsdevel@vger.kernel.org\nCc: {}\nSubject: {subject}\n\
         Date: {}\nMessage-ID: <{id}>\n{thread}MIME-Version: 1.0\n\
         Content-Type: text/plain; charset=utf-8\n\n",
        PEOPLE[1],
        chrono_date(date)
    )
}

/// An RFC 2822 date `n` minutes after 2026-01-01.
fn chrono_date(n: usize) -> String {
    let t = 1_767_225_600 + 60 * n as i64;
    let days = t / 86_400;
    let secs = t % 86_400;
    // Days since 1970-01-01 to a civil date (Howard Hinnant's algorithm).
    let z = days + 719_468;
    let era = z / 146_097;
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    const MONTHS: [&str; 12] = [
        "Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec",
    ];
    format!(
        "{d} {} {y} {:02}:{:02}:{:02} +0000",
        MONTHS[(m - 1) as usize],
        secs / 3600,
        secs % 3600 / 60,
        secs % 60
    )
}

/// A patch's body: a commit message and a diff of `hunks` hunks.
fn patch_body(rng: &mut Rng, author: &str, file: &str, hunks: u64) -> String {
    let mut body = format!(
        "Avoid taking the lock twice on the fast path; the second acquisition\n\
         shows up in will-it-scale's {} at {} tasks.\n\nSigned-off-by: {author}\n---\n \
         {file} | {} ++++----\n 1 file changed\n\ndiff --git a/{file} b/{file}\n\
         --- a/{file}\n+++ b/{file}\n",
        ["open1", "dup1", "fstat", "read1"][rng.below(4) as usize],
        1 << rng.below(5),
        hunks * 8
    );
    for h in 0..hunks {
        let at = 100 + h * 40 + rng.below(30);
        body.push_str(&format!(
            "@@ -{at},12 +{at},12 @@ static int do_thing_{h}(struct file *f)\n"
        ));
        for k in 0..4 {
            body.push_str(&format!("     struct inode *inode_{k} = file_inode(f);\n"));
        }
        for k in 0..4 {
            body.push_str(&format!("-    spin_lock(&inode_{k}->i_lock);\n"));
            body.push_str(&format!("+    if (!spin_trylock(&inode_{k}->i_lock))\n"));
        }
        for k in 0..4 {
            body.push_str(&format!("     inode_{k}->i_state |= I_DIRTY;\n"));
        }
    }
    body.push_str("-- \n2.47.0\n");
    body
}

/// Up to `n` messages of list traffic, thread after thread.
fn traffic(n: usize, rng: &mut Rng) -> Vec<Vec<u8>> {
    let mut all = Vec::with_capacity(n);
    let mut thread = 0;
    while all.len() < n {
        thread += 1;
        let author = PEOPLE[rng.below(PEOPLE.len() as u64) as usize];
        let patches = 1 + rng.below(5);
        let version = 1 + rng.below(3);
        let prefix = if version == 1 {
            "PATCH".to_string()
        } else {
            format!("PATCH v{version}")
        };
        let cover = format!("t{thread}-0@example.org");
        let anchor = if patches > 1 {
            let subject = format!("[{prefix} 0/{patches}] fs: faster paths {thread}");
            let mut m = header(author, &subject, &cover, None, all.len());
            m.push_str("This series takes a lock off the fast paths.\n\n");
            m.push_str(&"Numbers from will-it-scale below.\n".repeat(20));
            all.push(m.into_bytes());
            Some(cover.as_str())
        } else {
            None
        };
        for k in 1..=patches {
            let id = format!("t{thread}-{k}@example.org");
            let subject = if patches > 1 {
                format!("[{prefix} {k}/{patches}] fs: step {k} of {thread}")
            } else {
                format!("[{prefix}] fs: faster path {thread}")
            };
            let file = FILES[rng.below(FILES.len() as u64) as usize];
            let mut m = header(author, &subject, &id, anchor, all.len());
            let hunks = 1 + rng.below(6);
            m.push_str(&patch_body(rng, author, file, hunks));
            all.push(m.into_bytes());
        }
        for r in 0..rng.below(5) {
            let from = PEOPLE[rng.below(PEOPLE.len() as u64) as usize];
            let id = format!("t{thread}-r{r}@example.org");
            let parent = anchor.map_or_else(|| format!("t{thread}-1@example.org"), str::to_string);
            let mut m = header(from, "Re: fs: faster paths", &id, Some(&parent), all.len());
            m.push_str(&"> This series takes a lock off the fast paths.\n".repeat(10));
            m.push_str("\nLooks right to me; the trylock cannot fail here.\n\n");
            m.push_str(&format!("Reviewed-by: {from}\n"));
            all.push(m.into_bytes());
        }
    }
    all.truncate(n);
    all
}

/// `VmHWM` of `pid` in KiB (0 when it is gone).
fn peak_kib(pid: u32) -> u64 {
    std::fs::read_to_string(format!("/proc/{pid}/status"))
        .unwrap_or_default()
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.trim().trim_end_matches(" kB").trim().parse().ok())
        .unwrap_or(0)
}

/// The largest `VmHWM` among `pid` and its children.
fn peak_of_tree(pid: u32) -> u64 {
    let children =
        std::fs::read_to_string(format!("/proc/{pid}/task/{pid}/children")).unwrap_or_default();
    children
        .split_whitespace()
        .filter_map(|c| c.parse().ok())
        .map(peak_kib)
        .chain([peak_kib(pid)])
        .max()
        .unwrap_or(0)
}

fn request(
    agent: &ureq::Agent,
    method: &str,
    url: &str,
    token: &str,
    body: Option<Value>,
) -> Value {
    let auth = format!("Bearer {token}");
    let response = match body {
        Some(b) => agent.post(url).header("authorization", &auth).send_json(b),
        None if method == "GET" => agent.get(url).header("authorization", &auth).call(),
        None => panic!("{method} without a body"),
    };
    let mut response = response.unwrap_or_else(|e| panic!("{method} {url}: {e}"));
    response.body_mut().read_json().unwrap()
}

fn main() {
    let o = options().unwrap_or_else(|e| {
        eprintln!("{e}");
        std::process::exit(2)
    });
    let dir = tempfile::tempdir().unwrap();
    let archive = Archive::create(dir.path(), "linux-fsdevel", "linux-fsdevel@vger.kernel.org");
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
    let all = traffic(o.messages, &mut rng);
    let bytes: usize = all.iter().map(Vec::len).sum();
    let per_epoch = o.messages.div_ceil(o.epochs as usize);
    let written = Instant::now();
    for (e, chunk) in all.chunks(per_epoch).enumerate() {
        if e > 0 {
            archive.new_epoch();
        }
        archive.import(u32::try_from(e).unwrap(), chunk.iter().cloned());
    }
    drop(all);
    println!(
        "lore: archive of {} messages ({} MiB) in {} epochs written in {:.1} s",
        o.messages,
        bytes >> 20,
        archive.epochs().len(),
        written.elapsed().as_secs_f64()
    );
    let served = archive.serve();
    let agent: ureq::Agent = ureq::Agent::config_builder()
        .http_status_as_error(true)
        .timeout_global(Some(Duration::from_secs(60)))
        .build()
        .into();
    let started = Instant::now();
    let created = request(
        &agent,
        "POST",
        &format!("{}/api/v1/lists", o.url),
        &o.ci_token,
        Some(json!({
            "name": "linux-fsdevel", "address": "linux-fsdevel@vger.kernel.org",
            "archive_url": served.url, "read_history": true,
            "base_url": "https://git.example.org/linux.git", "base_branch": "master",
            // Matches no patch: the benchmark is the reading, not the measuring.
            "paths": ["Documentation/none/*"],
            "runs": 3,
        })),
    );
    let id = created["id"].as_i64().expect("the list's id");
    let mut last = (0, Instant::now());
    let timeline = std::env::var_os("LORE_TIMELINE").is_some();
    let mut next_line = Duration::ZERO;
    loop {
        let list = request(
            &agent,
            "GET",
            &format!("{}/api/v1/lists/{id}", o.url),
            &o.ci_token,
            None,
        );
        let stored = list["messages"].as_u64().unwrap_or(0);
        if stored != last.0 {
            last = (stored, Instant::now());
        }
        if timeline && started.elapsed() >= next_line {
            println!(
                "lore: {:6.1} s {stored:7} messages",
                started.elapsed().as_secs_f64()
            );
            next_line += Duration::from_secs(2);
        }
        if stored as usize >= o.messages {
            break;
        }
        if last.1.elapsed() > Duration::from_secs(300) {
            eprintln!("lore: stuck at {stored} messages for 300 s: {list:#}");
            std::process::exit(1);
        }
        std::thread::sleep(Duration::from_millis(200));
    }
    let took = started.elapsed().as_secs_f64();
    println!(
        "lore: first read of {} messages in {took:.1} s: {:.0} messages/s (target ≥ 2,000)",
        o.messages,
        o.messages as f64 / took
    );
    // Then the threads: every series assembled and settled (here all are
    // complete and outside the list's paths, so each ends skipped).
    let settled = Instant::now();
    loop {
        let waiting = request(
            &agent,
            "GET",
            &format!("{}/api/v1/series?list={id}&state=waiting&limit=1", o.url),
            &o.ci_token,
            None,
        );
        let none = waiting["series"].as_array().is_some_and(Vec::is_empty);
        let pending = request(
            &agent,
            "GET",
            &format!("{}/api/v1/series?list={id}&limit=1", o.url),
            &o.ci_token,
            None,
        );
        let some = pending["series"].as_array().is_some_and(|s| !s.is_empty());
        if none && some {
            break;
        }
        if settled.elapsed() > Duration::from_secs(1800) {
            eprintln!("lore: series still waiting after 1800 s");
            std::process::exit(1);
        }
        std::thread::sleep(Duration::from_millis(500));
    }
    println!(
        "lore: every series assembled and settled {:.1} s after the last message was stored",
        settled.elapsed().as_secs_f64()
    );
    println!(
        "lore: peak memory: server {} MiB (VmHWM), largest Postgres process {} MiB",
        peak_kib(o.server_pid) >> 10,
        peak_of_tree(o.postgres_pid) >> 10
    );
}
