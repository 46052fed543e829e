/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/* The single exit of the program: every verdict is counted with its reason. */
#ifndef NC_STATS_H
#define NC_STATS_H

#include "maps.h"

static __always_inline int nc_exit(enum nc_reason reason, int action)
{
	__u32 zero = 0;
	struct nc_stats *stats = bpf_map_lookup_elem(&nc_stats, &zero);

	/* The counters are laid out in reason order (asserted in abi.c). */
	if (stats && reason < NC_REASON_MAX)
		((nc_u64a *)stats)[reason] += 1;
	return action;
}

#endif /* NC_STATS_H */
