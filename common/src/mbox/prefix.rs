//! The prefixes of a series that a per-patch comparison measures: patches
//! 1..k for each k, as mbox text. Step k of the comparison boots patches
//! 1..k-1 against patches 1..k, and the runner caches a kernel by the
//! sha256 of its mbox text, so each prefix is written exactly one way: the
//! kernel step k builds for its patched side is the one step k+1 finds in
//! the cache for its base side.

use super::{Message, split};

/// The separator `git format-patch` writes before each message; put back
/// before each split message so that `git am` reads the text as a mailbox.
pub const SEPARATOR: &str =
    "From 0000000000000000000000000000000000000000 Mon Sep 17 00:00:00 2001\n";

/// One mbox per patch of `mbox` (messages with a diff; cover letters and
/// replies are left out): the k-th holds patches 1..k, each after a
/// [`SEPARATOR`]. The last is `mbox` itself, so the last step's patched
/// kernel is the whole series' kernel. A message whose headers cannot be
/// read counts as no patch (a submission was [`super::parse`]d first).
pub fn prefixes(mbox: &str) -> Vec<String> {
    let patches: Vec<&str> = split(mbox)
        .into_iter()
        .enumerate()
        .filter(|(index, text)| Message::read(text, *index).is_ok_and(|m| m.has_diff))
        .map(|(_, text)| text)
        .collect();
    let mut prefixes = Vec::with_capacity(patches.len());
    let mut text = String::new();
    for patch in &patches {
        text.push_str(SEPARATOR);
        // Every message but the mbox's last ends in a newline (a separator
        // line follows it), and the last prefix is the mbox itself.
        text.push_str(patch);
        prefixes.push(text.clone());
    }
    if let Some(last) = prefixes.last_mut() {
        *last = mbox.to_string();
    }
    prefixes
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::mbox::parse;

    fn patch(n: u32, file: &str) -> String {
        format!(
            "From: A <a@example.org>\nSubject: [PATCH {n}/3] {file}: change\n\n---\n\
             --- a/{file}\n+++ b/{file}\n@@ -1 +1 @@\n-a\n+b\n"
        )
    }

    #[test]
    fn each_prefix_holds_the_patches_up_to_it_and_the_last_is_the_series() {
        let cover = "From: A <a@example.org>\nSubject: [PATCH 0/3] cover\n\nwhy\n";
        let mbox: String = [
            cover.to_string(),
            patch(1, "a"),
            patch(2, "b"),
            patch(3, "c"),
        ]
        .iter()
        .map(|m| format!("{SEPARATOR}{m}\n"))
        .collect();
        let steps = prefixes(&mbox);
        assert_eq!(steps.len(), 3);
        assert_eq!(steps[2], mbox);
        for (k, step) in steps.iter().enumerate() {
            let series = parse(step).unwrap();
            let subjects: Vec<&str> = series.patch_subjects().collect();
            assert_eq!(subjects.len(), k + 1, "{step}");
            assert!(subjects[k].starts_with(&format!("[PATCH {}/3]", k + 1)));
        }
        assert!(!steps[1].contains("cover"));
        assert!(steps[1].starts_with(&steps[0]));
        // The same series gives the same texts: the runner's cache keys.
        assert_eq!(prefixes(&mbox), steps);
    }
}
