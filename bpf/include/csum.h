/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * Internet checksum helpers (RFC 1071). Sums are accumulated in 32 bits and folded at the end.
 * A byte at an even offset from the start of the summed region is the high half of a 16-bit
 * word; a byte at an odd offset the low half. A block summed as if at an even offset and placed
 * at an odd one contributes its folded sum byte-swapped.
 */
#ifndef NC_CSUM_H
#define NC_CSUM_H

#include "compiler.h"

/* Adds one byte that sits at position `pos` of the summed region. */
static __always_inline __u32 nc_csum_byte(__u32 sum, __u8 b, __u32 pos)
{
	return sum + ((pos & 1) ? b : ((__u32)b << 8));
}

static __always_inline __u16 nc_csum_fold(__u32 sum)
{
	sum = (sum & 0xffff) + (sum >> 16);
	sum = (sum & 0xffff) + (sum >> 16);
	return (__u16)sum;
}

/* A folded 16-bit sum moved to the other byte parity. */
static __always_inline __u32 nc_csum_swap(__u16 folded)
{
	return (__u32)(((folded & 0xff) << 8) | (folded >> 8));
}

/* Sums `n` 16-bit words in network order (n a compile-time constant). */
static __always_inline __u32 nc_csum_words(const __u16 *p, int n, __u32 sum)
{
#pragma unroll
	for (int i = 0; i < n; i++)
		sum += bpf_ntohs(p[i]);
	return sum;
}

/* The value for a checksum field: the inverted fold; for UDP, 0 is sent as 0xffff (RFC 768). */
static __always_inline __u16 nc_csum_finish_udp(__u32 sum)
{
	__u16 c = ~nc_csum_fold(sum);

	return c ? c : 0xffff;
}

#endif /* NC_CSUM_H */
