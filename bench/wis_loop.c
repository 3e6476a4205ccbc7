/*
 * The reference for bench/ratio.sh: the same loops as patchperf's
 * workloads, written as will-it-scale writes its tests, in a
 * harness with the same semantics as patchperf's (one forked task pinned to
 * the first allowed CPU, its counter in its own 128-byte line of a shared
 * anonymous mapping, released through a pipe, sampled once a second against
 * absolute deadlines, warm-up seconds dropped, its file at the same depth).
 *
 * Built two ways: plain, the loops call glibc's open()/close()/dup() as
 * will-it-scale's tests do (and syscall(SYS_fstat), since glibc's fstat()
 * issues newfstatat): the reference patchperf is compared with; with
 * -DRAW_SYSCALLS they issue the `syscall` instruction inline, which shows
 * what entering and leaving the kernel from libc costs on the machine.
 *
 * The fs/ testcases (poll1 … getppid1) call glibc as will-it-scale's do
 * in both builds; only open1, dup1 and fstat have a raw form.
 *
 * usage: wis_loop WORKLOAD SCRATCH_DIR SECONDS WARMUP
 * prints will-it-scale's "min: max: total:" lines, then "average:<ops/s>".
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/eventfd.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define LINE 128

static void die(const char *what)
{
	perror(what);
	exit(1);
}

#if defined(RAW_SYSCALLS) && defined(__x86_64__)
static inline long raw4(long nr, long a1, long a2, long a3, long a4)
{
	long ret;
	register long r10 __asm__("r10") = a4;

	__asm__ volatile("syscall"
			 : "=a"(ret)
			 : "a"(nr), "D"(a1), "S"(a2), "d"(a3), "r"(r10)
			 : "rcx", "r11", "memory");
	return ret < 0 && ret > -4096 ? -1 : ret;
}
#define OPEN(path, flags) raw4(SYS_openat, AT_FDCWD, (long)(path), (flags), 0)
#define CLOSE(fd) raw4(SYS_close, (fd), 0, 0, 0)
#define DUP(fd) raw4(SYS_dup, (fd), 0, 0, 0)
#define FSTAT(fd, st) raw4(SYS_fstat, (fd), (long)(st), 0, 0)
#else
#define OPEN(path, flags) open((path), (flags))
#define CLOSE(fd) close(fd)
#define DUP(fd) dup(fd)
#define FSTAT(fd, st) syscall(SYS_fstat, (fd), (st))
#endif

static void open1(unsigned long long *iterations, const char *path)
{
	while (1) {
		int fd = OPEN(path, O_RDWR);
		if (fd < 0)
			die("open");
		CLOSE(fd);
		(*iterations)++;
	}
}

static void dup1(unsigned long long *iterations, const char *path)
{
	int fd = open(path, O_RDWR);
	if (fd < 0)
		die("open");
	while (1) {
		int fd2 = DUP(fd);
		if (fd2 < 0)
			die("dup");
		CLOSE(fd2);
		(*iterations)++;
	}
}

/* glibc's fstat() would issue newfstatat(fd, "", AT_EMPTY_PATH). */
static void fstat1(unsigned long long *iterations, const char *path)
{
	struct stat st;
	int fd = open(path, O_RDWR);
	if (fd < 0)
		die("open");
	while (1) {
		if (FSTAT(fd, &st) < 0)
			die("fstat");
		(*iterations)++;
	}
}


static int open_rw(const char *path)
{
	int fd = open(path, O_RDWR);
	if (fd < 0)
		die(path);
	return fd;
}

#define BLOCK 4096
#define FILE_BYTES (1 << 20)

static void poll_n(unsigned long long *iterations, const char *path, int n)
{
	int fds[128];
	for (int i = 0; i < n; i++)
		fds[i] = open_rw(path);
	while (1) {
		struct pollfd pfd[128];
		memset(pfd, 0, n * sizeof(pfd[0]));
		for (int i = 0; i < n; i++) {
			pfd[i].fd = fds[i];
			pfd[i].events = POLLOUT;
		}
		if (poll(pfd, n, 0) < 0)
			die("poll");
		(*iterations)++;
	}
}

static void poll1(unsigned long long *it, const char *path) { poll_n(it, path, 1); }
static void poll2(unsigned long long *it, const char *path) { poll_n(it, path, 128); }

static void pipe1(unsigned long long *iterations, const char *path)
{
	int fd[2];
	(void)path;
	if (pipe(fd))
		die("pipe");
	while (1) {
		char c = 0;
		if (write(fd[1], &c, 1) != 1 || read(fd[0], &c, 1) != 1)
			die("pipe1");
		(*iterations)++;
	}
}

static void read_loop(unsigned long long *iterations, const char *path)
{
	char buf[BLOCK];
	int fd = open_rw(path);
	while (1) {
		ssize_t n = read(fd, buf, BLOCK);
		if (n < 0)
			die("read");
		if (n == 0)
			lseek(fd, 0, SEEK_SET);
		(*iterations)++;
	}
}

static void write1(unsigned long long *iterations, const char *path)
{
	char buf[BLOCK];
	unsigned long size = 0;
	int fd = open_rw(path);
	memset(buf, 0, sizeof(buf));
	while (1) {
		ssize_t n = write(fd, buf, BLOCK);
		if (n < 0)
			die("write");
		size += n;
		if (size >= FILE_BYTES) {
			size = 0;
			lseek(fd, 0, SEEK_SET);
		}
		(*iterations)++;
	}
}

static void pread1(unsigned long long *iterations, const char *path)
{
	char buf[BLOCK];
	int fd = open_rw(path);
	while (1) {
		if (pread(fd, buf, BLOCK, 0) != BLOCK)
			die("pread");
		(*iterations)++;
	}
}

static void pwrite1(unsigned long long *iterations, const char *path)
{
	char buf[BLOCK];
	int fd = open_rw(path);
	memset(buf, 0, sizeof(buf));
	while (1) {
		if (pwrite(fd, buf, BLOCK, 0) != BLOCK)
			die("pwrite");
		(*iterations)++;
	}
}

static void lseek_loop(unsigned long long *iterations, const char *path)
{
	int fd = open_rw(path);
	while (1) {
		lseek(fd, 0, SEEK_SET);
		(*iterations)++;
	}
}

static void unlink_loop(unsigned long long *iterations, const char *path)
{
	while (1) {
		int fd = open(path, O_RDWR | O_CREAT, 0600);
		if (fd < 0)
			die("open");
		close(fd);
		unlink(path);
		(*iterations)++;
	}
}

static void lock_loop(unsigned long long *iterations, const char *path)
{
	int fd = open_rw(path);
	while (1) {
		struct flock lck = { .l_type = F_WRLCK, .l_whence = SEEK_SET, .l_start = 0, .l_len = 1 };
		if (fcntl(fd, F_SETLKW, &lck))
			die("lock");
		lck.l_type = F_UNLCK;
		if (fcntl(fd, F_SETLKW, &lck))
			die("unlock");
		(*iterations) += 2;
	}
}

static void eventfd1(unsigned long long *iterations, const char *path)
{
	unsigned long long w = 1, r;
	int fd = eventfd(0, 0);
	(void)path;
	if (fd < 0)
		die("eventfd");
	while (1) {
		if (write(fd, &w, sizeof(w)) != sizeof(w) || read(fd, &r, sizeof(r)) != sizeof(r))
			die("eventfd1");
		(*iterations)++;
	}
}

static void getppid1(unsigned long long *iterations, const char *path)
{
	(void)path;
	while (1) {
		getppid();
		(*iterations)++;
	}
}

/* Each workload, its loop, and the task's file as patchperf's set-up
 * leaves it: its name under the bench directory, its size, and whether
 * the loop makes it itself (unlink*) or needs none (pipe1, eventfd1,
 * getppid1). */
static const struct {
	const char *name;
	void (*loop)(unsigned long long *, const char *);
	const char *file;
	long bytes;
} table[] = {
	{ "open1", open1, "open1.0", 0 },
	{ "dup1", dup1, "dup1.0", 0 },
	{ "fstat", fstat1, "fstat.0", 0 },
	{ "poll1", poll1, "poll1.0", 0 },
	{ "poll2", poll2, "poll2.0", 0 },
	{ "pipe1", pipe1, NULL, 0 },
	{ "read1", read_loop, "read1.0", FILE_BYTES },
	{ "read2", read_loop, "read2.shared", FILE_BYTES },
	{ "write1", write1, "write1.0", 0 },
	{ "pread1", pread1, "pread1.0", BLOCK },
	{ "pwrite1", pwrite1, "pwrite1.0", 0 },
	{ "lseek1", lseek_loop, "lseek1.0", BLOCK },
	{ "lseek2", lseek_loop, "lseek2.shared", BLOCK },
	{ "unlink1", unlink_loop, "unlink1.0", -1 },
	{ "unlink2", unlink_loop, "unlink2.0/file", -1 },
	{ "lock1", lock_loop, "lock1.0", 0 },
	{ "lock2", lock_loop, "lock2.shared", 0 },
	{ "eventfd1", eventfd1, NULL, 0 },
	{ "getppid1", getppid1, NULL, 0 },
};

int main(int argc, char *argv[])
{
	void (*loop)(unsigned long long *, const char *);
	char path[8192];
	int seconds, warmup, gate[2], fd, cpu = 0;
	cpu_set_t allowed;
	char *shared;
	pid_t pid;

	int w = -1;
	if (argc != 5) {
		fprintf(stderr, "usage: %s WORKLOAD SCRATCH_DIR SECONDS WARMUP\n", argv[0]);
		return 2;
	}
	for (unsigned i = 0; i < sizeof(table) / sizeof(table[0]); i++)
		if (!strcmp(argv[1], table[i].name))
			w = i;
	if (w < 0) {
		fprintf(stderr, "unknown workload %s\n", argv[1]);
		return 2;
	}
	loop = table[w].loop;
	seconds = atoi(argv[3]);
	warmup = atoi(argv[4]);
	/* The same path shape as patchperf's: SCRATCH/patchperf-bench.XXXXXX/<workload>.0,
	 * so that both walk the same number of components of the same lengths. */
	char dir[4096], subdir[8192] = "";
	snprintf(dir, sizeof(dir), "%s/patchperf-bench.XXXXXX", argv[2]);
	if (!mkdtemp(dir))
		die("mkdtemp");
	snprintf(path, sizeof(path), "%s/%s", dir, table[w].file ? table[w].file : "none");
	if (table[w].file && strchr(table[w].file, '/')) {
		snprintf(subdir, sizeof(subdir), "%s", path);
		*strrchr(subdir, '/') = 0;
		if (mkdir(subdir, 0700))
			die(subdir);
	}
	if (table[w].file && table[w].bytes >= 0) {
		fd = open(path, O_RDWR | O_CREAT | O_EXCL, 0600);
		if (fd < 0)
			die(path);
		for (long left = table[w].bytes; left > 0;) {
			static const char zeros[BLOCK];
			ssize_t n = write(fd, zeros, left < BLOCK ? left : BLOCK);
			if (n <= 0)
				die("filling");
			left -= n;
		}
		close(fd);
	}

	/* Line 0 for flags, line 1 for the task: as patchperf lays it out. */
	shared = mmap(NULL, 2 * LINE, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (shared == MAP_FAILED)
		die("mmap");
	volatile unsigned long long *counter = (unsigned long long *)(shared + LINE);
	volatile int *ready = (int *)(shared + LINE + 8);

	if (sched_getaffinity(0, sizeof(allowed), &allowed))
		die("sched_getaffinity");
	while (!CPU_ISSET(cpu, &allowed))
		cpu++;
	if (pipe(gate))
		die("pipe");

	pid = fork();
	if (pid < 0)
		die("fork");
	if (pid == 0) {
		cpu_set_t one;
		struct pollfd pfd = { gate[0], POLLIN, 0 };

		prctl(PR_SET_PDEATHSIG, SIGKILL);
		CPU_ZERO(&one);
		CPU_SET(cpu, &one);
		sched_setaffinity(0, sizeof(one), &one);
		*ready = 1;
		poll(&pfd, 1, -1);
		loop((unsigned long long *)counter, path);
	}

	while (!*ready)
		usleep(1000);
	if (write(gate[1], "x", 1) != 1)
		die("write");

	struct timespec next;
	unsigned long long prev = *counter, total = 0;
	clock_gettime(CLOCK_MONOTONIC, &next);
	for (int s = 0; s < warmup + seconds; s++) {
		next.tv_sec++;
		while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &next, NULL))
			;
		unsigned long long now = *counter, diff = now - prev;
		prev = now;
		if (s == 0 && warmup)
			printf("warmup\n");
		if (s == warmup)
			printf("measurement\n");
		printf("min:%llu max:%llu total:%llu\n", diff, diff, diff);
		if (s >= warmup)
			total += diff;
	}
	printf("average:%llu\n", total / seconds);
	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
	if (table[w].file)
		unlink(path);
	if (*subdir)
		rmdir(subdir);
	rmdir(dir);
	return 0;
}
