/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * Whose query it is: XDP answers only queries to the addresses the daemon listens on (nc_local,
 * and the first few of each family in nc_config; nearcast_abi.h). A host may have other addresses
 * on the interface, with another DNS server behind them, or forward traffic for others: those
 * queries are not ours.
 */
#ifndef NC_LOCAL_H
#define NC_LOCAL_H

#include "compiler.h"
#include "nearcast_abi.h"

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, NC_LOCAL_MAX);
	__type(key, struct nc_local_key);
	__type(value, __u8);
} nc_local SEC(".maps");

/* Whether `key` (the destination of the query, its family set) is one of the daemon's addresses. */
static __always_inline int nc_addressed_to_us(const struct nc_config *cfg, const struct nc_local_key *key)
{
	if (key->family == 4) {
		__u32 n = cfg->local4_count;

		if (n <= NC_LOCAL_INLINE) {
			__be32 a;

			__builtin_memcpy(&a, key->addr, 4);
			for (__u32 i = 0; i < NC_LOCAL_INLINE; i++)
				if (i < n && cfg->local4[i] == a)
					return 1;
			return 0;
		}
	} else {
		__u32 n = cfg->local6_count;

		if (n <= NC_LOCAL_INLINE) {
			__u64 a[2];

			__builtin_memcpy(a, key->addr, 16);
			for (__u32 i = 0; i < NC_LOCAL_INLINE; i++)
				if (i < n && cfg->local6[i][0] == a[0] && cfg->local6[i][1] == a[1])
					return 1;
			return 0;
		}
	}
	return bpf_map_lookup_elem(&nc_local, key) != NULL;
}

#endif /* NC_LOCAL_H */
