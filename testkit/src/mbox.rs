//! Sample patch series as `git format-patch` writes them.

/// A two-patch series as `git format-patch --stdout` writes it.
pub const TWO_PATCHES: &str = "\
From 3a5d1c1e2f0b4e8c9d7a6b5c4d3e2f1a0b9c8d7e Mon Sep 17 00:00:00 2001
From: Kernel Hacker <hacker@example.org>
Date: Mon, 1 Jan 2024 00:00:00 +0000
Subject: [PATCH 1/2] fs: skip a lookup in open
Message-ID: <20240101000000.1-hacker@example.org>

Body.
---
 fs/open.c | 2 +-
 1 file changed, 1 insertion(+), 1 deletion(-)

diff --git a/fs/open.c b/fs/open.c
--- a/fs/open.c
+++ b/fs/open.c
@@ -1,1 +1,1 @@
-old
+new
-- 
2.39.2

From 4b6e2d2f3a1c5f9d0e8b7c6d5e4f3a2b1c0d9e8f Mon Sep 17 00:00:00 2001
From: Kernel Hacker <hacker@example.org>
Subject: [PATCH 2/2] fs: and another
Message-ID: <20240101000000.2-hacker@example.org>

diff --git a/fs/stat.c b/fs/stat.c
--- a/fs/stat.c
+++ b/fs/stat.c
@@ -1,1 +1,1 @@
-old
+new
";

/// Patch `n` of `total` of a series whose patches each touch their own
/// file (`fs/f{n}.c`), subject `[PATCH n/total] fs: step n`, Message-ID
/// `<{tag}-{n}@example.org>`: a series to measure patch by patch.
pub fn step_patch(tag: &str, n: u32, total: u32) -> String {
    let sha = n.to_string().repeat(40);
    let sha = &sha[..40];
    format!(
        "From {sha} Mon Sep 17 00:00:00 2001\n\
         From: Kernel Hacker <kh@example.org>\n\
         Subject: [PATCH {n}/{total}] fs: step {n}\n\
         Message-ID: <{tag}-{n}@example.org>\n\
         \n\
         ---\n\
         diff --git a/fs/f{n}.c b/fs/f{n}.c\n\
         --- a/fs/f{n}.c\n\
         +++ b/fs/f{n}.c\n\
         @@ -1,1 +1,1 @@\n\
         -old\n\
         +new\n\
         \n"
    )
}

/// A one-patch series as `git format-patch` writes it.
pub fn one_patch(subject: &str) -> String {
    format!(
        "From 1111111111111111111111111111111111111111 Mon Sep 17 00:00:00 2001\n\
         From: Kernel Hacker <kh@example.org>\n\
         Date: Mon, 5 Jan 2026 10:00:00 +0000\n\
         Subject: {subject}\n\
         Message-ID: <20260105100000.1-kh@example.org>\n\
         \n\
         Make dup faster.\n\
         \n\
         Signed-off-by: Kernel Hacker <kh@example.org>\n\
         ---\n \
         fs/file.c | 2 +-\n\
         \n\
         diff --git a/fs/file.c b/fs/file.c\n\
         --- a/fs/file.c\n\
         +++ b/fs/file.c\n\
         @@ -1,1 +1,1 @@\n\
         -old\n\
         +new\n\
         -- \n\
         2.39.5\n"
    )
}

/// `chmod +x fs/open.c` as `git format-patch` writes it: a git diff with
/// no hunk, which is a patch all the same.
pub const MODE_ONLY: &str = "\
From 3333333333333333333333333333333333333333 Mon Sep 17 00:00:00 2001
From: A Developer <dev@example.org>
Subject: [PATCH] fs: make open.c executable

---
 fs/open.c | 0
 1 file changed, 0 insertions(+), 0 deletions(-)
 mode change 100644 => 100755 fs/open.c

diff --git a/fs/open.c b/fs/open.c
old mode 100644
new mode 100755
-- 
2.39.5
";
