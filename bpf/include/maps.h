/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * The maps of the XDP program. Layouts and names come from the shared ABI header; the control
 * plane fills nc_names and nc_config and reads nc_stats.
 */
#ifndef NC_MAPS_H
#define NC_MAPS_H

#include "compiler.h"
#include "nearcast_abi.h"

/*
 * (type, lower-cased name) -> the slow path's reply sections for it, one map per name-length
 * class (see struct nc_name_key). Not preallocated: an entry is over a kilobyte, and most names
 * maps hold far fewer entries than their capacity.
 */
#define NC_NAMES_MAP(class, key_type)                                         \
	struct {                                                              \
		__uint(type, BPF_MAP_TYPE_HASH);                              \
		__uint(max_entries, NC_NAMES_CAPACITY);                       \
		__uint(map_flags, BPF_F_NO_PREALLOC);                         \
		__type(key, key_type);                                        \
		__type(value, struct nc_answer);                              \
	} nc_names_##class SEC(".maps")

NC_NAMES_MAP(32, struct nc_name_key_32);
NC_NAMES_MAP(64, struct nc_name_key_64);
NC_NAMES_MAP(128, struct nc_name_key_128);
NC_NAMES_MAP(256, struct nc_name_key);

/* The entry for `key` from the map of its name-length class. */
static __always_inline struct nc_answer *nc_lookup_name(struct nc_name_key *key, __u32 len)
{
	if (len <= 32)
		return bpf_map_lookup_elem(&nc_names_32, key);
	if (len <= 64)
		return bpf_map_lookup_elem(&nc_names_64, key);
	if (len <= 128)
		return bpf_map_lookup_elem(&nc_names_128, key);
	return bpf_map_lookup_elem(&nc_names_256, key);
}

/* One entry, key 0: the program's settings. */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct nc_config);
} nc_config SEC(".maps");

/*
 * Verdict counters, one entry (key 0). Per-CPU: XDP runs in softirq context and one CPU never runs
 * two instances at once, so plain increments are safe and no atomics are needed.
 */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct nc_stats);
} nc_stats SEC(".maps");



#endif /* NC_MAPS_H */
