/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/* Compiler shims for the BPF side: inlining, barriers, aliasing word types, byte order. */
#ifndef NC_COMPILER_H
#define NC_COMPILER_H

#include <linux/types.h>
#include <bpf/bpf_endian.h>
#include <bpf/bpf_helpers.h>

#ifndef __always_inline
#define __always_inline inline __attribute__((always_inline))
#endif

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

/*
 * Word types that may alias anything: packet bytes, byte arrays and header structs are read and
 * written a word at a time through these, which C's aliasing rules allow only for such types
 * (without them the compiler may reorder a word read past a byte write of the same memory).
 */
typedef __u16 __attribute__((__may_alias__)) nc_u16a;
typedef __u32 __attribute__((__may_alias__)) nc_u32a;
typedef __u64 __attribute__((__may_alias__)) nc_u64a;

/* The kernel's tick rate, from its config (/boot/config-*, /proc/config.gz); 0 when libbpf finds none. */
extern unsigned int CONFIG_HZ __kconfig __weak;

#endif /* NC_COMPILER_H */
