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
#include "reply.h"
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

/* The reply above budget: QR and TC set, no records; RD and CD come from the query, our OPT too. */
static const struct nc_answer nc_tc_reply = { .flags = 0x8200 };

/*
 * Hands a DNS query to the slow path when the budget allows; otherwise answers it TC=1 (only a
 * plain query whose question was read: `question_read`) or drops it. Counted either way.
 */
static __always_inline int nc_pass_up(struct xdp_md *ctx, const struct nc_packet *pkt,
				      struct nc_query *q, const struct nc_config *cfg,
				      enum nc_reason reason, int question_read)
{
	if (nc_take_token(cfg))
		return nc_exit(reason, XDP_PASS);
	if (question_read && cfg->over_budget == NC_OVER_BUDGET_TRUNCATE) {
		enum nc_reason r = nc_write_reply(ctx, pkt, q, &nc_tc_reply, cfg);

		if (r == NC_ANSWERED)
			return nc_exit(NC_LIMIT_TRUNCATED, XDP_TX);
		if (r == NC_DROP_INTERNAL)
			return nc_exit(r, XDP_DROP);
	}
	return nc_exit(NC_LIMIT_DROPPED, XDP_DROP);
}

#endif /* NC_RATELIMIT_H */
