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

/// Most patches a per-patch comparison measures one by one. Kernel series
/// run to a few dozen patches, the longest to a couple of hundred; every
/// patch is a step with its own boots.
pub const MAX_STEPS: usize = 200;

/// Most bytes the steps' series may hold together. Step k stores patches
/// 1..k, so the steps of a series grow with its square: 16 MiB of mbox in
/// 5,000 small patches would ask for 40 GB.
pub const MAX_STEPS_BYTES: usize = 256 << 20;

/// The patches of `mbox` (messages with a diff), as split.
fn patches(mbox: &str) -> Vec<&str> {
    split(mbox)
        .into_iter()
        .enumerate()
        .filter(|(index, text)| Message::read(text, *index).is_ok_and(|m| m.has_diff))
        .map(|(_, text)| text)
        .collect()
}

/// One mbox per patch of `mbox` (messages with a diff; cover letters and
/// replies are left out): the k-th holds patches 1..k, each after a
/// [`SEPARATOR`]. The last is `mbox` itself, so the last step's patched
/// kernel is the whole series' kernel. A message whose headers cannot be
/// read counts as no patch (a submission was [`super::parse`]d first).
pub fn prefixes(mbox: &str) -> Vec<String> {
    let patches = patches(mbox);
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

/// The k-th of [`prefixes`] (patches 1..k, k from 1) without writing the
/// others: what one bisection probe boots.
pub fn prefix(mbox: &str, k: usize) -> Option<String> {
    let patches = patches(mbox);
    if k == 0 || k > patches.len() {
        return None;
    }
    if k == patches.len() {
        return Some(mbox.to_string());
    }
    let mut text = String::new();
    for patch in &patches[..k] {
        text.push_str(SEPARATOR);
        text.push_str(patch);
    }
    Some(text)
}

/// How many patches `mbox` has: its number of [`prefixes`].
pub fn count(mbox: &str) -> usize {
    patches(mbox).len()
}

/// Why measuring `mbox` patch by patch would be too large ([`MAX_STEPS`],
/// [`MAX_STEPS_BYTES`]), if it would; counted without writing the
/// prefixes.
pub fn too_large(mbox: &str) -> Option<String> {
    let patches = patches(mbox);
    let steps = patches.len();
    if steps > MAX_STEPS {
        return Some(format!(
            "a series is measured patch by patch up to {MAX_STEPS} patches; this one has \
             {steps}: split it, or bisect it to find the one that moved a metric"
        ));
    }
    // Patch i (from 0) is in the prefixes of steps i+1..=N.
    let bytes: usize = patches
        .iter()
        .enumerate()
        .map(|(i, p)| (SEPARATOR.len() + p.len()).saturating_mul(steps - i))
        .fold(0, usize::saturating_add);
    (bytes > MAX_STEPS_BYTES).then(|| {
        format!(
            "measured patch by patch, this series' steps would store {} MiB of patches \
             (patches 1..k for each of its {steps} steps), more than {} MiB: split it",
            bytes >> 20,
            MAX_STEPS_BYTES >> 20
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::mbox::parse;

    #[test]
    fn a_series_too_long_or_too_large_to_measure_patch_by_patch_is_named() {
        let series = |n: u32, body: usize| -> String {
            (1..=n)
                .map(|k| {
                    let mut p = patch(k, &format!("f{k}"));
                    p.push_str(&"+x\n".repeat(body));
                    format!("{SEPARATOR}{p}\n")
                })
                .collect()
        };
        assert_eq!(too_large(&series(3, 0)), None);
        let steps = u32::try_from(MAX_STEPS).unwrap();
        assert_eq!(too_large(&series(steps, 0)), None);
        let long = too_large(&series(steps + 1, 0)).unwrap();
        assert!(
            long.contains(&format!("this one has {}", steps + 1)),
            "{long}"
        );
        // 100 patches of ~100 kB: 10 MB of mbox, ~500 MB of steps.
        let large = too_large(&series(100, 33_000)).unwrap();
        assert!(
            large.contains("MiB of patches") && large.contains("100 steps"),
            "{large}"
        );
        // What it counts is what `prefixes` writes.
        let text = series(7, 10);
        let written: usize = prefixes(&text).iter().map(String::len).sum();
        assert!(written <= MAX_STEPS_BYTES && too_large(&text).is_none());
    }

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
        // One probe's prefix is the step's, byte for byte.
        assert_eq!(count(&mbox), 3);
        for (k, step) in steps.iter().enumerate() {
            assert_eq!(prefix(&mbox, k + 1).as_ref(), Some(step));
        }
        assert_eq!(prefix(&mbox, 0), None);
        assert_eq!(prefix(&mbox, 4), None);
    }
}
