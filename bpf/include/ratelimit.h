/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * The pass budget: how many DNS queries per second each CPU may hand to the slow path. Socket
 * servers answer almost nothing when flooded (the kernel's receive work starves the process), so
 * XDP keeps the flood away from the slow path. A per-CPU token bucket, refilled from the clock;
 * above it a query gets a minimal TC=1 reply (real resolvers retry over TCP, which the flood
 * cannot follow cheaply) or is dropped, as configured. Hot names XDP answers are not limited.
 */
#ifndef NC_RATELIMIT_H
#define NC_RATELIMIT_H

#include "maps.h"
#include "stats.h"

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct nc_bucket);
} nc_bucket SEC(".maps");

/* Takes one token; returns 1 when the query may pass, 0 when it is over budget. */
static __always_inline int nc_take_token(const struct nc_config *cfg)
{
	__u32 rate = cfg->pass_rate;

	if (rate == 0)
		return 1;
	__u32 zero = 0;
	struct nc_bucket *b = bpf_map_lookup_elem(&nc_bucket, &zero);

	if (!b)
		return 1;
	__u64 now = bpf_ktime_get_ns();
	__u64 elapsed = now - b->last_ns;
	__u64 cap = (__u64)(cfg->pass_burst ? cfg->pass_burst : 1) * NC_TOKEN;

	/* A second of refill fills any bucket no larger than the rate; it also keeps the product small. */
	if (elapsed > NC_TOKEN)
		elapsed = NC_TOKEN;
	b->last_ns = now;
	b->tokens += elapsed * rate;
	if (b->tokens > cap)
		b->tokens = cap;
	if (b->tokens < NC_TOKEN)
		return 0;
	b->tokens -= NC_TOKEN;
	return 1;
}

/* The reply above budget: QR and TC set, no records; RD comes from the query, our OPT too. */
static const struct nc_answer nc_tc_reply = { .flags = 0x8200 };

/*
 * What to do with a DNS query XDP does not answer (for `reason`): XDP_PASS to the slow path when
 * the budget allows (and NULL); above it, the TC=1 reply to write instead, for a plain query
 * whose question was read (`question_read`) when so configured; else NULL and XDP_DROP. The
 * verdict is counted here unless a reply is to be written.
 */
static __always_inline const struct nc_answer *nc_over_budget(const struct nc_config *cfg, enum nc_reason reason,
							      int question_read, int *verdict)
{
	if (nc_take_token(cfg)) {
		*verdict = nc_exit(reason, XDP_PASS);
		return NULL;
	}
	if (question_read && cfg->over_budget == NC_OVER_BUDGET_TRUNCATE)
		return &nc_tc_reply;
	*verdict = nc_exit(NC_LIMIT_DROPPED, XDP_DROP);
	return NULL;
}

#endif /* NC_RATELIMIT_H */
