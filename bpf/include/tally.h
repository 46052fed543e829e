/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * What an answer went to (nearcast_abi.h): its question's type, counted with
 * its verdict (stats.h); its zone (the index of the negative answer its name's record names) and,
 * for a geo answer, the node it puts first, counted here once the answer is written, so a reply
 * that was not sent is not counted. A global function of scalars: verified once, apart from the
 * many paths that reach the answer's exit. Each per-CPU counter costs its lookup (about 10 ns on
 * the bench host), so the node's is looked up only for a geo answer.
 */
#ifndef NC_TALLY_H
#define NC_TALLY_H

#include "maps.h"

__attribute__((noinline)) int nc_tally(__u32 zone, __u32 node, __u32 gen)
{
	__u32 block = zone / NC_TALLY_BLOCK;
	struct nc_tally_block *by_zone = bpf_map_lookup_elem(&nc_by_zone, &block);

	if (by_zone)
		by_zone->count[zone % NC_TALLY_BLOCK] += 1;
	if (node < NC_NODES_MAX) {
		__u32 at = (gen & 1) * NC_NODES_MAX + node;
		__u32 key = at / NC_TALLY_BLOCK;
		struct nc_tally_block *by_node = bpf_map_lookup_elem(&nc_by_node, &key);

		if (by_node)
			by_node->count[at % NC_TALLY_BLOCK] += 1;
	}
	return 0;
}

/*
 * The slot of a question's type in struct nc_stats' answered_by_type: the type itself below
 * NC_TYPE_TALLY - 1, else NC_TYPE_TALLY - 1, without a branch (the paths it is on stay as many).
 */
static __always_inline __u32 nc_type_slot(__u16 qtype)
{
	__u32 t = qtype;
	__u32 big = ((t >> 9) + 127) >> 7; /* 1 from 512 up (t >> 9 is at most 127), else 0 */

	return (t & (NC_TYPE_TALLY - 1)) | (big * (NC_TYPE_TALLY - 1));
}

#endif /* NC_TALLY_H */
