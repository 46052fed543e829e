/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * A name's record in the names table (names.h), and the answer it holds for the query, copied
 * out of the arena into the scratch map, where everything after it reads it.
 */
#ifndef NC_LOOKUP_H
#define NC_LOOKUP_H

#include "dns.h"
#include "scratch.h"
#include "maps.h"
#include "names.h"

/* What nc_find_answer looks for. */
enum nc_find {
	NC_FIND_QUERY = 0,    /* the query's name (s->key), and its answer for the query's type */
	NC_FIND_BELOW = 1,    /* the walk's name (s->below: negative.h) */
	NC_FIND_NEGATIVE = 2, /* a negative answer's record (nc_negatives), whatever its name */
	NC_FIND_NEGATIVE_SIGNED = 3, /* the same, its signed entry (a signed NODATA's SOA part) */
};

/* What nc_find_answer found besides an answer (1 + its kind): the record, and no such answer. */
#define NC_FOUND_NAME 8
/*
 * The slot of the name's tag holds another name's record: the name may exist, left out behind
 * that one (the control plane places no name behind a slot of its tag), so neither an answer
 * nor a walk up to its encloser is sure. Its query is the slow path's.
 */
#define NC_FOUND_OTHER 9

/*
 * The query has DO and the name's zone is signed, and its record holds the type's answer without
 * signatures only (its signed one did not fit): the slow path's.
 */
#define NC_FOUND_UNSIGNED 10

/*
 * The name's part of its signed NODATA, the answer `at` octets into its record `r`, copied into
 * s->proof for the negative answer to append (negative.h): NC_FOUND_NAME, as for a name without
 * the type; the proof is left empty where it is larger than NC_PROOF_MAX.
 */
static __always_inline int nc_copy_proof(struct nc_scratch *s, const __u8 *r, __u64 at)
{
	nc_barrier_var(at);
	if (at > NC_ANSWER_AT_MAX)
		return NC_FOUND_NAME;
	const struct nc_answer *a = (const struct nc_answer *)(r + (at & ~7ULL));
	__u32 len = a->len;

	if (len > NC_PROOF_MAX)
		return NC_FOUND_NAME;
	const nc_u64a *src = (const nc_u64a *)a->sections;
	nc_u64a *dst = (nc_u64a *)s->proof;

	for (__u32 j = 0; j < NC_PROOF_MAX / 8; j++) { /* bound: the largest proof, a word a step */
		if (j * 8 >= len)
			break;
		dst[j] = src[j];
	}
	s->proof_len = len;
	s->proof_csum = a->csum;
	s->proof_nscount = a->nscount;
	return NC_FOUND_NAME;
}

/*
 * The record `ref` when it is what `what` says (nc_probe: a slot's tag matched; or a negative
 * answer's place): its flags and negative index into s->rec_flags and s->negative, and into
 * s->answer the answer of the query's type (NC_FIND_QUERY), or the negative answer, its head into
 * s->nx_head (NC_FIND_NEGATIVE): 1 + the answer's kind; NC_FOUND_NAME when there is no such
 * answer; 0 when the record is another name's. A query with DO about a name of a signed zone
 * takes the signed answer (NC_AT_SIGNED; s->signed_answer), or NC_FOUND_UNSIGNED where the
 * record has only the unsigned one.
 *
 * A global function: the verifier checks it once, apart from the paths that lead to it, and those
 * after it read the answer at one fixed place rather than a record anywhere in the arena. It is
 * called only when a tag matched, so a miss costs no call.
 */
__attribute__((noinline)) int nc_find_answer(__u32 ref, __u32 what)
{
	__u32 zero = 0;
	struct nc_scratch *s = bpf_map_lookup_elem(&nc_scratch, &zero);

	if (!s)
		return 0;
	__u32 negative = what == NC_FIND_NEGATIVE || what == NC_FIND_NEGATIVE_SIGNED;
	__u8 *r = nc_record(negative ? NULL : what == NC_FIND_BELOW ? &s->below : &s->key, ref);

	if (!r)
		return 0;
	const struct nc_record_head *head = (const struct nc_record_head *)r;

	s->rec_flags = head->flags;
	s->negative = head->negative;
	s->signed_answer = 0;
	if (what == NC_FIND_BELOW)
		return NC_FOUND_NAME;
	if (what == NC_FIND_QUERY)
		s->proof_len = 0;
	/* The directory follows the name, padded to a word (a name is at most 256 bytes: the mask). */
	const struct nc_type_ref *dir = (const struct nc_type_ref *)(r + sizeof(*head) + ((head->len + 7) & 0x1f8));
	__u32 types = head->types;
	__u16 want = negative ? NC_QTYPE_NEGATIVE : s->key.qtype;
	/* The entry wanted: the signed one for DO in a signed zone, else the plain one. */
	__u32 sign = (what == NC_FIND_QUERY && s->q.dnssec_ok && (head->flags & NC_NAME_SIGNED)) ||
				     what == NC_FIND_NEGATIVE_SIGNED
			     ? NC_AT_SIGNED
			     : 0;
	__u32 unsigned_only = 0;
	__u64 at = 0;	    /* 64 bits: the bound below is checked on the register used */
	__u64 denial = 0; /* the name's part of its signed NODATA, for DO in a signed zone */

	if (what == NC_FIND_QUERY && want == NC_QTYPE_NEGATIVE)
		return NC_FOUND_NAME; /* type 0 is no record's */
	for (__u32 i = 0; i < NC_TYPES_MAX; i++) { /* bound: the types a record holds */
		if (i >= types)
			break;
		if (sign && what == NC_FIND_QUERY && dir[i].qtype == NC_QTYPE_NEGATIVE && (dir[i].at & NC_AT_SIGNED))
			denial = dir[i].at & ~NC_AT_SIGNED;
		if (dir[i].qtype != want)
			continue;
		if ((dir[i].at & NC_AT_SIGNED) == sign) {
			at = dir[i].at & ~NC_AT_SIGNED;
			break;
		}
		unsigned_only = 1;
	}
	nc_barrier_var(at); /* the bound below holds for the value used after it, not a copy from before */
	if (!at && unsigned_only)
		return NC_FOUND_UNSIGNED;
	if (!at && denial)
		return nc_copy_proof(s, r, denial);
	if (!at || at > NC_ANSWER_AT_MAX)
		return NC_FOUND_NAME;
	s->signed_answer = sign != 0;
	const struct nc_answer *a = (const struct nc_answer *)(r + (at & ~7ULL));
	__u32 len = a->len;
	__u32 kind = a->kind;
	const nc_u64a *src = (const nc_u64a *)a;
	nc_u64a *dst = (nc_u64a *)&s->answer;

	if (len > NC_SECTIONS_MAX)
		return 0;
	/* The head as two words, then the sections a word at a time (the record pads them to a word). */
	dst[0] = src[0];
	dst[1] = src[1];
	src = (const nc_u64a *)a->sections;
	if (kind == NC_KIND_NEGATIVE) {
		/* Its head aside, its sections where the reply's go. */
		if (len < sizeof(struct nc_nx_head))
			return 0;
		__builtin_memcpy(&s->nx_head, a->sections, sizeof(struct nc_nx_head));
		src += sizeof(struct nc_nx_head) / 8;
		len -= sizeof(struct nc_nx_head);
		s->answer.len = len;
	}
	dst = (nc_u64a *)s->answer.sections;
	for (__u32 j = 0; j < NC_SECTIONS_MAX / 8; j++) { /* bound: the most sections, a word a step */
		if (j * 8 >= len)
			break;
		dst[j] = src[j];
	}
	return 1 + kind;
}

/*
 * The query's name in the names table and its answer for the query's type, into s->answer: 1 +
 * the answer's kind, NC_FOUND_NAME (the name, and no answer of the type), NC_FOUND_OTHER (its
 * tag's slot holds another name's record), or 0 (no such record).
 */
static __always_inline int nc_lookup_answer(struct nc_scratch *s, const struct nc_config *cfg, __u32 gen)
{
	__u32 ref = nc_probe(nc_hash_finish(s->q.name_hash, 0), cfg, gen);

	if (!ref)
		return 0;
	int found = nc_find_answer(ref, NC_FIND_QUERY);

	return found ? found : NC_FOUND_OTHER;
}

#endif /* NC_LOOKUP_H */
