//! Reads the samples out of `perf script -F comm,tid,period,ip,sym,dso
//! --no-inline` (perf 6.1), each with its weight and its call stack.
//!
//! perf prints one block per sample: a header line with the command name
//! (which may contain spaces), the thread id and the sample period, then one
//! line per stack frame, innermost (the sampled instruction) first, each a
//! tab (shown as `→` below), the address, the symbol (which may contain
//! spaces: demangled C++ and Rust names) and the DSO in parentheses; a blank
//! line ends the block:
//!
//! ```text
//! dup1 18818   10101010
//! →ffffffff816b3e15 filp_flush ([kernel.kallsyms])
//! →ffffffff816b7f8e __x64_sys_close ([kernel.kallsyms])
//! →ffffffff821ef691 do_syscall_64 ([kernel.kallsyms])
//! →ffffffff81000130 entry_SYSCALL_64_after_hwframe ([kernel.kallsyms])
//! →           f89f0 __close (/usr/lib/x86_64-linux-gnu/libc.so.6)
//! ```
//!
//! An address perf could not resolve is printed with the symbol `[unknown]`.
//! Parsing works a line at a time ([`ScriptParser`]) so that a long
//! recording never has to be held in memory.

use crate::Error;

const WHAT: &str = "perf script output";

/// One stack frame.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Frame {
    /// The function, or `None` where perf printed `[unknown]`.
    pub symbol: Option<String>,
    /// The binary the address belongs to (`[kernel.kallsyms]`, a path, or `[unknown]`).
    pub dso: String,
}

/// One sample: its weight and its stack, innermost frame first.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Sample {
    /// Command name of the sampled thread.
    pub comm: String,
    /// The sample period (event count, or nanoseconds for `cpu-clock`) it stands for.
    pub period: u64,
    /// The call stack, the sampled function first, its callers after it.
    pub frames: Vec<Frame>,
}

/// Line-at-a-time reader of `perf script` output.
#[derive(Debug, Default)]
pub struct ScriptParser {
    current: Option<Sample>,
    line_no: usize,
}

impl ScriptParser {
    /// A parser at the start of the output.
    pub fn new() -> Self {
        Self::default()
    }

    /// Takes the next line (without its newline); returns a sample when the
    /// line completes one.
    pub fn push_line(&mut self, line: &str) -> Result<Option<Sample>, Error> {
        self.line_no += 1;
        if line.trim().is_empty() {
            return Ok(self.current.take());
        }
        if line.starts_with('\t') {
            let frame = parse_frame(line.trim()).map_err(|message| self.error(message))?;
            return match &mut self.current {
                Some(sample) => {
                    sample.frames.push(frame);
                    Ok(None)
                }
                None => Err(self.error("a stack frame before any sample header".into())),
            };
        }
        let header = parse_header(line).map_err(|message| self.error(message))?;
        // perf always ends a sample with a blank line; a header right after a
        // header means the previous sample simply had no frames.
        Ok(self.current.replace(header))
    }

    /// Ends the input; returns the last sample if the output did not end
    /// with a blank line.
    pub fn finish(self) -> Option<Sample> {
        self.current
    }

    fn error(&self, message: String) -> Error {
        Error::Parse {
            what: WHAT,
            line: self.line_no,
            message,
        }
    }
}

/// Parses a whole `perf script` output (for tests and small recordings).
pub fn parse_script(text: &str) -> Result<Vec<Sample>, Error> {
    let mut parser = ScriptParser::new();
    let mut samples = Vec::new();
    for line in text.lines() {
        samples.extend(parser.push_line(line)?);
    }
    samples.extend(parser.finish());
    Ok(samples)
}

/// `comm tid period`, where comm may contain spaces.
fn parse_header(line: &str) -> Result<Sample, String> {
    let bad = || format!("`{line}` is not a `comm tid period` sample header");
    let (rest, period) = line
        .trim_end()
        .rsplit_once(char::is_whitespace)
        .ok_or_else(bad)?;
    let (comm, tid) = rest
        .trim_end()
        .rsplit_once(char::is_whitespace)
        .ok_or_else(bad)?;
    let period = period.parse::<u64>().map_err(|_| bad())?;
    tid.parse::<i64>().map_err(|_| bad())?;
    Ok(Sample {
        comm: comm.trim().to_string(),
        period,
        frames: Vec::new(),
    })
}

/// `address symbol (dso)`, where symbol may contain spaces and parentheses.
fn parse_frame(line: &str) -> Result<Frame, String> {
    let bad = || format!("`{line}` is not an `address symbol (dso)` stack frame");
    let (address, rest) = line.split_once(' ').ok_or_else(bad)?;
    if address.is_empty() || !address.bytes().all(|b| b.is_ascii_hexdigit()) {
        return Err(bad());
    }
    let rest = rest.trim_start();
    let inner = rest.strip_suffix(')').ok_or_else(bad)?;
    let open = inner.rfind(" (").ok_or_else(bad)?;
    let symbol = inner[..open].trim();
    let dso = &inner[open + 2..];
    if symbol.is_empty() {
        return Err(bad());
    }
    Ok(Frame {
        symbol: (symbol != "[unknown]").then(|| symbol.to_string()),
        dso: dso.to_string(),
    })
}

/// A warning when perf script's stderr says samples were lost while
/// recording (perf prints `Processed N events and lost M chunks!` or
/// `Processed N samples and lost P%!`); the profile then describes the
/// samples that were kept. `None` when nothing was lost.
pub fn lost_samples_warning(script_stderr: &str) -> Option<String> {
    let lost: Vec<&str> = script_stderr
        .lines()
        .map(str::trim)
        .filter(|line| line.starts_with("Processed ") && line.contains(" lost "))
        .collect();
    (!lost.is_empty()).then(|| {
        format!(
            "perf record could not keep up and dropped data ({}): perf-profile shares are of \
             the samples that were kept",
            lost.join("; ")
        )
    })
}
