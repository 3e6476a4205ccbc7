//! A posted series fetched by its Message-ID (`submit --msgid`), as a
//! kernel developer fetches one by hand: `b4 am -o - MSGID` finds the
//! thread through b4's `b4.midmask` (lore.kernel.org unless the user's git
//! configuration names another archive), takes the newest version of the
//! series with its trailers, and writes the mbox `git am` takes. The b4 is
//! the user's (`$PATCHPERF_B4`, else `b4` on `PATH`); without one the
//! error says how to install it or pipe `b4 am` in.

use std::time::Duration;

use crate::Error;
use crate::proc::Cmd;

/// Longest b4 may take to find and fetch a thread.
const B4_TIMEOUT: Duration = Duration::from_secs(300);

/// The series `msgid` (with or without its `<>`) starts, as b4 assembles
/// it for `git am`.
pub fn am(msgid: &str) -> Result<String, Error> {
    let id = checked(msgid)?;
    let program = b4_program().ok_or_else(|| {
        Error::Usage(format!(
            "--msgid needs b4 (pip install b4, or name it in $PATCHPERF_B4); without it: \
             b4 am -o - '{id}' | patchperf-runner submit --mbox - …"
        ))
    })?;
    let out = Cmd::new(&program)
        .args(["--quiet", "am", "--no-cover", "-o", "-"])
        .arg(&id)
        .timeout(B4_TIMEOUT)
        .tail_lines(20)
        .capture_stdout()
        .output()?;
    if !out.success() || !out.stdout.contains("\nSubject: ") {
        return Err(Error::Usage(format!(
            "b4 am {id} found no series to measure: {}",
            out.tail.last(5).trim()
        )));
    }
    Ok(out.stdout)
}

/// `$PATCHPERF_B4` when it is a file, else `b4` when it is on `PATH`.
fn b4_program() -> Option<std::path::PathBuf> {
    if let Some(named) = std::env::var_os("PATCHPERF_B4") {
        let named = std::path::PathBuf::from(named);
        return named.is_file().then_some(named);
    }
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|dir| dir.join("b4"))
        .find(|candidate| candidate.is_file())
}

/// A Message-ID as b4 takes it: without `<>`, one printable word that
/// no option could be taken for.
fn checked(msgid: &str) -> Result<String, Error> {
    let id = msgid.trim().trim_start_matches('<').trim_end_matches('>');
    let printable = id.chars().all(|c| c.is_ascii_graphic());
    if id.is_empty() || id.len() > 995 || !printable || id.starts_with('-') || !id.contains('@') {
        return Err(Error::Usage(format!(
            "--msgid {msgid:?} is not a Message-ID (e.g. 20261206.12345-1-kh@example.org)"
        )));
    }
    Ok(id.to_string())
}

#[cfg(test)]
mod tests {
    use super::checked;

    #[test]
    fn a_message_id_is_one_word_with_an_at() {
        assert_eq!(
            checked("<20261206.1-1-kh@example.org>").unwrap(),
            "20261206.1-1-kh@example.org"
        );
        for bad in ["", "<>", "no-at-sign", "-o@x", "a b@c", "a\n@b", "x@y\u{0}"] {
            assert!(checked(bad).is_err(), "{bad:?}");
        }
    }
}
