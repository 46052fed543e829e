/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * Response rate limiting of XDP's answers (nearcast_abi.h, struct nc_rrl_config and struct
 * nc_rrl_slot): per client prefix and class, a bucket in a direct-mapped slot shared by every CPU,
 * stepped by compare-and-swap, no lock. Over the limit every slip-th answer becomes the minimal
 * TC=1 reply (the one above the pass budget, ratelimit.h: a real resolver behind the prefix retries
 * over TCP) and the others are dropped. The slow path's ResponseRateLimiter does the same for its
 * replies.
 */
#ifndef NC_RRL_H
#define NC_RRL_H

#include <linux/ip.h>
#include <linux/ipv6.h>

#include "dns.h"
#include "scratch.h"
#include "maps.h"

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, NC_RRL_ENTRIES);
	__type(key, __u32);
	__type(value, struct nc_rrl_slot);
} nc_rrl SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct nc_rrl_config);
} nc_rrl_cfg SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_LPM_TRIE);
	__uint(max_entries, NC_RRL_EXEMPT_MAX);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__uint(key_size, sizeof(struct nc_rrl_exempt_key));
	__uint(value_size, sizeof(__u32));
} nc_rrl_exempt SEC(".maps");

enum nc_rrl_verdict { NC_RRL_SEND, NC_RRL_SLIP, NC_RRL_DROP };


/* The top `bits` of a 64-bit word in network order, as a mask of the word loaded from memory. */
static __always_inline __u64 nc_rrl_mask64(__u32 bits)
{
	if (bits >= 64)
		return ~0ULL;
	if (bits == 0)
		return 0;
	return bpf_cpu_to_be64(~0ULL << (64 - bits));
}

/* MurmurHash3's finaliser: every bit of the key reaches every bit of the slot and the tag. */
static __always_inline __u64 nc_rrl_mix(__u64 h)
{
	h ^= h >> 33;
	h *= NC_HASH_FMIX1;
	h ^= h >> 33;
	h *= NC_HASH_FMIX2;
	return h ^ (h >> 33);
}

/*
 * Whether answers of this kind (`nxdomain` or not) are limited at all: checked inline before the
 * call of nc_rrl_decide, which costs a call and a return (the return some 15 ns on a host with the
 * SRSO mitigation) on every answer otherwise.
 */
static __always_inline int nc_rrl_on(__u32 nxdomain)
{
	__u32 zero = 0;
	struct nc_rrl_config *c = bpf_map_lookup_elem(&nc_rrl_cfg, &zero);

	return c && (nxdomain ? c->nxdomain_rate : c->rate);
}

/*
 * What to do with the answer of class `question` (the question's hash; an NXDOMAIN's zone, with
 * `nxdomain` set, which takes that rate) for the client whose address is `w0`, `w1` (as loaded
 * from the packet: IPv4 in the low 4 bytes of w0) of `family` (4 or 6): an enum nc_rrl_verdict.
 * A global function: the verifier checks it once, apart from the many paths that lead to it.
 */
__attribute__((noinline)) int nc_rrl_decide(__u64 w0, __u64 w1, __u32 family, __u64 question, __u32 nxdomain)
{
	__u32 zero = 0;
	struct nc_rrl_config *c = bpf_map_lookup_elem(&nc_rrl_cfg, &zero);

	if (!c)
		return NC_RRL_SEND;
	__u32 rate = nxdomain ? c->nxdomain_rate : c->rate;

	if (!rate)
		return NC_RRL_SEND;
	__u64 p0, p1;

	if (family == 6) {
		__u32 bits = c->v6_prefix;

		p0 = w0 & nc_rrl_mask64(bits);
		p1 = w1 & nc_rrl_mask64(bits > 64 ? bits - 64 : 0);
	} else {
		__u32 bits = c->v4_prefix;

		p0 = (__u32)w0 & (bits >= 32 ? ~0U : bits == 0 ? 0 : bpf_htonl(~0U << (32 - bits)));
		p1 = 0;
	}
	if (c->exempt) {
		struct nc_rrl_exempt_key e = { .prefixlen = 128 };

		if (family == 6) {
			__builtin_memcpy(e.addr, &w0, 8);
			__builtin_memcpy(&e.addr[8], &w1, 8);
		} else {
			__u32 a = (__u32)w0;

			e.addr[10] = 0xff;
			e.addr[11] = 0xff;
			__builtin_memcpy(&e.addr[12], &a, 4);
		}
		if (bpf_map_lookup_elem(&nc_rrl_exempt, &e))
			return NC_RRL_SEND;
	}
	/* The bucket's slot and tag: a seeded hash of (prefix, family, class). */
	__u64 h = nc_rrl_mix(c->seed ^ p0 ^ family);

	h = nc_rrl_mix(h ^ p1);
	h = nc_rrl_mix(h ^ question) | 1;
	__u32 at = h & (NC_RRL_ENTRIES - 1);
	struct nc_rrl_slot *b = bpf_map_lookup_elem(&nc_rrl, &at);

	if (!b)
		return NC_RRL_SEND;
	/*
	 * Jiffies for a clock: buckets fill at a second's scale, and on the benchmark's host reading
	 * them cost 10 ns where bpf_ktime_get_coarse_ns cost 35 and bpf_ktime_get_ns 45 (BENCHMARKS.md).
	 * CONFIG_HZ comes from the kernel's config when libbpf finds it; without it, the coarse clock.
	 */
	__u64 now = CONFIG_HZ ? bpf_jiffies64() * (1000000000ULL / CONFIG_HZ) : bpf_ktime_get_coarse_ns();
	__u64 interval = nxdomain ? c->nxdomain_interval_ns : c->interval_ns;

	if (!interval)
		interval = 1;
	if (b->tag != h) { /* another key's, or none yet: this key's now, full less this answer */
		b->tag = h;
		b->tat = now + interval;
		return NC_RRL_SEND;
	}
	/*
	 * Within the rate while the bucket's time is at most a second (less this answer's interval)
	 * ahead of now; each answer, limited or not, moves it on, up to `window` seconds more, so a
	 * flood that goes on stays limited until it has paid its debt. A bucket already that far ahead
	 * is left as it is: under a flood the slot is read, not written, by every CPU.
	 */
	__u64 tolerance = NC_TOKEN - (interval < NC_TOKEN ? interval : NC_TOKEN);
	__u64 most = tolerance + (__u64)c->window * NC_TOKEN;
	__u64 tat = b->tat;
	int over = 1;

	for (int i = 0; i < 4; i++) { /* bound: tries while other CPUs step the same bucket */
		__u64 ahead = tat > now ? tat - now : 0;

		over = ahead > tolerance;
		if (over && ahead >= most)
			break;
		__u64 seen = __sync_val_compare_and_swap(&b->tat, tat, now + ahead + interval);

		if (seen == tat)
			break;
		tat = seen;
		over = 1; /* a bucket four CPUs step at once is flooded: limited if the tries run out */
	}
	if (!over)
		return NC_RRL_SEND;
	/* Every slip-th answer this CPU limits slips: a share of each prefix's, as the answers come. */
	struct nc_scratch *s = bpf_map_lookup_elem(&nc_scratch, &zero);
	__u64 n = s ? ++s->rrl_limited : 1;

	if (c->slip && n % c->slip == 0)
		return NC_RRL_SLIP;
	return NC_RRL_DROP;
}

#endif /* NC_RRL_H */
