// The daemon's Linux capabilities, narrowed in every thread (capabilities(7)). Capabilities are a
// property of each thread, not of the process: capset(2), and libcap's cap_set_proc over it,
// change the calling thread's alone, so a daemon that drops them after its start, when its event
// loops, listeners and libraries' threads already run, has each thread drop its own. glibc does
// the same for setuid(2) (its setxid signal); libcap's libpsx does it only for the threads whose
// creation it wraps at link time, which misses those the shared libraries start. Only nearcastd
// imports this.
#ifndef NEARCAST_CAPABILITIES_H
#define NEARCAST_CAPABILITIES_H

#include <stdint.h>

// The permitted set of the calling thread, one bit per capability (bit 39: CAP_BPF).
uint64_t ncc_permitted(void);

// Every thread of the process keeps, of its permitted and effective capabilities, those in
// `keep`, and drops the rest, its inheritable and its ambient ones, for good. Returns 0 once
// every thread's permitted set is within `keep` (read back from /proc/self/task), or -1.
int ncc_keep_only(uint64_t keep);

// The permitted set of thread `tid` of this process as /proc says it, or UINT64_MAX if unread.
uint64_t ncc_thread_permitted(int tid);

// The name of capability `cap` as capabilities(7) writes it, lower case ("cap_bpf"), into
// `out`; a number for one libcap does not know.
void ncc_name(int cap, char *out, int size);

#endif
