/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/* Compiler shims for the BPF side: inlining, branch hints, and the byte-order helpers. */
#ifndef NC_COMPILER_H
#define NC_COMPILER_H

#include <linux/types.h>
#include <bpf/bpf_endian.h>
#include <bpf/bpf_helpers.h>

#ifndef __always_inline
#define __always_inline inline __attribute__((always_inline))
#endif
#define likely(x) __builtin_expect(!!(x), 1)
#define unlikely(x) __builtin_expect(!!(x), 0)

/*
 * A compiler barrier: values stored to memory before it are loaded again after it. Used so the
 * verifier sees a value read back from a map (bounded, not exact) instead of a register copy.
 */
#define nc_barrier() asm volatile("" ::: "memory")

/*
 * Hides what the compiler knows about `x`, so a mask that only the verifier needs (the compiler
 * having proved the value small already) is not optimised away.
 */
#define nc_barrier_var(x) asm volatile("" : "+r"(x))

#endif /* NC_COMPILER_H */
