/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * NODATA and NXDOMAIN on the fast path (nearcast_abi.h, NC_QTYPE_NEGATIVE): for a name whose
 * record says its other types are NODATA, the negative answer it names; after a miss, a walk up
 * the query's labels to its closest encloser, whose record says whether a name below it that does
 * not exist is NXDOMAIN, and names its negative answer. The reply is built in the scratch map with
 * its compression pointers moved by the query's length. Bounded work: at most NC_NX_DEPTH - 1
 * lookups of one name each, then one of the negative answer.
 */
#ifndef NC_NEGATIVE_H
#define NC_NEGATIVE_H

#include "dns.h"
#include "scratch.h"
#include "maps.h"
#include "lookup.h"
#include "names.h"

/*
 * The record of the name that starts `pos` octets into the query's name (a label boundary), as
 * nc_find_answer finds it (NC_FIND_BELOW): NC_FOUND_NAME, NC_FOUND_OTHER when its tag's slot
 * holds another name's record (lookup.h), or 0 when there is none. The name is
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
	const __u8 *src = s->key.name + NC_NAME_POS(pos);

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
	s->below.qtype = NC_QTYPE_NEGATIVE;
	__u32 ref = nc_probe(nc_hash_finish(h, 0), cfg, gen);

	if (!ref)
		return 0;
	return nc_find_answer(ref, NC_FIND_BELOW) ? NC_FOUND_NAME : NC_FOUND_OTHER;
}

/*
 * Builds the reply of the negative answer in s->answer (its head in s->nx_head: nc_find_answer)
 * for the query in `s`: each pointer moved by the query's length against the one the sections
 * were taken for, and their sum; a NODATA (`nodata`) with RCODE 0. 1 when built.
 */
static __always_inline int nc_nx_build(struct nc_scratch *s, __u32 nodata)
{
	const struct nc_nx_head *head = &s->nx_head;
	__u32 len = s->answer.len;

	if (len > NC_SECTIONS_MAX - sizeof(*head))
		return 0;
	__s32 delta = (__s32)s->q.qname_len - (__s32)head->qname_len;
	__u32 sum = head->csum, n = head->nptrs;

	for (__u32 i = 0; i < NC_NX_PTRS; i++) { /* bound: the pointers an answer holds */
		if (i >= n)
			break;
		__u32 at = head->ptr_at[i];

		if (at + 2 > len)
			return 0;
		/* at + 2 <= len <= NC_SECTIONS_MAX: the masks only tell the verifier. */
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
	/* counts stay as the answer has them, and the flags but for a NODATA's RCODE */
	if (nodata)
		s->answer.flags &= ~0xf;
	s->answer.csum = nc_csum_fold(sum);
	s->answer.kind = NC_KIND_STATIC;
	s->nx = !nodata;
	s->nx_zone = head->zone;
	return 1;
}

/*
 * A signed NODATA: the name's proof (s->proof, nc_copy_proof) appended to the negative answer's
 * signed part built in s->answer (the SOA and its signatures), its sum and count added. 1 when it
 * fits; the answer's slack (scratch.h) takes what the last word writes past it.
 */
static __always_inline int nc_append_proof(struct nc_scratch *s)
{
	__u32 len = s->answer.len;
	__u32 plen = s->proof_len;

	if (len >= NC_SECTIONS_MAX || plen > NC_PROOF_MAX || len + plen > NC_SECTIONS_MAX)
		return 0;
	__u8 *dst = s->answer.sections + (len & (NC_SECTIONS_MAX - 1));
	const nc_u64a *src = (const nc_u64a *)s->proof;

	for (__u32 j = 0; j < NC_PROOF_MAX / 8; j++) { /* bound: the largest proof, a word a step */
		if (j * 8 >= plen)
			break;
		*(nc_u64a *)(dst + j * 8) = src[j]; /* unaligned, within the scratch map */
	}
	/* At an odd offset the proof's bytes sum swapped. */
	__u32 sum = (__u32)s->answer.csum + ((len & 1) ? nc_csum_swap(s->proof_csum) : s->proof_csum);

	s->answer.csum = nc_csum_fold(sum);
	s->answer.len = len + plen;
	s->answer.nscount += s->proof_nscount;
	return 1;
}

/*
 * The negative reply to the query in the scratch map, whose lookup found `found` (nc_lookup_answer:
 * the name's record without an answer of the query's type, or 0 for no record): the NODATA its
 * record says its other types are answered, or the NXDOMAIN its closest encloser's record says
 * the names below it are, from the negative answer the record names. Built in s->answer: 1; 0
 * leaves the query to the slow path. Zone transfers are the slow path's whatever the name, and so
 * are ANY and DS at a name that exists (DS is answered from the parent's side of a zone cut). A
 * global function: the verifier checks it once, apart from the paths that lead to it.
 */
__attribute__((noinline)) int nc_negative(__u32 gen, __u32 found)
{
	__u32 zero = 0;
	struct nc_scratch *s = bpf_map_lookup_elem(&nc_scratch, &zero);
	struct nc_config *cfg = bpf_map_lookup_elem(&nc_config, &zero);

	if (!s || !cfg)
		return 0;
	__u16 qtype = s->key.qtype;
	__u32 len = s->key.len;
	__u32 nodata = found != 0;
	/* DO in a signed zone: a NODATA with the name's proof (its record's), an NXDOMAIN never. */
	__u32 sign = s->q.dnssec_ok && (s->rec_flags & NC_NAME_SIGNED);

	if (qtype == 251 || qtype == 252 || len > NC_NAME_MAX - 1)
		return 0;
	if (nodata) {
		if (!(s->rec_flags & NC_NAME_NODATA) || qtype == 255 || qtype == 43 || (sign && !s->proof_len))
			return 0;
	} else {
		/* Up the query's labels to its closest encloser, at most NC_NX_DEPTH - 1 names. */
		__u32 pos = 0;
		int f = 0;

		for (__u32 step = 0; step < NC_NX_DEPTH - 1; step++) { /* bound: the names looked up */
			/* The next name up; the root has no encloser. */
			__u8 b = s->key.name[NC_NAME_POS(pos)];

			if (b == 0 || b > 63)
				return 0;
			pos += b + 1;
			if (pos >= len)
				return 0;
			f = nc_lookup_below(s, cfg, pos, gen);
			if (f)
				break;
		}
		/* Another name's record where the encloser's would be: it may be left out behind it. */
		if (!f || f == NC_FOUND_OTHER || !(s->rec_flags & NC_NAME_NXDOMAIN))
			return 0;
		if (s->q.dnssec_ok && (s->rec_flags & NC_NAME_SIGNED))
			return 0; /* its proofs cover the name: the slow path's */
	}
	/* The negative answer the record names, in this generation. */
	__u32 index = s->negative;

	if (!index || index >= NC_NEGATIVES_MAX)
		return 0;
	__u32 key = (gen & 1) * NC_NEGATIVES_MAX + index;
	__u64 *ref = bpf_map_lookup_elem(&nc_negatives, &key);
	__u8 flags = s->rec_flags;

	if (!ref || !*ref ||
	    nc_find_answer((__u32)*ref, sign ? NC_FIND_NEGATIVE_SIGNED : NC_FIND_NEGATIVE) != 1 + NC_KIND_NEGATIVE)
		return 0;
	/* The name's (the answer's zone: tally.h; signed or not), not the negative answer's own record's. */
	s->negative = index;
	s->rec_flags = flags;
	if (!nc_nx_build(s, nodata))
		return 0;
	return sign ? nc_append_proof(s) : 1;
}

#endif /* NC_NEGATIVE_H */
