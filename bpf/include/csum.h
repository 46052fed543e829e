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

/*
 * Sums `n` 32-bit words as the machine loads them (n a compile-time constant), into a 64-bit
 * accumulator: half the loads of 16-bit words and no byte swaps. The result is a sum in the
 * machine's byte order, which nc_csum_native_to_net turns into a network-order one.
 */
static __always_inline __u64 nc_csum_native(const void *p, int n, __u64 sum)
{
	const nc_u32a *w = p;

#pragma unroll
	for (int i = 0; i < n; i++)
		sum += w[i];
	return sum;
}

/* A 64-bit native sum folded to 16 bits, still in the machine's byte order. */
static __always_inline __u16 nc_csum_fold_native(__u64 sum)
{
	sum = (sum & 0xffffffff) + (sum >> 32);
	sum = (sum & 0xffffffff) + (sum >> 32);
	return nc_csum_fold((__u32)sum);
}

/* A native sum as a network-order folded sum: byte order only swaps the result (RFC 1071 §2(B)). */
static __always_inline __u32 nc_csum_native_to_net(__u64 sum)
{
#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
	return nc_csum_swap(nc_csum_fold_native(sum));
#else
	return nc_csum_fold_native(sum);
#endif
}

/* The value for a checksum field: the inverted fold; for UDP, 0 is sent as 0xffff (RFC 768). */
static __always_inline __u16 nc_csum_finish_udp(__u32 sum)
{
	__u16 c = ~nc_csum_fold(sum);

	return c ? c : 0xffff;
}

#endif /* NC_CSUM_H */
