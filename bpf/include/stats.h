/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/* The single exit of the program: every verdict is counted with its reason. */
#ifndef NC_STATS_H
#define NC_STATS_H

#include "maps.h"

/* Counts a verdict; the counters, for more to be counted in them. */
static __always_inline struct nc_stats *nc_count(enum nc_reason reason)
{
	__u32 zero = 0;
	struct nc_stats *stats = bpf_map_lookup_elem(&nc_stats, &zero);

	/* The counters are laid out in reason order (asserted in abi.c). */
	if (stats && reason < NC_REASON_MAX)
		((nc_u64a *)stats)[reason] += 1;
	return stats;
}

static __always_inline int nc_exit(enum nc_reason reason, int action)
{
	nc_count(reason);
	return action;
}

/*
 * The exit of a reply sent (XDP_TX): its verdict, and, when `answer` (1; 0 for a TC=1 reply),
 * its question's type at `type_slot` (tally.h) in the same per-CPU value: no second lookup.
 */
static __always_inline int nc_exit_sent(enum nc_reason reason, __u32 answer, __u32 type_slot)
{
	struct nc_stats *stats = nc_count(reason);

	if (stats)
		stats->answered_by_type[type_slot & (NC_TYPE_TALLY - 1)] += answer;
	return XDP_TX;
}

#endif /* NC_STATS_H */
