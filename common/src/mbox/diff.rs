//! Whether a message carries a patch: the one rule the server (accepting a
//! series) and the runner (choosing what to apply) share.

/// Whether `body` holds a diff that `git am` or `patch -p1` would apply: a
/// git diff header (`diff --git`, which also covers patches that only change
/// a file's mode or rename it and so have no hunk), or a plain unified diff's
/// `---`, `+++` and `@@` lines in a row.
pub fn has_diff(body: &str) -> bool {
    let mut previous: [&str; 2] = ["", ""];
    for line in body.lines() {
        if line.starts_with("diff --git ")
            || (previous[0].starts_with("--- ")
                && previous[1].starts_with("+++ ")
                && line.starts_with("@@ "))
        {
            return true;
        }
        previous = [previous[1], line];
    }
    false
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn git_and_plain_unified_diffs_count() {
        assert!(has_diff(
            "diff --git a/x b/x\n--- a/x\n+++ b/x\n@@ -1 +1 @@\n-a\n+b\n"
        ));
        assert!(has_diff("words\n--- a/x\n+++ b/x\n@@ -1 +1 @@\n-a\n+b\n"));
    }

    #[test]
    fn mode_only_and_rename_only_git_diffs_count() {
        assert!(has_diff(
            "diff --git a/run.sh b/run.sh\nold mode 100644\nnew mode 100755\n"
        ));
        assert!(has_diff(
            "diff --git a/a.c b/b.c\nsimilarity index 100%\nrename from a.c\nrename to b.c\n"
        ));
    }

    #[test]
    fn words_and_half_diffs_do_not_count() {
        assert!(!has_diff("just words\n-- \n2.39.5\n"));
        assert!(!has_diff("--- a/x\n+++ b/x\nno hunk\n"));
        assert!(!has_diff("--- a/x\nwords\n+++ b/x\n@@ -1 +1 @@\n"));
        assert!(!has_diff(" diff --git a/x b/x\n"));
    }
}
