/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * The maps of the XDP program. Layouts and names come from the shared ABI header; the control
 * plane fills nc_names, nc_slots and nc_config and reads nc_stats.
 */
#ifndef NC_MAPS_H
#define NC_MAPS_H

#include "compiler.h"
#include "nearcast_abi.h"

/*
 * The names table (see nearcast_abi.h): the arena of records, two generations of slots pointing
 * at them, and where each negative answer is. ARRAY maps, so the verifier inlines their lookups;
 * the arena and the slots are sized by the loader. All mmapable: the control plane writes them
 * in place, no copy of a page.
 */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(map_flags, BPF_F_MMAPABLE);
	__uint(max_entries, NC_ARENA_PAGES);
	__type(key, __u32);
	__type(value, struct nc_arena_page);
} nc_names SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(map_flags, BPF_F_MMAPABLE);
	__uint(max_entries, 4 * NC_NAMES_CAPACITY);
	__type(key, __u32);
	__type(value, __u64);
} nc_slots SEC(".maps");

/* A negative answer's index (half a generation) -> its record's place in the arena (/ 8 + 1). */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(map_flags, BPF_F_MMAPABLE);
	__uint(max_entries, 2 * NC_NEGATIVES_MAX);
	__type(key, __u32);
	__type(value, __u64);
} nc_negatives SEC(".maps");

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

/*
 * What the answers went to: by zone, by the geo node put first (nearcast_abi.h, "What XDP's
 * answers went to"; by type, in nc_stats). Per-CPU, as nc_stats.
 */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, NC_NEGATIVES_MAX / NC_TALLY_BLOCK);
	__type(key, __u32);
	__type(value, struct nc_tally_block);
} nc_by_zone SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, NC_GEO_GENERATIONS * NC_NODES_MAX / NC_TALLY_BLOCK);
	__type(key, __u32);
	__type(value, struct nc_tally_block);
} nc_by_node SEC(".maps");

#endif /* NC_MAPS_H */
