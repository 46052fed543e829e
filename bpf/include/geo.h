/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * Geo names on the fast path (layouts in nearcast_abi.h): the client's location class from the
 * prefix map of its address family, the candidates of (ranking, class), the first nodes that are up,
 * written as an answer into the scratch map for the reply writer with the TTL its pool's health
 * allows (nc_pools), and the ECS scope put into the echo; with DO in a signed zone, the signatures of
 * the answer's node set (nc_geo_sigs). What XDP does not decide (every candidate down, without fail-open) goes to the slow path,
 * which answers from the same table.
 */
#ifndef NC_GEO_H
#define NC_GEO_H

#include "dns.h"
#include "scratch.h"
#include "names.h"

#define NC_SPILL_MASK 3 /* NC_SPILL (3) rounded up to a power of two, less one: bounds for the verifier */

/*
 * The prefix and candidate maps of each generation (NC_GEO_GENERATIONS, see nearcast_abi.h): an
 * outer array indexed by the names table's live generation holds the inner map the program reads.
 * The control plane creates inner maps like these templates (the IPv4 prefixes and candidate
 * lists at the one size the loader set, the IPv6 trie sized to what it holds) and puts them in the
 * slot of the generation it writes. Sizes rather than types: inner maps made by the control plane
 * carry no BTF.
 */
/*
 * The IPv4 prefixes, sorted (nearcast_abi.h, struct nc_geo4_span), and below the candidate lists:
 * ARRAYs whose size the loader sets (nc_config's geo4_capacity and cands_capacity), so that their
 * lookups are inlined; the one entry here is a placeholder.
 */
struct nc_geo4_inner {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__uint(key_size, sizeof(__u32));
	__uint(value_size, sizeof(struct nc_geo4_prefix));
};

struct nc_geo6_inner {
	__uint(type, BPF_MAP_TYPE_LPM_TRIE);
	__uint(max_entries, NC_GEO6_CAPACITY);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__uint(key_size, sizeof(struct nc_geo6_key));
	__uint(value_size, sizeof(struct nc_geo_class));
};

struct nc_cands_inner {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__uint(key_size, sizeof(__u32));
	__uint(value_size, sizeof(struct nc_cands));
};

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY_OF_MAPS);
	__uint(max_entries, NC_GEO_GENERATIONS);
	__type(key, __u32);
	__array(values, struct nc_geo4_inner);
} nc_geo4 SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY_OF_MAPS);
	__uint(max_entries, NC_GEO_GENERATIONS);
	__type(key, __u32);
	__array(values, struct nc_geo6_inner);
} nc_geo6 SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY_OF_MAPS);
	__uint(max_entries, NC_GEO_GENERATIONS);
	__type(key, __u32);
	__array(values, struct nc_cands_inner);
} nc_cands SEC(".maps");

struct nc_nodes_inner {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, NC_NODES_MAX);
	__uint(key_size, sizeof(__u32));
	__uint(value_size, sizeof(struct nc_node));
};

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY_OF_MAPS);
	__uint(max_entries, NC_GEO_GENERATIONS);
	__type(key, __u32);
	__array(values, struct nc_nodes_inner);
} nc_nodes SEC(".maps");

/* The signatures of signed geo answers, by variant (nearcast_abi.h, struct nc_geo_sig). */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__uint(max_entries, NC_GEO_SIGS_MAX);
	__type(key, struct nc_geo_sig_key);
	__type(value, struct nc_geo_sig);
} nc_geo_sigs SEC(".maps");

/* Pools: one half per generation, pool i of generation g at g * NC_POOLS_MAX + i. */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, NC_GEO_GENERATIONS * NC_POOLS_MAX);
	__type(key, __u32);
	__type(value, struct nc_pool);
} nc_pools SEC(".maps");

/*
 * The spans of each /16 over the IPv4 prefixes: NC_GEO4_SPANS a generation (struct nc_geo4_span).
 * Mmapable: a generation's half is copied in whole (as a batch update, 65,536 entries took 26 ms
 * of every start, with or without geo names).
 */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(map_flags, BPF_F_MMAPABLE);
	__uint(max_entries, NC_GEO_GENERATIONS * NC_GEO4_SPANS);
	__type(key, __u32);
	__type(value, struct nc_geo4_span);
} nc_geo4_spans SEC(".maps");

/* IPv6 prefixes looked up as IPv4: NC_GEO_ALIASES a generation (struct nc_geo_alias). */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, NC_GEO_GENERATIONS * NC_GEO_ALIASES);
	__type(key, __u32);
	__type(value, struct nc_geo_alias);
} nc_geo_alias SEC(".maps");

/*
 * When one of generation `gen`'s aliases covers the IPv6 address in `k6`, the IPv4 address inside
 * it goes into `v4` (network order) and the alias's length is returned; else 0.
 */
static __always_inline __u32 nc_geo_unalias(const struct nc_geo6_key *k6, __u32 *v4, __u32 gen)
{
	__u64 w0 = *(const nc_u64a *)&k6->addr[0], w1 = *(const nc_u64a *)&k6->addr[8];

	for (__u32 i = 0; i < NC_GEO_ALIASES; i++) { /* bound: the aliases of a generation */
		__u32 id = (gen & 1) * NC_GEO_ALIASES + i;
		struct nc_geo_alias *a = bpf_map_lookup_elem(&nc_geo_alias, &id);

		if (!a || !a->plen)
			return 0;
		if ((w0 & a->mask[0]) != a->value[0] || (w1 & a->mask[1]) != a->value[1])
			continue;
		/* The 4 bytes at v4_at (0...12), by constant offsets: the verifier sees each access. */
		for (__u32 at = 0; at <= 12; at++) { /* bound: the offsets an IPv4 address can start at */
			if (at == a->v4_at) {
				__builtin_memcpy(v4, &k6->addr[at], 4);
				return a->plen;
			}
		}
		return 0;
	}
	return 0;
}

/* Node `i` of a candidate list, in the generation's nodes map. */
static __always_inline struct nc_node *nc_geo_node(void *nodes, __u32 i)
{
	return bpf_map_lookup_elem(nodes, &i);
}

/* The TTL a geo name answers with: its own, lowered to its pool's cap while the pool is unsettled. */
static __always_inline __u32 nc_geo_ttl(const struct nc_geo_name *g, __u32 gen)
{
	/* A pool index is below NC_POOLS_MAX (the control plane's): the mask keeps it in its half. */
	__u32 id = (gen & 1) * NC_POOLS_MAX + (g->pool & (NC_POOLS_MAX - 1));
	struct nc_pool *p = bpf_map_lookup_elem(&nc_pools, &id);

	return p && p->ttl_cap < g->ttl ? p->ttl_cap : g->ttl;
}

/*
 * The prefix of IPv4 address `addr` (host order) in generation `gen`, or NULL when no prefix
 * covers it: its /16's span, then a binary search in the generation's prefix array for the last
 * prefix that starts at or before it (see nearcast_abi.h).
 */
static __always_inline const struct nc_geo4_prefix *nc_geo4_find(__u32 gen, __u32 addr)
{
	__u32 key = (gen & 1) * NC_GEO4_SPANS + (addr >> 16);
	const struct nc_geo4_span *span = bpf_map_lookup_elem(&nc_geo4_spans, &key);

	if (!span || !span->count)
		return NULL;
	void *map = bpf_map_lookup_elem(&nc_geo4, &gen);

	if (!map)
		return NULL;
	__u32 lo = span->first, n = span->count;

	for (__u32 i = 0; i < NC_GEO4_STEPS; i++) { /* bound: a span holds at most 2^NC_GEO4_STEPS prefixes */
		if (n <= 1)
			break;
		__u32 half = n >> 1;
		const struct nc_geo4_prefix *p;

		key = lo + half;
		p = bpf_map_lookup_elem(map, &key);
		if (!p)
			return NULL;
		if (p->start <= addr)
			lo = key;
		n -= half;
	}
	key = lo;
	const struct nc_geo4_prefix *p = bpf_map_lookup_elem(map, &key);
	/* The prefix's mask: its top plen bits (none for a /0). */
	__u32 mask = p ? (__u32)(0xffffffff00000000ull >> (p->plen & 63)) : 0;

	if (!p || p->start > addr || ((addr ^ p->start) & mask))
		return NULL;
	return p;
}

/*
 * The location class of the client and the ECS scope to answer with. The client is the ECS
 * address when the query has one with a source prefix (its scope byte, q->ecs[7], is set to the
 * prefix matched, or the source prefix when none did), else the packet's source.
 */
static __always_inline __u32 nc_geo_class(void *data, void *data_end, const struct nc_packet *pkt, struct nc_query *q,
					    const struct nc_scratch *s, __u32 *seed)
{
	struct nc_geo6_key k6 = { .prefixlen = 128 };
	__u32 v4 = 0; /* the IPv4 address, network order */
	__u32 source = 0;
	int v6;

	if (q->ecs_len >= 8 && q->ecs[7] == 0 && q->ecs[6] > 0) {
		source = q->ecs[6];
		v6 = q->ecs[5] == 2;
		/*
		 * The address bytes, ceil(source / 8) of them, as two words of the zero-padded copy of
		 * the option (nc_read_ecs: no bits are set past the source prefix).
		 */
		nc_barrier();
		__u64 lo = *(nc_u64a *)&q->ecs[8], hi = *(nc_u64a *)&q->ecs[16];

		*(nc_u64a *)&k6.addr[0] = lo;
		*(nc_u64a *)&k6.addr[8] = hi;
		v4 = (__u32)lo;
	} else if (pkt->ipv6) {
		struct ipv6hdr *ip6 = data + NC_OFF(pkt->l3_off);

		if ((void *)(ip6 + 1) > data_end)
			return 0;
		__builtin_memcpy(k6.addr, &ip6->saddr, 16);
		v6 = 1;
	} else {
		struct iphdr *ip = data + NC_OFF(pkt->l3_off);

		if ((void *)(ip + 1) > data_end)
			return 0;
		v4 = ip->saddr;
		v6 = 0;
	}
	__u32 gen = s->gen;
	/* An address the database aliases to its IPv4 space is located by its IPv4 part. */
	__u32 alias = v6 ? nc_geo_unalias(&k6, &v4, gen) : 0;
	__u32 cls = 0, plen = 0, found = 0;

	*seed = 0;
	if (v6 && !alias) {
		void *lpm = bpf_map_lookup_elem(&nc_geo6, &gen);
		const struct nc_geo_class *gc = lpm ? bpf_map_lookup_elem(lpm, &k6) : NULL;

		if (gc) {
			cls = gc->cls;
			plen = gc->plen;
			*seed = gc->seed;
			found = 1;
		}
	} else {
		const struct nc_geo4_prefix *p = nc_geo4_find(gen, bpf_ntohl(v4));

		if (p) {
			cls = p->cls;
			plen = p->plen;
			*seed = p->seed;
			found = 1;
		}
	}
	if (source)
		q->ecs[7] = found ? alias + plen : source;
	return cls;
}

/*
 * Spill-over (NC_SPILL): the candidate position to answer first when the top candidate is down,
 * one of the next NC_SPILL that are up, picked by the prefix's seed in proportion to weight; or
 * NC_GEO_DEPTH when the top one is up (rank order) or none is.
 */
static __always_inline __u32 nc_spill_first(const struct nc_cands *c, void *nodes, __u32 seed, struct nc_scratch *s)
{
	__u32 seen = 0, total = 0;

	for (__u32 i = 0; i < NC_GEO_DEPTH; i++) { /* bound: the candidates kept */
		if (i >= c->count || seen >= NC_SPILL)
			break;
		struct nc_node *node = nc_geo_node(nodes, c->node[i]);

		if (!node || !node->up)
			continue;
		if (i == 0)
			return NC_GEO_DEPTH;
		__u32 w = node->weight ? node->weight : 1;

		/* seen < NC_SPILL (above): the masks only tell the verifier. */
		s->spill_at[seen & (NC_SPILL_MASK)] = i;
		s->spill_weight[seen & (NC_SPILL_MASK)] = w;
		total += w;
		seen++;
	}
	if (!seen || !total)
		return NC_GEO_DEPTH;
	__u32 r = seed % total;

	for (__u32 k = 0; k < NC_SPILL; k++) { /* bound: the spill-over width */
		if (k >= seen)
			break;
		__u32 w = s->spill_weight[k];

		if (r < w)
			return s->spill_at[k];
		r -= w;
	}
	return s->spill_at[0];
}

/*
 * One answer record: the owner points at the question, then type, class IN, TTL, the address.
 * Written as 32-bit words (records start 4-aligned in the scratch answer; the nodes' addresses
 * are 4-aligned): byte-wise, an IPv6 address alone is 16 loads and 16 stores. Returns the words'
 * sum in native order, for the answer's checksum (the records are whole words at even offsets).
 */
static __always_inline __u64 nc_geo_rr(__u8 *rr, const struct nc_geo_name *g, __u32 ttl, const struct nc_node *node)
{
	nc_u32a *w = (nc_u32a *)rr;
	const nc_u32a *a = g->qtype == 28 ? (const nc_u32a *)node->v6 : (const nc_u32a *)node->v4;
	__u32 w0 = bpf_htonl(0xc00c0000 | g->qtype), w1 = bpf_htonl(0x00010000 | (ttl >> 16));
	__u32 w2 = bpf_htonl((ttl << 16) | (g->qtype == 28 ? 16 : 4)), w3 = a[0];
	__u64 sum = (__u64)w0 + w1 + w2 + w3;

	w[0] = w0;
	w[1] = w1;
	w[2] = w2;
	w[3] = w3;
	if (g->qtype == 28) {
		__u32 w4 = a[1], w5 = a[2], w6 = a[3];

		w[4] = w4;
		w[5] = w5;
		w[6] = w6;
		sum += (__u64)w4 + w5 + w6;
	}
	return sum;
}

/* A node's address as a signed answer's variant holds it (struct nc_geo_sig_key). */
static __always_inline __u32 nc_geo_addr_key(const struct nc_geo_name *g, const struct nc_node *node)
{
	const nc_u32a *a = (const nc_u32a *)node->v6;

	return g->qtype == 28 ? a[0] ^ a[1] ^ a[2] ^ a[3] : *(const nc_u32a *)node->v4;
}

/* One comparator of the sorting network below. */
#define NC_SORT2(a, b)                \
	do {                          \
		if ((a) > (b)) {      \
			__u32 t_ = (a); \
			(a) = (b);      \
			(b) = t_;       \
		}                     \
	} while (0)

/*
 * Appends the signatures of the signed geo answer in s->answer (its `n` address records of
 * `rrsize` bytes) from nc_geo_sigs: its variant's key (s->sig_key, the addresses as answered)
 * completed and sorted (the 19 comparators of an optimal network for 8), looked up, and the
 * records copied after the addresses with the answer's `ttl`, their sum and count into
 * s->geo_sig_csum and s->geo_sig_count. Returns the bytes appended; 0 when the variant has no entry.
 *
 * A global function: the verifier checks the network's branches once, apart from the paths
 * that reach it.
 */
__attribute__((noinline)) int nc_geo_signatures(__u32 n, __u32 rrsize, __u32 ttl)
{
	__u32 zero = 0;
	struct nc_scratch *s = bpf_map_lookup_elem(&nc_scratch, &zero);

	if (!s || n == 0 || n > NC_GEO_ANSWERS_MAX || (rrsize != 16 && rrsize != 28))
		return 0;
	struct nc_geo_sig_key *k = &s->sig_key;

	for (__u32 i = 0; i < NC_GEO_ANSWERS_MAX; i++) /* bound: the addresses of an answer */
		if (i >= n)
			k->addr[i] = 0xffffffff;
	__u32 a0 = k->addr[0], a1 = k->addr[1], a2 = k->addr[2], a3 = k->addr[3];
	__u32 a4 = k->addr[4], a5 = k->addr[5], a6 = k->addr[6], a7 = k->addr[7];

	NC_SORT2(a0, a2); NC_SORT2(a1, a3); NC_SORT2(a4, a6); NC_SORT2(a5, a7);
	NC_SORT2(a0, a4); NC_SORT2(a1, a5); NC_SORT2(a2, a6); NC_SORT2(a3, a7);
	NC_SORT2(a0, a1); NC_SORT2(a2, a3); NC_SORT2(a4, a5); NC_SORT2(a6, a7);
	NC_SORT2(a2, a4); NC_SORT2(a3, a5);
	NC_SORT2(a1, a4); NC_SORT2(a3, a6);
	NC_SORT2(a1, a2); NC_SORT2(a3, a4); NC_SORT2(a5, a6);
	k->addr[0] = a0;
	k->addr[1] = a1;
	k->addr[2] = a2;
	k->addr[3] = a3;
	k->addr[4] = a4;
	k->addr[5] = a5;
	k->addr[6] = a6;
	k->addr[7] = a7;
	k->count = n;
	k->pad = 0;

	const struct nc_geo_sig *sig = bpf_map_lookup_elem(&nc_geo_sigs, k);

	if (!sig)
		return 0;
	__u32 len = sig->len;

	if (len == 0 || len > NC_GEO_SIG_MAX)
		return 0;
	/* After the records: at most 8 of 28 bytes, then NC_GEO_SIG_MAX within the sections. */
	__u64 at = (__u64)(n & 0xf) * (rrsize & 0x1f); /* 64 bits: the bound below is checked on the register used */

	nc_barrier_var(at);
	if (at > NC_GEO_ANSWERS_MAX * 28)
		return 0;
	nc_u64a *dst = (nc_u64a *)(s->answer.sections + at);
	const nc_u64a *src = (const nc_u64a *)sig->data;

	for (__u32 j = 0; j < NC_GEO_SIG_MAX / 8; j++) { /* bound: the most signatures, a word a step */
		if (j * 8 >= len)
			break;
		dst[j] = src[j];
	}
	/*
	 * Each record's TTL, the answer's: its pool may have lowered it. (The length read again, so
	 * that the verifier, which knew it to a word at each exit of the copy, checks what follows
	 * once rather than once per exit: 36,000 instructions.)
	 */
	nc_barrier();
	len = sig->len;
	if (len == 0 || len > NC_GEO_SIG_MAX)
		return 0;
	__u32 count = sig->count;
	__u32 net_ttl = bpf_htonl(ttl);

	for (__u32 i = 0; i < NC_GEO_SIG_RECORDS; i++) { /* bound: the records an entry holds */
		if (i >= count)
			break;
		__u32 off = sig->ttl_at[i] & (NC_GEO_SIG_MAX - 1);

		if (off + 4 > len)
			return 0;
		*(nc_u32a *)((__u8 *)dst + off) = net_ttl;
	}
	/* Their sum as native words (the answer's records are whole words; the data is zero padded). */
	__u64 sum = 0;

	for (__u32 j = 0; j < NC_GEO_SIG_MAX / 8; j++) { /* bound: as the copy's */
		if (j * 8 >= len)
			break;
		__u64 w = dst[j];

		sum += (w & 0xffffffff) + (w >> 32);
	}
	s->geo_sig_csum = sum;
	s->geo_sig_count = count;
	return len;
}

/*
 * Builds the answer of the geo name in s->answer (its names-table entry) for this client, in its
 * place; for its signed entry (DO in a signed zone), with its variant's signatures. Returns
 * NC_ANSWERED, or NC_PASS_GEO (or NC_PASS_DNSSEC: no signatures for the variant) to leave the
 * query to the slow path.
 */
static __always_inline enum nc_reason nc_geo_answer(void *data, void *data_end, const struct nc_packet *pkt,
						     struct nc_query *q, struct nc_scratch *s)
{
	struct nc_answer *out = &s->answer;
	/* The name's settings, kept aside: the answer is written over them. */
	const struct nc_geo_name name = *(const struct nc_geo_name *)out->sections;
	const struct nc_geo_name *g = &name;
	__u32 rrsize = g->qtype == 28 ? 28 : 16;
	__u32 want = g->answers;
	__u32 seed = 0;
	__u32 gen = s->gen;
	__u32 ttl = nc_geo_ttl(g, gen);
	__u32 at = nc_geo_class(data, data_end, pkt, q, s, &seed) * g->rankings + g->ranking;
	void *cands = bpf_map_lookup_elem(&nc_cands, &gen);
	void *nodes = bpf_map_lookup_elem(&nc_nodes, &gen);
	struct nc_cands *c = cands && nodes ? bpf_map_lookup_elem(cands, &at) : NULL;

	if (!c || want == 0 || want > NC_GEO_ANSWERS_MAX)
		return NC_PASS_GEO;
	/* Spill-over only when the top candidate is down: the common case is one look at it. */
	const struct nc_node *top = c->count ? nc_geo_node(nodes, c->node[0]) : NULL;
	__u32 first = top && top->up ? NC_GEO_DEPTH : nc_spill_first(c, nodes, seed, s);
	/* The records' sum in native order, as each is written: the answer's checksum. */
	__u64 native = 0;
	/*
	 * First the candidates that are up; with none, under fail-open, the top ones anyway. The count,
	 * the answers wanted and the candidate spill-over put first live in the scratch map and are
	 * read back each step, so the verifier checks a step once rather than once per value (held in
	 * registers, their ranges narrowed by each step's comparisons split the paths: this function,
	 * verified alone, took 206,000 instructions, against 39,000).
	 */
	out->ancount = 0;
	s->geo_all_down = 0;
	s->geo_first = first;
	s->geo_want = want;
	if (first < NC_GEO_DEPTH) {
		__u32 index = c->node[first & (NC_GEO_DEPTH - 1)]; /* first < NC_GEO_DEPTH: for the verifier */
		struct nc_node *node = nc_geo_node(nodes, index);

		if (node) {
			native += nc_geo_rr(out->sections, g, ttl, node);
			out->ancount = 1;
			s->geo_node = index;
			s->sig_key.addr[0] = nc_geo_addr_key(g, node);
		}
	}
	for (int pass = 0; pass < 2; pass++) { /* bound: two passes */
		nc_barrier();
		if (pass == 1 && out->ancount)
			break;
		if (pass == 1 && !g->fail_open)
			return NC_PASS_GEO;
		s->geo_all_down = pass;
		for (__u32 i = 0; i < NC_GEO_DEPTH; i++) { /* bound: the candidates kept */
			nc_barrier();
			__u32 n = out->ancount;

			if (i >= c->count || n >= s->geo_want)
				break;
			struct nc_node *node = nc_geo_node(nodes, c->node[i]);

			if (!node || (pass == 0 && (!node->up || i == s->geo_first)))
				continue;
			/* n < geo_want <= NC_GEO_ANSWERS_MAX (8): the mask only tells the verifier. */
			native += nc_geo_rr(out->sections + (n & 7) * rrsize, g, ttl, node);
			s->sig_key.addr[n & 7] = nc_geo_addr_key(g, node);
			out->ancount = n + 1;
			if (n == 0)
				s->geo_node = c->node[i];
		}
	}
	nc_barrier();
	__u32 n = out->ancount & 0xf; /* at most NC_GEO_ANSWERS_MAX (8) written: for the verifier */

	out->flags = 0x8400; /* QR, AA; NOERROR */
	out->nscount = 0;
	out->arcount = 0;
	out->kind = NC_KIND_STATIC;
	out->len = n * rrsize;
	if (s->signed_answer) {
		/* DO in a zone the control plane signs: the variant's signatures. */
		s->sig_key.name = nc_hash_finish(s->q.name_hash, 0);
		s->sig_key.qtype = g->qtype;
		int added = nc_geo_signatures(n, rrsize, ttl);

		if (added <= 0 || added > NC_GEO_SIG_MAX)
			return NC_PASS_DNSSEC;
		out->len = n * rrsize + added;
		out->ancount = n + s->geo_sig_count;
		native += s->geo_sig_csum;
	}
	out->csum = nc_csum_native_to_net(native);
	return NC_ANSWERED;
}

#endif /* NC_GEO_H */
