// See include/capabilities.h.
#define _GNU_SOURCE
#include "capabilities.h"

#include <dirent.h>
#include <errno.h>
#include <linux/capability.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/capability.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

// What each thread sets (written before the first signal, read in the handlers).
static struct __user_cap_header_struct header = {_LINUX_CAPABILITY_VERSION_3, 0};
static struct __user_cap_data_struct target[2];
static atomic_int answered;
static atomic_int failed;

static int narrow_this_thread(void) {
	struct __user_cap_header_struct h = header; // capset writes the version back
	int rc = (int)syscall(SYS_capset, &h, target);
	if (prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0) != 0 && errno != EINVAL) rc = -1;
	return rc;
}

// Runs in each thread the signal reaches: only system calls, which are async-signal-safe.
static void on_signal(int sig) {
	(void)sig;
	int saved = errno;
	if (narrow_this_thread() != 0) atomic_fetch_add(&failed, 1);
	atomic_fetch_add(&answered, 1);
	errno = saved;
}

uint64_t ncc_permitted(void) {
	struct __user_cap_header_struct h = header;
	struct __user_cap_data_struct d[2];
	if (syscall(SYS_capget, &h, d) != 0) return 0;
	return (uint64_t)d[0].permitted | (uint64_t)d[1].permitted << 32;
}

uint64_t ncc_thread_permitted(int tid) {
	char path[64];
	snprintf(path, sizeof path, "/proc/self/task/%d/status", tid);
	FILE *f = fopen(path, "re");
	if (f == NULL) return UINT64_MAX;
	char line[256];
	uint64_t caps = UINT64_MAX;
	while (fgets(line, sizeof line, f)) {
		if (strncmp(line, "CapPrm:", 7) == 0) {
			caps = strtoull(line + 7, NULL, 16);
			break;
		}
	}
	fclose(f);
	return caps;
}

// The threads of this process, up to `max` of their ids into `tids`: their count.
static int threads(int *tids, int max) {
	DIR *d = opendir("/proc/self/task");
	if (d == NULL) return -1;
	int n = 0;
	struct dirent *e;
	while ((e = readdir(d)) != NULL && n < max) {
		if (e->d_name[0] != '.') tids[n++] = atoi(e->d_name);
	}
	closedir(d);
	return n;
}

static int contains(const int *tids, int n, int tid) {
	for (int i = 0; i < n; i++)
		if (tids[i] == tid) return 1;
	return 0;
}

enum { max_threads = 4096 };

int ncc_keep_only(uint64_t keep) {
	uint64_t held = ncc_permitted();
	uint64_t kept = held & keep;
	memset(target, 0, sizeof target);
	target[0].permitted = target[0].effective = (uint32_t)kept;
	target[1].permitted = target[1].effective = (uint32_t)(kept >> 32);

	// SIGSYS, as libpsx uses it: the threads libdispatch and SwiftNIO start block every signal
	// but the synchronous ones (SIGSYS among them: a seccomp filter's), real-time ones included.
	// The daemon uses no seccomp filter; the handler before is put back after.
	int sig = SIGSYS;
	struct sigaction action = {0}, before;
	action.sa_handler = on_signal;
	action.sa_flags = SA_RESTART;
	sigemptyset(&action.sa_mask);
	if (sigaction(sig, &action, &before) != 0) return -1;
	atomic_store(&answered, 0);
	atomic_store(&failed, 0);

	// This thread first: a thread started from here on inherits the narrowed sets.
	int rc = narrow_this_thread();
	static int signalled[max_threads];
	int sent = 0, self = (int)syscall(SYS_gettid);
	signalled[sent++] = self;
	static int now[max_threads];
	// Until a pass finds no thread it has not signalled (one an unnarrowed thread started while
	// the signals went out is found by the next pass).
	for (int pass = 0; pass < 16 && rc == 0; pass++) {
		int n = threads(now, max_threads), more = 0;
		for (int i = 0; i < n; i++) {
			if (contains(signalled, sent, now[i]) || sent == max_threads) continue;
			if (syscall(SYS_tgkill, getpid(), now[i], sig) == 0) {
				signalled[sent++] = now[i];
				more++;
			}
		}
		if (more == 0) break;
		// Each signalled thread answers from its handler; one that ended meanwhile never does.
		for (int waited = 0; waited < 2000 && atomic_load(&answered) < sent - 1; waited++) {
			struct timespec ms = {0, 1000000};
			nanosleep(&ms, NULL);
		}
	}
	// The handler before is put back only once every thread signalled has run this one: a thread
	// that has not run yet (one of idle priority on a busy host) would otherwise meet SIGSYS's
	// default action, which ends the process. Left installed, it repeats the same narrowing.
	if (atomic_load(&answered) >= sent - 1) sigaction(sig, &before, NULL);
	if (rc != 0 || atomic_load(&failed) != 0) return -1;
	// Read back: every thread's permitted set within `keep`.
	int n = threads(now, max_threads);
	for (int i = 0; i < n; i++) {
		uint64_t p = ncc_thread_permitted(now[i]);
		if (p != UINT64_MAX && (p & ~keep) != 0) return -1;
	}
	return 0;
}

void ncc_name(int cap, char *out, int size) {
	char *name = cap_to_name((cap_value_t)cap);
	snprintf(out, (size_t)size, "%s", name ? name : "?");
	if (name) cap_free(name);
}
