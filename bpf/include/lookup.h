/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * A query's answer from the names table (names.h), copied out of the arena into the scratch map,
 * where everything after it reads it.
 */
#ifndef NC_LOOKUP_H
#define NC_LOOKUP_H

#include "dns.h"
#include "maps.h"
#include "names.h"

/* What nc_find_answer looks up. */
enum nc_find {
	NC_FIND_QUERY = 0, /* the query's name and type */
	NC_FIND_OTHER = 1, /* after a miss: the name's NODATA for the types it has none of */
	NC_FIND_BELOW = 2, /* the NXDOMAIN walk's name (s->below: negative.h) */
};

/*
 * The answer in record `ref` (nc_probe: a slot's tag matched) to what `what` says (enum
 * nc_find), copied into s->answer: 1 + its kind, or 0 when the record holds another question.
 * NC_FIND_OTHER: the record under NC_QTYPE_OTHER, and only an answer (NC_KIND_STATIC). A global
 * function: the verifier checks it once, apart from the paths that lead to it, and those after it
 * read the answer at one fixed place rather than a record anywhere in the arena. It is called
 * only when a tag matched, so a miss costs no call.
 */
__attribute__((noinline)) int nc_find_answer(__u32 ref, __u32 what)
{
	__u32 zero = 0;
	struct nc_scratch *s = bpf_map_lookup_elem(&nc_scratch, &zero);

	if (!s)
		return 0;
	const struct nc_answer *a;

	if (what == NC_FIND_BELOW)
		a = nc_record_answer(&s->below, NC_QTYPE_BELOW, ref);
	else if (what == NC_FIND_OTHER)
		a = nc_record_answer(&s->key, NC_QTYPE_OTHER, ref);
	else
		a = nc_record_answer(&s->key, s->key.qtype, ref);
	if (!a || (what == NC_FIND_OTHER && a->kind != NC_KIND_STATIC))
		return 0;
	__u32 len = a->len;

	if (len > NC_SECTIONS_MAX)
		return 0;
	/* The head as two words, then the sections a word at a time (the record pads them to a word). */
	const nc_u64a *src = (const nc_u64a *)a;
	nc_u64a *dst = (nc_u64a *)&s->answer;

	dst[0] = src[0];
	dst[1] = src[1];
	src = (const nc_u64a *)a->sections;
	dst = (nc_u64a *)s->answer.sections;
	for (__u32 j = 0; j < NC_SECTIONS_MAX / 8; j++) { /* bound: the most sections, a word a step */
		if (j * 8 >= len)
			break;
		dst[j] = src[j];
	}
	return 1 + a->kind;
}

/*
 * The query's answer (NC_FIND_QUERY), or after a miss the name's NODATA for the types it has none
 * of (NC_FIND_OTHER: under NC_QTYPE_OTHER; not for the types the slow path answers otherwise:
 * ANY, AXFR, IXFR, and DS, answered from the parent's side of a zone cut), into s->answer: 1 +
 * its kind, or 0.
 */
static __always_inline int nc_lookup_answer(struct nc_scratch *s, const struct nc_config *cfg, __u32 gen,
					    enum nc_find what)
{
	__u64 hash = s->q.hash;

	if (what == NC_FIND_OTHER) {
		__u16 qtype = s->key.qtype;

		if (qtype == 255 || qtype == 252 || qtype == 251 || qtype == 43 || qtype == NC_QTYPE_OTHER)
			return 0;
		hash = nc_hash_finish(s->q.name_hash, NC_QTYPE_OTHER);
	}
	__u32 ref = nc_probe(hash, cfg, gen);

	return ref ? nc_find_answer(ref, what) : 0;
}

#endif /* NC_LOOKUP_H */
