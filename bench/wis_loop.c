/*
 * The reference for bench/ratio.sh: the same loops as patchperf's open1,
 * dup1 and fstat workloads, written as will-it-scale writes its tests, in a
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
 * usage: wis_loop open1|dup1|fstat SCRATCH_DIR SECONDS WARMUP
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

int main(int argc, char *argv[])
{
	void (*loop)(unsigned long long *, const char *);
	char path[8192];
	int seconds, warmup, gate[2], fd, cpu = 0;
	cpu_set_t allowed;
	char *shared;
	pid_t pid;

	if (argc != 5) {
		fprintf(stderr, "usage: %s open1|dup1|fstat SCRATCH_DIR SECONDS WARMUP\n", argv[0]);
		return 2;
	}
	if (!strcmp(argv[1], "open1"))
		loop = open1;
	else if (!strcmp(argv[1], "dup1"))
		loop = dup1;
	else if (!strcmp(argv[1], "fstat"))
		loop = fstat1;
	else {
		fprintf(stderr, "unknown workload %s\n", argv[1]);
		return 2;
	}
	seconds = atoi(argv[3]);
	warmup = atoi(argv[4]);
	/* The same path shape as patchperf's: SCRATCH/patchperf-bench.XXXXXX/<workload>.0,
	 * so that both walk the same number of components of the same lengths. */
	char dir[4096];
	snprintf(dir, sizeof(dir), "%s/patchperf-bench.XXXXXX", argv[2]);
	if (!mkdtemp(dir))
		die("mkdtemp");
	snprintf(path, sizeof(path), "%s/%s.0", dir, argv[1]);
	fd = open(path, O_RDWR | O_CREAT | O_EXCL, 0600);
	if (fd < 0)
		die(path);
	close(fd);

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
	unlink(path);
	rmdir(dir);
	return 0;
}
