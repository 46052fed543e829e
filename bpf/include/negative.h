/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * NXDOMAIN on the fast path (nearcast_abi.h, NC_QTYPE_BELOW): after a miss, a walk up the query's
 * labels to its closest encloser, whose entry holds the NXDOMAIN the slow path sends for a name
 * below it; the reply is built in the scratch map with its compression pointers moved by the
 * query's length. Bounded work: at most NC_NX_DEPTH lookups of one name each.
 */
#ifndef NC_NEGATIVE_H
#define NC_NEGATIVE_H

#include "dns.h"
#include "maps.h"
#include "lookup.h"
#include "names.h"

/*
 * The entry under NC_QTYPE_BELOW of the name that starts `pos` octets into the query's name (a
 * label boundary), copied into s->answer: 1 + its kind, or 0 when there is none. The name is
 * copied into the scratch map's second key a word at a time, zero padded as the table's keys
 * are, and hashed as it goes.
 */
static __always_inline int nc_lookup_below(struct nc_scratch *s, const struct nc_config *cfg, __u32 pos, __u32 gen)
{
	__u32 len = s->key.len;

	if (len > NC_NAME_MAX - 1 || pos >= len)
		return 0;
	__u32 slen = len - pos;
	__u64 h = nc_hash_start(slen);
	nc_u64a *dst = (nc_u64a *)s->below.name;
	const __u8 *src = s->key.name + (pos & 0xff);

	for (__u32 j = 0; j < NC_NAME_MAX / 8; j++) { /* bound: the longest name, a word a step */
		if (j * 8 >= slen)
			break;
		/* An unaligned load within the scratch map (the key is followed by more than a name). */
		__u64 w = *(const nc_u64a *)(src + j * 8);
		__u32 rest = slen - j * 8;

		if (rest < 8)
			w &= (1ULL << (rest * 8)) - 1; /* past the name: stale bytes of an earlier query */
		dst[j] = w;
		h = nc_hash_word(h, w);
	}
	nc_barrier(); /* the lookup is verified once, not once per length */
	s->below.len = slen;
	s->below.qtype = NC_QTYPE_BELOW;
	__u32 ref = nc_probe(nc_hash_finish(h, NC_QTYPE_BELOW), cfg, gen);

	return ref ? nc_find_answer(ref, NC_FIND_BELOW) : 0;
}

/*
 * Builds the NXDOMAIN of the walk's entry in s->answer for the query in `s`, in its place: the
 * sections moved over the entry's head, each pointer moved by the query's length against the one
 * they were taken for, and their sum. 1 when built.
 */
static __always_inline int nc_nx_build(struct nc_scratch *s)
{
	const struct nc_answer *a = &s->answer;
	/* The head, kept aside: the sections are moved over it. */
	const struct nc_nx_head kept = *(const struct nc_nx_head *)a->sections;
	const struct nc_nx_head *head = &kept;
	__u32 total = a->len;

	if (total < sizeof(*head) || total > NC_SECTIONS_MAX)
		return 0;
	__u32 len = total - sizeof(*head);
	const nc_u64a *src = (const nc_u64a *)(a->sections + sizeof(*head));
	nc_u64a *dst = (nc_u64a *)s->answer.sections;

	for (__u32 j = 0; j < (NC_SECTIONS_MAX - sizeof(*head)) / 8; j++) { /* bound: the entry's capacity */
		if (j * 8 >= len)
			break;
		__u64 w = src[j];

		nc_barrier_var(w); /* a copy within the scratch map: not a memmove, which BPF has not */
		dst[j] = w;
	}
	nc_barrier();
	len = a->len - sizeof(*head);
	if (len > NC_SECTIONS_MAX - sizeof(*head))
		return 0;
	__s32 delta = (__s32)s->q.qname_len - (__s32)head->qname_len;
	__u32 sum = head->csum, n = head->nptrs;

	for (__u32 i = 0; i < NC_NX_PTRS; i++) { /* bound: the pointers an entry holds */
		if (i >= n)
			break;
		__u32 at = head->ptr_at[i];

		if (at + 2 > len)
			return 0;
		__u8 *p = s->answer.sections + (at & (NC_SECTIONS_MAX - 1));
		__u8 *p1 = s->answer.sections + ((at + 1) & (NC_SECTIONS_MAX - 1));
		__s32 to = (__s32)((((__u32)*p & 0x3f) << 8) | *p1) + delta;

		if (to < NC_DNS_HDR || to > 0x3fff)
			return 0;
		__u16 ptr = 0xc000 | (__u16)to;

		*p = ptr >> 8;
		*p1 = ptr & 0xff;
		sum += (at & 1) ? nc_csum_swap(ptr) : ptr; /* at an odd offset its bytes sum swapped */
	}
	/* flags and counts stay as the entry has them */
	s->answer.len = len;
	s->answer.csum = nc_csum_fold(sum);
	s->answer.kind = NC_KIND_STATIC;
	s->nx_zone = head->zone;
	return 1;
}

/*
 * Whether the query in the scratch map, which missed, is a name that does not exist below an
 * encloser whose NXDOMAIN the fast path holds: then that reply is in s->answer and 1 is returned.
 * Zone transfers are the slow path's whatever the name. A global function: the verifier checks it
 * once, apart from the paths that lead to it.
 */
__attribute__((noinline)) int nc_nxdomain(__u32 gen)
{
	__u32 zero = 0;
	struct nc_scratch *s = bpf_map_lookup_elem(&nc_scratch, &zero);
	struct nc_config *cfg = bpf_map_lookup_elem(&nc_config, &zero);

	if (!s || !cfg)
		return 0;
	__u16 qtype = s->key.qtype;

	if (qtype == 251 || qtype == 252)
		return 0;
	__u32 pos = 0;

	for (__u32 step = 0; step < NC_NX_DEPTH; step++) { /* bound: the names looked up */
		int found = nc_lookup_below(s, cfg, pos, gen);

		if (found)
			return step > 0 && found == 1 + NC_KIND_NXDOMAIN ? nc_nx_build(s) : 0;
		/* The next name up; the root has no encloser. */
		__u8 b = s->key.name[pos & 0xff];

		if (b == 0 || b > 63)
			return 0;
		pos += b + 1;
		if (pos >= s->key.len || pos > NC_NAME_MAX - 1)
			return 0;
	}
	return 0;
}

#endif /* NC_NEGATIVE_H */
