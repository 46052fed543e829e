// libbpf for Swift (and statfs, to tell a bpffs). Only BPFKit imports this module (ARCHITECTURE §7).
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <linux/if_link.h>
#include <sys/vfs.h>

// membarrier(2) has no glibc wrapper, and Swift cannot call the variadic syscall(2).
#include <linux/membarrier.h>
#include <sys/syscall.h>
#include <unistd.h>

// MEMBARRIER_CMD_GLOBAL returns after an RCU grace period (synchronize_rcu): every BPF program run
// that had begun (XDP runs inside an RCU read-side section) has ended. 0 or -1 with errno.
static inline int bpfkit_membarrier_global(void)
{
	return (int)syscall(__NR_membarrier, MEMBARRIER_CMD_GLOBAL, 0, 0);
}

// sched_setaffinity(2) for the calling thread, without _GNU_SOURCE: per-CPU maps (a test's
// program runs) are read on the CPU the thread keeps to. `mask` holds 1024 CPUs' bits.
static inline int bpfkit_get_affinity(unsigned long mask[16])
{
	return (int)syscall(__NR_sched_getaffinity, 0, 16 * sizeof(unsigned long), mask) < 0 ? -1 : 0;
}

static inline int bpfkit_set_affinity(const unsigned long mask[16])
{
	return (int)syscall(__NR_sched_setaffinity, 0, 16 * sizeof(unsigned long), mask);
}

// bpf_object__open_file with a Kconfig for `__kconfig` externs (NULL: libbpf's own search of
// /boot/config-RELEASE and /proc/config.gz). LIBBPF_OPTS is a macro Swift cannot expand.
static inline struct bpf_object *bpfkit_open_file(const char *path, const char *kconfig)
{
	LIBBPF_OPTS(bpf_object_open_opts, opts, .kconfig = kconfig);
	return bpf_object__open_file(path, &opts);
}
